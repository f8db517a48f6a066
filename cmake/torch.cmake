# torch.cmake: the TorchScript model backend switch. GRADSHARE_TORCH=auto|ON|OFF: auto builds
# lib/torch (libgradshare_torch.so) when find_package(Torch) finds libtorch (Debian's
# libtorch-dev, or a site's own with -DTorch_DIR=...). Sets GRADSHARE_WITH_TORCH.
set(GRADSHARE_WITH_TORCH OFF)
if(NOT GRADSHARE_TORCH STREQUAL "OFF")
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(GRADSHARE_WITH_TORCH ON)
  elseif(GRADSHARE_TORCH STREQUAL "ON")
    message(FATAL_ERROR "GRADSHARE_TORCH=ON but libtorch was not found: apt-get install "
                        "libtorch-dev, or pass -DTorch_DIR=<libtorch>/share/cmake/Torch")
  endif()
endif()
message(STATUS "gradshare: TorchScript models ${GRADSHARE_WITH_TORCH}")
