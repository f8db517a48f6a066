// host_names.h: every rank's host name (or another short label), gathered at rank 0 of a
// communicator (for the job banner: which ranks share a node, which GPU each computes on), and
// each rank's host as a key every rank gets (a repair choosing a new master by node).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradshare::comm {

// Collective over `comm`: at rank 0 every rank's `mine` (by rank, each cut to 255 bytes), empty
// elsewhere.
std::vector<std::string> gather_labels(MPI_Comm comm, const std::string& mine);

// gather_labels of every rank's host name.
std::vector<std::string> gather_host_names(MPI_Comm comm);

// Collective over `comm`: every rank's host as a hash of its name (equal on ranks of one node),
// by rank, on every rank.
std::vector<std::uint64_t> allgather_host_keys(MPI_Comm comm);

// "node1 [0 4], node2 [1], node3 [2]": hosts in order of their lowest rank, with their ranks.
std::string describe_hosts(const std::vector<std::string>& host_of_rank);

}  // namespace gradshare::comm
