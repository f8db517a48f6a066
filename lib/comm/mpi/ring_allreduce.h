// ring_allreduce.h: an element-wise float sum over a communicator whose bits depend only on the
// members' values and their ranks, never on where the ranks run.
//
// Why not MPI_Allreduce: MPI leaves the order of a float reduction to the implementation, and
// Open MPI's picks it from the placement (coll/han first sums the ranks of each node, then the
// nodes). A worker replaced by a spare on another node changed that order, so a recovered
// parameter-averaging run ended a few ulps away from the undisturbed one across nodes (and bit
// for bit equal to it on one host).
//
// Protocol (p members, n elements cut into p chunks: chunk c = [n c / p, n (c + 1) / p)):
//   reduce-scatter, steps s = 0 .. p-2: member r sends its partial sum of chunk (r - s) mod p to
//     r + 1 and adds what it receives from r - 1 (chunk (r - s - 1) mod p) to its own. Chunk c
//     is thus summed in the order ((x_c + x_{c+1}) + x_{c+2}) + ... + x_{c-1} (indices mod p)
//     and is complete at member c - 1.
//   all-gather, steps s = 0 .. p-2: member r sends the complete chunk (r + 1 - s) mod p to r + 1
//     and receives the complete chunk (r - s) mod p from r - 1 in place.
// Each member sends and receives 2 (p - 1) / p of the vector, as a bandwidth-optimal ring does.
#pragma once

#include <mpi.h>

#include <span>
#include <vector>

namespace gradshare::comm {

// Collective over `comm`: `values` becomes the element-wise sum over every member, summed in the
// order above; `scratch` is a buffer the call may grow (kept between calls to avoid reallocating).
// MPI errors are thrown as comm::MpiError (comm/mpi_error.h).
void ring_allreduce_sum(MPI_Comm comm, std::span<float> values, std::vector<float>& scratch);

}  // namespace gradshare::comm
