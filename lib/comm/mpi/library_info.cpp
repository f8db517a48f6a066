#include "comm/mpi/library_info.h"

#include <mpi.h>

namespace gradshare::comm {

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<std::size_t>(length));
  const auto end = version.find_first_of(",\n");
  return end == std::string::npos ? version : version.substr(0, end);
}

bool built_with_ulfm() {
#ifdef GRADSHARE_HAVE_ULFM
  return true;
#else
  return false;
#endif
}

}  // namespace gradshare::comm
