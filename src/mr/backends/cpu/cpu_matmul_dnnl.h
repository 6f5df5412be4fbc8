// bf16 matrix products on oneDNN (cpu_matmul_dnnl.cpp) for mixed precision
// (issue 14, i14-mpcore): bf16 A and B, f32 accumulation and f32 C, on AMX
// or AVX512-BF16 where the CPU has them. Used by cpu_mixed_precision.cpp when
// the build found oneDNN (MR_WITH_DNNL); the header names no oneDNN type.
#pragma once

#include <cstdint>
#include <memory>

#include "core/dtype.h"

namespace mr {

class DnnlMatmul;

struct DnnlMatmulDelete {
  void operator()(DnnlMatmul* p) const noexcept;
};
using DnnlMatmulPtr = std::unique_ptr<DnnlMatmul, DnnlMatmulDelete>;

// Whether oneDNN runs `t` products on this CPU's 16-bit units (bf16: AMX or
// AVX512-BF16; f16: never with oneDNN 2.x, whose CPU matmul has no f16).
bool dnnl_matmul_native(DType t);

// The primitives for every (trans_a, trans_b, beta in {0, 1}) of `t`, with
// runtime shapes and strides, and their scratchpad: made once, outside the
// steps (Backend::prepare_lowp), so that no step creates or allocates one.
DnnlMatmulPtr make_dnnl_matmul(DType t);

// gemm_lowp's contract (core/backend.h) for beta 0 or 1 and dense operands
// (lda, ldb, ldc the rows' natural lengths); runs on `threads` OpenMP threads
// of the calling thread. Returns false (nothing done) otherwise.
bool dnnl_matmul_run(DnnlMatmul& mm, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     float alpha, const void* a, int64_t lda, const void* b, int64_t ldb,
                     float beta, float* c, int64_t ldc, int threads);

}  // namespace mr
