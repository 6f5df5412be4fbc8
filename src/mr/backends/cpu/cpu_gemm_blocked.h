// A blocked single-precision GEMM whose every element of C is computed by the
// same sequence of operations wherever it falls: in which register tile, in
// which block of a team split, in a product of any m and n. It is the GEMM of
// the avx2 and portable kernel paths (cpu_isa.h); the team split is the
// caller's (CpuBackend::gemm). See cpu_gemm_blocked_kernel.h for the kernel
// and the measured figures.
//
// The arithmetic of C[i, j]: k is cut into blocks of kBlockedKc at fixed
// offsets (0, kBlockedKc, 2 kBlockedKc, ...). Over each block one accumulator
// starts at zero and takes one fused (avx2) or unfused (portable)
// multiply-add per p, in increasing p; then v = alpha * acc (skipped when
// alpha == 1); the first block stores v + beta * C (v alone when beta == 0:
// C is not read), each later block C + v. Nothing of this depends on m, n,
// the tile or the split, so results are bit-identical for any of them.
#pragma once

#include <cstdint>

namespace mr::cpu {

// C[m,n] = alpha * op(A) op(B) + beta * C, row-major (the backend's gemm
// contract), m, n, k >= 1, on the calling thread.
struct GemmCall {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float beta;
  float* c;
  int64_t ldc;
};

// The fixed k-block of the arithmetic above.
constexpr int64_t kBlockedKc = 256;

namespace blocked_avx2 {
// Whether this build compiled the kernel with AVX2 and FMA (x86-64).
bool compiled();
void gemm(const GemmCall& g);
}  // namespace blocked_avx2

namespace blocked_portable {
void gemm(const GemmCall& g);
}  // namespace blocked_portable

}  // namespace mr::cpu
