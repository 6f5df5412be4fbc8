// gemm on the CPU: C[m,n] = alpha * op(A) * op(B) + beta * C, row-major.
// The output is split across the team (by row blocks of C when op(A) is
// transposed and C is at least as tall as wide, else by column blocks when n
// is wide enough, else by row blocks) and each member runs a single-threaded
// GEMM on its block, the one of the backend's kernel path (cpu_isa.h):
//   avx512: oneDNN's sgemm when the build found oneDNN (Debian's 2.6.3; its
//     JIT AVX-512 kernels ran the step's products 15-25% faster than Eigen 3.3
//     on an Intel Xeon Sapphire Rapids, and write C with beta == 0 instead of
//     zeroing it first as Eigen does), else Eigen (Debian's OpenBLAS 0.3.21
//     was measured at ~55-60% of Eigen's AVX-512 kernels and is not used),
//     and the narrow-product kernels of cpu_gemm_narrow.cpp;
//   avx2, portable: the blocked GEMM of cpu_gemm_blocked.h, whose arithmetic
//     does not depend on the block (oneDNN's AVX2 sgemm's did: a split or
//     another batch size changed the last bit, see cpu_gemm_blocked_kernel.h).
// Eigen is included in this file only (its compile flags are set for this
// file alone).
//
// Why transposed-A products split by rows: the backward dW = X^T dY (m = the
// layer's inputs, k = the batch) split by columns made every member pack all
// of X^T, and the two members' packed copies and the shared C rows fought
// over the cache: 2 threads ran no faster than 1 (131-134 against 133-137
// GFLOP/s). By rows, each member reads only its own columns of X and the
// small dY.
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_gemm_blocked.h"
#include "backends/cpu/cpu_gemm_narrow.h"
#include "build_config.h"
#include "core/error.h"

#if MR_WITH_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

namespace mr {

namespace {

// Below this many multiply-adds a product runs on the caller alone: the
// handoff (~1-3 us) costs more than the work (64x10x256 is ~3 us at 50 GFLOP/s).
constexpr int64_t kParallelMinMacs = 256 * 1024;
// Column blocks are multiples of 16 floats (one AVX-512 register; the packed
// panels of B then have no ragged edge inside a block).
constexpr int64_t kColumnGrain = 16;
constexpr int64_t kRowGrain = 8;
// Narrow outputs (n < kNarrowN) are computed in column-major tiles of
// kNarrowRows rows (see narrow_product). Eigen's arithmetic for a row depends
// on its place in the tile, so a split of such a product falls on tile
// boundaries: the result is then the same for any team size.
constexpr int64_t kNarrowN = 16;
constexpr int64_t kNarrowRows = 256;

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat, Eigen::Unaligned, Eigen::OuterStride<> >;
using MutMap = Eigen::Map<RowMat, Eigen::Unaligned, Eigen::OuterStride<> >;

template <typename A, typename B>
void eigen_product(const A& opa, const B& opb, float alpha, float beta, MutMap& cm) {
  // BLAS convention: beta == 0 never reads C (it may hold NaN or garbage).
  if (beta == 0.0f) {
    cm.noalias() = alpha * opa * opb;
  } else {
    if (beta != 1.0f) cm *= beta;
    cm.noalias() += alpha * opa * opb;
  }
}

// Narrow outputs (n < kNarrowN): Eigen computes a row-major C as C^T = B^T A^T,
// whose n-row left operand falls entirely in the scalar remainder path of its
// AVX-512 kernel (3.3 has no half packets there): 64x10x256 runs at ~9 GFLOP/s.
// Computing a column-major tile T = op(A) op(B) instead makes A the left
// operand (vectorised over m); T is then added into C. T lives on the stack.
using ColMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using ColMap = Eigen::Map<ColMat, Eigen::Aligned64>;

template <typename A, typename B>
void narrow_product(const A& opa, const B& opb, int64_t m, int64_t n, float alpha, float beta,
                    float* c, int64_t ldc) {
  alignas(64) float tile[kNarrowRows * kNarrowN];
  for (int64_t i0 = 0; i0 < m; i0 += kNarrowRows) {
    const int64_t mb = std::min(kNarrowRows, m - i0);
    ColMap t(tile, mb, n);
    t.noalias() = opa.middleRows(i0, mb) * opb;
    for (int64_t i = 0; i < mb; ++i) {
      float* ci = c + (i0 + i) * ldc;
      for (int64_t j = 0; j < n; ++j) {
        const float v = alpha * tile[j * mb + i];
        ci[j] = beta == 0.0f ? v : v + beta * ci[j];
      }
    }
  }
}

#if MR_WITH_DNNL
// oneDNN's sgemm on the calling thread alone: its OpenMP thread count is 1
// for the call (the team splits the work; letting oneDNN thread as well
// would oversubscribe the cores). Its per-element arithmetic does not depend
// on m or n (the tests check that a split product is bit-identical to the
// whole), so the result is the same for any team size.
void dnnl_block_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int before = omp_get_max_threads();
  if (before != 1) omp_set_num_threads(1);
  const dnnl_status_t st =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (before != 1) omp_set_num_threads(before);
  MR_CHECK(st == dnnl_success, internal, "oneDNN sgemm failed (status ", static_cast<int>(st),
           ") for m=", m, " n=", n, " k=", k);
}

// oneDNN picks its sgemm kernels per CPU, and some CPUs get another kernel
// for products of few rows: on an AMD EPYC Zen 5 (oneDNN 2.6.3) every NT
// product of 2..15 rows sums in another order than one of 16 or more, so a
// batch of 5 predicted other last bits than the same rows in a batch of 64.
// A product of m < kDnnlPadRows rows is therefore computed as one of more
// rows (dnnl_rows_gemm; the extra rows repeat the first): two for a single
// row (a one-row product is a matrix-vector product in oneDNN, summing in
// yet another order), or kDnnlPadRows. The first call probes each transpose
// pair once (at the backend's warm-up, not in a step) and picks the first
// of these that keeps every row's bits those of a taller product; where
// none does, that pair runs on the blocked kernels (bit-identical for any
// split, slower).
enum class DnnlRows : int { one_as_two, pad, blocked };
constexpr int64_t kDnnlPadRows = 16;

struct DnnlRowsPlan {
  DnnlRows pair[4];  // index: ta + 2 * tb
};

// op(A)'s m rows computed as a product of `rows` >= m rows (rows m.. repeat
// row 0), op(A) kept in its stored layout, so that oneDNN runs the kernel
// of that transpose pair and row count. The copies live in this thread's
// scratch, which grows to the largest size seen and is reused: steps after
// the first allocate nothing.
void dnnl_rows_gemm(bool ta, bool tb, int64_t m, int64_t rows, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                    int64_t ldc) {
  thread_local std::vector<float> scratch;
  const size_t need = static_cast<size_t>(rows * (k + n));
  if (scratch.size() < need) scratch.resize(need);
  float* ap = scratch.data();  // rows x k (k x rows when transposed)
  float* cp = ap + rows * k;   // rows x n
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t src = i < m ? i : 0;
    if (ta)
      for (int64_t p = 0; p < k; ++p) ap[p * rows + i] = a[p * lda + src];
    else
      std::copy(a + src * lda, a + src * lda + k, ap + i * k);
    if (beta != 0.0f) std::copy(c + src * ldc, c + src * ldc + n, cp + i * n);
  }
  dnnl_block_gemm(ta, tb, rows, n, k, alpha, ap, ta ? rows : k, b, ldb, beta, cp, n);
  for (int64_t i = 0; i < m; ++i) std::copy(cp + i * n, cp + (i + 1) * n, c + i * ldc);
}

// The product on oneDNN for a pair whose plan is not `blocked`.
void dnnl_plan_gemm(DnnlRows plan, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                    int64_t ldc) {
  if (m == 1 || (plan == DnnlRows::pad && m < kDnnlPadRows)) {
    const int64_t rows = plan == DnnlRows::pad ? kDnnlPadRows : 2;
    dnnl_rows_gemm(ta, tb, m, rows, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  dnnl_block_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

DnnlRowsPlan probe_dnnl_rows() {
  constexpr int64_t M = 40, N = 48, K = 80;
  std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919 % 1009) / 504.5 - 1.0);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 6271 % 997) / 498.5 - 1.0);
  std::vector<float> whole(static_cast<size_t>(M * N)), part(static_cast<size_t>(M * N));
  DnnlRowsPlan plan{};
  for (int tr = 0; tr < 4; ++tr) {
    const bool ta = tr & 1, tb = tr & 2;
    const int64_t lda = ta ? M : K, ldb = tb ? K : N;
    dnnl_block_gemm(ta, tb, M, N, K, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, whole.data(), N);
    auto keeps_rows = [&](DnnlRows candidate) {
      for (int64_t m = 1; m < M; ++m) {
        dnnl_plan_gemm(candidate, ta, tb, m, N, K, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                       part.data(), N);
        if (std::memcmp(part.data(), whole.data(), static_cast<size_t>(m * N) * sizeof(float)))
          return false;
      }
      return true;
    };
    plan.pair[tr] = keeps_rows(DnnlRows::one_as_two) ? DnnlRows::one_as_two
                    : keeps_rows(DnnlRows::pad)      ? DnnlRows::pad
                                                     : DnnlRows::blocked;
  }
  return plan;
}

const DnnlRowsPlan& dnnl_rows_plan() {
  static const DnnlRowsPlan plan = probe_dnnl_rows();  // immutable once made
  return plan;
}
#endif

// Floats of the stack copy a one-row product uses (32 KiB; above it, the
// heap: a batch of 1 through a layer of over ~4000 inputs and outputs).
constexpr int64_t kRowCopyFloats = 8192;

// The avx512 path's product of one block (oneDNN or Eigen).
void library_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#if MR_WITH_DNNL
  const DnnlRows plan = dnnl_rows_plan().pair[(ta ? 1 : 0) + (tb ? 2 : 0)];
  if (plan == DnnlRows::blocked)
    cpu::blocked_avx2::gemm(cpu::GemmCall{ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc});
  else
    dnnl_plan_gemm(plan, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return;
#endif
  if (m == 1) {
    // Eigen runs a one-row product as a matrix-vector product, which sums in
    // another order than its GEMM kernels: the row would differ in the last
    // bits from the same row inside a taller product (a batch of 1 against a
    // batch of 8, a team member's one-row block). It is computed as two
    // equal rows instead, the GEMM kernels' arithmetic.
    const int64_t need = 2 * (k + n);
    alignas(64) float stack[kRowCopyFloats];
    std::vector<float> heap;
    if (need > kRowCopyFloats) heap.resize(static_cast<size_t>(need));
    float* a2 = need > kRowCopyFloats ? heap.data() : stack;
    float* c2 = a2 + 2 * k;
    for (int64_t p = 0; p < k; ++p) a2[p] = a2[k + p] = ta ? a[p * lda] : a[p];
    if (beta != 0.0f)
      for (int64_t j = 0; j < n; ++j) c2[j] = c2[n + j] = c[j];
    library_gemm(false, tb, 2, n, k, alpha, a2, k, b, ldb, beta, c2, n);
    std::copy(c2, c2 + n, c);
    return;
  }
  // Stored shapes: A is m x k (k x m when transposed), B is k x n (n x k).
  ConstMap am(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstMap bm(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  if (n < kNarrowN) {
    if (!ta && !tb) narrow_product(am, bm, m, n, alpha, beta, c, ldc);
    if (!ta && tb) narrow_product(am, bm.transpose(), m, n, alpha, beta, c, ldc);
    if (ta && !tb) narrow_product(am.transpose(), bm, m, n, alpha, beta, c, ldc);
    if (ta && tb) narrow_product(am.transpose(), bm.transpose(), m, n, alpha, beta, c, ldc);
    return;
  }
  MutMap cm(c, m, n, Eigen::OuterStride<>(ldc));
  if (!ta && !tb) eigen_product(am, bm, alpha, beta, cm);
  if (!ta && tb) eigen_product(am, bm.transpose(), alpha, beta, cm);
  if (ta && !tb) eigen_product(am.transpose(), bm, alpha, beta, cm);
  if (ta && tb) eigen_product(am.transpose(), bm.transpose(), alpha, beta, cm);
}

// One block's product on `isa`'s kernels (m, n, k >= 1).
void block_gemm(CpuIsa isa, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  const cpu::GemmCall call{ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc};
  switch (isa) {
    case CpuIsa::avx512:
      library_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    case CpuIsa::avx2:
      cpu::blocked_avx2::gemm(call);
      return;
    case CpuIsa::portable:
      break;
  }
  cpu::blocked_portable::gemm(call);
}

// C = beta * C for k == 0 (no product term); beta == 0 writes zeros.
void scale_only(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) ci[j] = beta == 0.0f ? 0.0f : beta * ci[j];
  }
}

}  // namespace

// The narrow kernels transpose a narrow op(B) into their own layout in every
// call: forward x W (NN, n = units) packs W's columns, backward dz W^T (NT,
// k = units) transposes W's rows. From a copy of W^T made once, forward is
// NT (W^T's rows are the packed layout already) and backward NN (no copy).
// Measured on an Intel Xeon Sapphire Rapids, one thread, bench_gemm at the
// vignette's output layer: NT 64x10x256 147-191 against NN 154-177 GFLOP/s,
// NN 64x256x10 155-171 against NT 128-162.
bool CpuBackend::keeps_transposed_narrow_weights(int64_t units) const {
  return isa_ == CpuIsa::avx512 && units >= 1 && cpu::narrow_gemm_handles(false, true, 1, units, 1);
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc) {
  MR_CHECK(m >= 0 && n >= 0 && k >= 0, shape, "gemm sizes must be >= 0, got m=", m, " n=", n,
           " k=", k);
  if (m == 0 || n == 0) return;
  MR_CHECK(ldc >= n && lda >= std::max<int64_t>(1, trans_a ? m : k) &&
               ldb >= std::max<int64_t>(1, trans_b ? k : n),
           shape, "gemm leading dimensions too small: lda=", lda, " ldb=", ldb, " ldc=", ldc);
  if (k == 0) {
    cpu::for_range(team_, m, m, [&](int64_t, int64_t) { scale_only(m, n, beta, c, ldc); });
    return;
  }
  // One narrow dimension (n or k <= 16): the AVX-512 kernels of
  // cpu_gemm_narrow.cpp (i14-narrow).
  if (isa_ == CpuIsa::avx512 && cpu::narrow_gemm_handles(trans_a, trans_b, m, n, k)) {
    cpu::narrow_gemm(&team_, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int size = team_.size();
  const bool small = m * n * k < kParallelMinMacs || size == 1;
  if (small) {
    cpu::for_range(team_, 1, 1, [&](int64_t, int64_t) {
      block_gemm(isa_, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
    return;
  }
  // Transposed A and a tall C (dW = X^T dY): rows, so that no member packs
  // all of op(A) (see the top of the file).
  const bool rows_first = trans_a && m >= n && m >= kRowGrain * 2 * size;
  if (!rows_first && n >= kColumnGrain * 2 * size) {
    // Column blocks: each member packs its own slice of B and all of A.
    cpu::for_range(team_, n, kColumnGrain, [&](int64_t j0, int64_t j1) {
      const float* bj = trans_b ? b + j0 * ldb : b + j0;
      block_gemm(isa_, trans_a, trans_b, m, j1 - j0, k, alpha, a, lda, bj, ldb, beta, c + j0, ldc);
    });
  } else {
    const int64_t grain = n < kNarrowN ? kNarrowRows : kRowGrain;
    cpu::for_range(team_, m, grain, [&](int64_t i0, int64_t i1) {
      const float* ai = trans_a ? a + i0 : a + i0 * lda;
      block_gemm(isa_, trans_a, trans_b, i1 - i0, n, k, alpha, ai, lda, b, ldb, beta, c + i0 * ldc,
                 ldc);
    });
  }
}

namespace cpu {

void warm_up_gemm() {
#if MR_WITH_DNNL
  // One tiny product of each transpose pair and beta kind: oneDNN generates
  // its JIT kernels on first use (~30 ms in all on an Intel Xeon Sapphire
  // Rapids) and keeps them for the process, so later calls cost microseconds.
  alignas(64) float a[8 * 8] = {}, b[8 * 8] = {}, c[8 * 8] = {};
  for (int t = 0; t < 4; ++t)
    for (float beta : {0.0f, 1.0f})
      dnnl_block_gemm(t & 1, t & 2, 8, 8, 8, 1.0f, a, 8, b, 8, beta, c, 8);
  dnnl_rows_plan();  // the probe, here rather than in a step
#endif
}

void gemm_serial(CpuIsa isa, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                 float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k == 0) {
    scale_only(m, n, beta, c, ldc);
    return;
  }
  if (isa == CpuIsa::avx512 && narrow_gemm_handles(trans_a, trans_b, m, n, k)) {
    narrow_gemm(nullptr, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  block_gemm(isa, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace cpu

std::string cpu_gemm_description(CpuIsa isa) {
  if (isa != CpuIsa::avx512)
    return std::string("blocked GEMM, ") + cpu_isa_label(isa) + " (bit-identical for any split)";
#if MR_WITH_DNNL
  // The probe's plan (see dnnl_rows_plan), for the record of a benchmark.
  std::string padded, blocked;
  const char* pairs[4] = {"NN", "TN", "NT", "TT"};
  for (int tr = 0; tr < 4; ++tr) {
    const DnnlRows p = dnnl_rows_plan().pair[tr];
    if (p == DnnlRows::pad) padded += std::string(padded.empty() ? "" : ",") + pairs[tr];
    if (p == DnnlRows::blocked) blocked += std::string(blocked.empty() ? "" : ",") + pairs[tr];
  }
  std::string out = std::string("oneDNN ") + MR_DNNL_VERSION_STR + " sgemm (AVX-512";
  if (!padded.empty()) out += "; " + padded + " under 16 rows padded to 16";
  if (!blocked.empty()) out += "; " + blocked + " on the blocked AVX2 kernels";
  return out + ")";
#else
  return "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
         std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) +
         " (AVX-512)";
#endif
}

}  // namespace mr
