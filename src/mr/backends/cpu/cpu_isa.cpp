// Compiled without the ISA flags of the kernels, so that it runs on any x86-64
// CPU and can refuse cleanly where the kernels would die of SIGILL.
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

void require_cpu_isa() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#if defined(MR_KERNELS_AVX512)
  if (!__builtin_cpu_supports("avx512f"))
    fail(ErrorKind::device,
         "this build of mirrored uses AVX-512 CPU kernels but the CPU lacks AVX-512; "
         "rebuild with MR_NATIVE off (CMake) or on this machine");
#endif
#if defined(MR_KERNELS_AVX2)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    fail(ErrorKind::device,
         "this build of mirrored uses AVX2/FMA CPU kernels but the CPU lacks them; "
         "rebuild with MR_NATIVE off (CMake) or on this machine");
#endif
#endif
}

}  // namespace mr
