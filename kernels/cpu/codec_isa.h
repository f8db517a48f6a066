// codec_isa.h: the instruction sets the codec kernels come in (a portable scalar twin and an AVX2
// twin that produce bit-identical results) and the run-time choice between them.
#pragma once

namespace gradshare::kernels::cpu {

enum class Isa { kScalar, kAvx2 };

// True when this build has the twin and the CPU can run it.
bool isa_supported(Isa isa);
// The fastest supported twin (AVX2 when the CPU has it), detected once.
Isa best_isa();
const char* isa_name(Isa isa);

}  // namespace gradshare::kernels::cpu
