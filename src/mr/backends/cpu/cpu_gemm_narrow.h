// Hand-written AVX-512 kernels for the products with one narrow dimension
// (n <= 16 or k <= 16), such as a Dense layer's 10-unit output layer: see
// cpu_gemm_narrow.cpp for why and for the measured figures.
#pragma once

#include <cstdint>

#include "core/thread_team.h"

namespace mr::cpu {

// Whether narrow_gemm handles this product: this build has the AVX-512
// kernels (the CPU is checked at load by require_cpu_isa) and the shape is
// one of
//   n <= 16 and A not transposed (NN, NT): dot products along k (n <= 10:
//                                          8 deep in the lanes of column pairs);
//   n <= 16, A transposed, B not (TN):     broadcast FMAs along m;
//   k <= 16 (and n > 16), A not transposed: broadcast FMAs along n.
// Everything else runs on the general GEMM (cpu_gemm.cpp).
bool narrow_gemm_handles(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k);

// C[m,n] = alpha * op(A) op(B) + beta * C (row-major, the backend's gemm
// contract; beta == 0 never reads C) for a shape narrow_gemm_handles accepts,
// split over `team` when the product is large enough to repay the hand-off
// (team == nullptr: on the calling thread alone).
// Each element of C is computed by the same sequence of operations whatever
// the split and its place in a register tile, so the result is bit-identical
// for any team size.
void narrow_gemm(ThreadTeam* team, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                 float* c, int64_t ldc);

// dst[j * ldd + p] = src[p * lds + j] for p < rows, j < cols, where
// 1 <= cols <= 16: a tall block with a narrow row (a Dense kernel of <= 16
// units) transposed in registers. Only where narrow_gemm_handles can be true
// (the AVX-512 build); callers check narrow_gemm_handles first.
void narrow_transpose(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst,
                      int64_t ldd);

}  // namespace mr::cpu
