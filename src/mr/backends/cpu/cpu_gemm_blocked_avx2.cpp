// The blocked GEMM (cpu_gemm_blocked_kernel.h) for AVX2 and FMA. The build
// compiles this file with -mavx2 -mfma and nothing wider, on every x86-64
// machine: the avx2 path runs wherever the CPU has those units (cpu_isa.cpp
// checks), also in a build made for AVX-512 or for the baseline.
#if defined(__AVX2__) && defined(__FMA__)
#define MR_BLOCKED_NS blocked_avx2
#define MR_BLOCKED_AVX2 1
#include "backends/cpu/cpu_gemm_blocked_kernel.h"

namespace mr::cpu::blocked_avx2 {
bool compiled() { return true; }
}  // namespace mr::cpu::blocked_avx2

#else
#include "backends/cpu/cpu_gemm_blocked.h"
#include "core/error.h"

namespace mr::cpu::blocked_avx2 {
bool compiled() { return false; }
void gemm(const GemmCall&) {
  fail(ErrorKind::internal,
       "the AVX2 GEMM kernel is not in this build (cpu_isa.cpp should not "
       "have offered it)");
}
}  // namespace mr::cpu::blocked_avx2
#endif
