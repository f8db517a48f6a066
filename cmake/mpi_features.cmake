# Detects what the chosen MPI library offers and exposes it as target gs_mpi.
#   GRADSHARE_HAVE_ULFM: mpi-ext.h defines OMPI_HAVE_MPI_EXT_FTMPI (Open MPI 5 built with ULFM).
#   Checking MPIX_ERR_PROC_FAILED alone is not enough: MPICH 4.0.2 defines it and then aborts.
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
check_c_source_compiles("
#include <mpi.h>
#include <mpi-ext.h>
#if !defined(OMPI_HAVE_MPI_EXT_FTMPI) || !OMPI_HAVE_MPI_EXT_FTMPI
#error no ULFM
#endif
int main(void) { return 0; }" GRADSHARE_HAVE_ULFM)
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_LIBRARIES)

get_filename_component(_gs_mpi_bin_dir "${MPI_C_COMPILER}" DIRECTORY)
find_program(GRADSHARE_MPIEXEC NAMES mpirun mpiexec HINTS ${_gs_mpi_bin_dir} ${MPI_HOME}/bin
             NO_DEFAULT_PATH)
if(NOT GRADSHARE_MPIEXEC)
  set(GRADSHARE_MPIEXEC ${MPIEXEC_EXECUTABLE})
endif()
message(STATUS "gradshare: MPI launcher ${GRADSHARE_MPIEXEC}, ULFM: ${GRADSHARE_HAVE_ULFM}")

add_library(gs_mpi INTERFACE)
target_link_libraries(gs_mpi INTERFACE MPI::MPI_C)
if(GRADSHARE_HAVE_ULFM)
  target_compile_definitions(gs_mpi INTERFACE GRADSHARE_HAVE_ULFM=1)
endif()
