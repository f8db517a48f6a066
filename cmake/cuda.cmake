# cuda.cmake: the CUDA backend switch. GRADSHARE_CUDA=auto|ON|OFF: auto builds the CUDA backend
# when nvcc is found. Sets GRADSHARE_WITH_CUDA; when ON, the CUDA language is enabled for
# H100/H200 (sm_90 machine code) plus compute_80 PTX that the driver compiles for any newer GPU.
# Pass -DCMAKE_CUDA_ARCHITECTURES=90 to compile for one architecture only (faster builds).
set(GRADSHARE_WITH_CUDA OFF)
if(NOT GRADSHARE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "90-real;80-virtual" CACHE STRING "CUDA architectures")
    endif()
    # One CUDA runtime per process: the shared one, which the C++ targets link as well.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # C++17 for the .cu files: CMake 3.25 knows no C++20 flag for nvcc.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    find_package(CUDAToolkit REQUIRED)
    set(GRADSHARE_WITH_CUDA ON)
  elseif(GRADSHARE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GRADSHARE_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "gradshare: CUDA backend ${GRADSHARE_WITH_CUDA}")
