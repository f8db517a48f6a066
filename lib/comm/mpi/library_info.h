// library_info.h: what the MPI library this binary was built with is and offers, for the banner
// and `gradshare --version`.
#pragma once

#include <string>

namespace gradshare::comm {

// First line of MPI_Get_library_version (callable before MPI_Init).
std::string mpi_library_version();
// Whether the MPI library was built with ULFM (Open MPI 5's fault-tolerance extension).
bool built_with_ulfm();

}  // namespace gradshare::comm
