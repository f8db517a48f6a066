#!/usr/bin/env bash
# stage_for_device.sh: copies the gpu test binaries, codec_cuda_bench and the non-CUDA shared
# libraries they need (OpenBLAS, gfortran) from a CUDA build into one folder, so a lent GPU
# machine, which has the CUDA libraries but not this project's dependencies, can run them:
#   bench/codec_cuda/stage_for_device.sh build-cuda .gpu     # then carry .gpu with the run
#   (on the GPU) LD_LIBRARY_PATH=.gpu:/usr/local/cuda/lib64 .gpu/gpu_codec_test
set -euo pipefail
build=${1:?usage: stage_for_device.sh BUILD_DIR OUT_DIR}
out=${2:?usage: stage_for_device.sh BUILD_DIR OUT_DIR}
mkdir -p "$out"
binaries=("$build/tests/gpu/gpu_codec_test" "$build/tests/gpu/gpu_compute_test"
          "$build/bench/codec_cuda_bench")
for binary in "${binaries[@]}"; do
  cp "$binary" "$out/"
  # Every library outside the C runtime and CUDA (the GPU machine brings those).
  ldd "$binary" | awk '$3 ~ /^\// {print $3}' |
    { grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so|/cuda' || true; } |
    xargs -r -I{} cp -L {} "$out/"
done
ls -l "$out"
