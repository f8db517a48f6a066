// stream.h: the stream each CUDA backend object (CudaCompute, CudaCodecKernels, DeviceDecoder)
// enqueues its work on.
#pragma once

#include <cuda_runtime_api.h>

namespace gradshare::kernels::cuda {

// A new blocking stream (cudaStreamDefault, not cudaStreamNonBlocking): its work starts only
// after the work the caller put on the legacy default stream before it, such as a cudaMemcpy of
// the inputs. A cudaMemcpy from pageable host memory may return before its DMA has landed, so a
// non-blocking stream can read inputs that are not there yet: on an H100 the clip kernel read a
// stale residual this way (gpu_codec_test, n = 100,003 in device memory, 2026-11-26).
cudaStream_t create_stream();

}  // namespace gradshare::kernels::cuda
