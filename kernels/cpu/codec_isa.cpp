// codec_isa.cpp: run-time detection of the codec kernels' instruction set.
#include "kernels/cpu/codec_isa.h"

namespace gradshare::kernels::cpu {

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
#if defined(__x86_64__) || defined(__i386__)
      return __builtin_cpu_supports("avx2");
#else
      return false;
#endif
  }
  return false;
}

Isa best_isa() {
  static const Isa best = isa_supported(Isa::kAvx2) ? Isa::kAvx2 : Isa::kScalar;
  return best;
}

const char* isa_name(Isa isa) { return isa == Isa::kAvx2 ? "avx2" : "scalar"; }

}  // namespace gradshare::kernels::cpu
