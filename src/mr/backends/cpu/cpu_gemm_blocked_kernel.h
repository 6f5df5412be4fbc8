// The blocked GEMM of cpu_gemm_blocked.h, written once for two instruction
// sets: included (no include guard) by cpu_gemm_blocked_avx2.cpp, compiled with
// -mavx2 -mfma, and by cpu_gemm_blocked_portable.cpp, compiled for the
// baseline with -ffp-contract=off; each defines MR_BLOCKED_NS (the namespace
// that keeps the two copies apart) and MR_BLOCKED_AVX2 (1 or 0) first.
//
// Why hand-written: oneDNN's sgemm on AVX2 (2.6.3, the Debian build) and
// Eigen choose their k-blocking and their edge kernels from m and n, so a row
// of C came out different in the last bit when the team split the product or
// when the batch had another size (seen on an AMD EPYC Zen 3: "differs at
// element 10494"), which breaks "the same numbers whatever the split". Here
// nothing of an element's arithmetic depends on where it is (cpu_gemm_blocked.h).
//
// The kernel: register tiles of kMr rows x 2 vectors of C (6 x 16 with AVX2:
// 12 accumulators, 2 loads of B and 6 broadcasts of A per k step), k blocks
// of kBlockedKc. A is read where it lies (row-major or transposed: a tile's
// kMr values of one k step are kMr broadcasts, no packing); B too when it is
// not transposed and the product has few rows (a row of op(B) is contiguous);
// otherwise B is copied, one kBlockedKc x kNc panel at a time, into a stack
// buffer of contiguous 2-vector column strips (transposed where it must be).
// Loop order: k block, column panel (the copy), kMc rows of A (kept in L2), a
// column strip (kept in L1 when copied), the tiles down the rows.
//
// Measured on an AMD EPYC Zen 3 (2 cores), build-cpu/bench_gemm 2 0.3, one
// thread, GFLOP/s against oneDNN 2.6.3's AVX2 sgemm in the same run, the MLP
// step's products: X W1 (NN 64x256x784) 92.7 / 93.6, H W2 95.1 / 96.6, H W3
// (NT 64x10x256) 54.8 / 47.2, dW1 (TN 784x256x64) 82.0 / 87.8, dW2 77.9 /
// 75.3, dW3 41.3 / 48.3, dX3 (NN 64x256x10) 48.9 / 57.3, dX2 (NT 64x256x256)
// 91.0 / 93.9; 2048^3 83.8 / 86.6.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu/cpu_gemm_blocked.h"

#if MR_BLOCKED_AVX2
#include <immintrin.h>
#endif

namespace mr::cpu::MR_BLOCKED_NS {

namespace {

#if MR_BLOCKED_AVX2
using vec = __m256;
constexpr int kW = 8;   // floats per vector
constexpr int kMr = 6;  // rows per register tile
inline vec vzero() { return _mm256_setzero_ps(); }
inline vec vset(float x) { return _mm256_set1_ps(x); }
inline vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline vec vbroadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline vec vmadd(vec a, vec b, vec c) {
  return _mm256_fmadd_ps(a, b, c);
}  // a * b + c, one rounding
inline vec vmul(vec a, vec b) { return _mm256_mul_ps(a, b); }
inline vec vadd(vec a, vec b) { return _mm256_add_ps(a, b); }
inline void vstore(float* p, vec v) { _mm256_storeu_ps(p, v); }
// The first n lanes (masked loads do not fault on the others).
inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline vec vload_n(const float* p, int n) { return _mm256_maskload_ps(p, first_lanes(n)); }
inline void vstore_n(float* p, vec v, int n) { _mm256_maskstore_ps(p, first_lanes(n), v); }
#else
typedef float vec __attribute__((vector_size(16)));
constexpr int kW = 4;
constexpr int kMr = 4;
inline vec vzero() { return vec{0.0f, 0.0f, 0.0f, 0.0f}; }
inline vec vset(float x) { return vec{x, x, x, x}; }
inline vec vload(const float* p) {
  vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline vec vbroadcast(const float* p) { return vset(*p); }
// Two roundings: the file is compiled with -ffp-contract=off.
inline vec vmadd(vec a, vec b, vec c) { return a * b + c; }
inline vec vmul(vec a, vec b) { return a * b; }
inline vec vadd(vec a, vec b) { return a + b; }
inline void vstore(float* p, vec v) { std::memcpy(p, &v, sizeof v); }
inline vec vload_n(const float* p, int n) {
  vec v = vzero();
  for (int i = 0; i < n; ++i) v[i] = p[i];
  return v;
}
inline void vstore_n(float* p, vec v, int n) {
  for (int i = 0; i < n; ++i) p[i] = v[i];
}
#endif

// The register tiles' loops have compile-time trip counts; unrolled early,
// their accumulator arrays live in registers (GCC 12 otherwise keeps them on
// the stack and stores them every k step, at a third of the speed).
#define MR_UNROLL _Pragma("GCC unroll 16")

constexpr int kNv = 2;               // vectors per tile row
constexpr int kNr = kNv * kW;        // columns per tile
constexpr int64_t kMc = 120;         // rows of A per block: a multiple of 4 and 6
constexpr int64_t kNc = 64;          // columns per panel (of the transposed-B copy)
constexpr int64_t kKc = kBlockedKc;  // the fixed k block

// C[0..R, 0..nb) of the tile at c, over one k block of kk: A's element (r, p)
// is a[r * lda + p] (kTransA false) or a[p * lda + r]; op(B)'s row p is
// b + p * ldb (nb <= kNr valid columns). `first`: the block at k offset 0.
template <int R, bool kTransA>
void tile(int64_t kk, const float* a, int64_t lda, const float* b, int64_t ldb, int nb, float* c,
          int64_t ldc, float alpha, float beta, bool first) {
  vec acc[R][kNv];
  MR_UNROLL
  for (int r = 0; r < R; ++r) {
    acc[r][0] = vzero();
    acc[r][1] = vzero();
  }
  if (nb == kNr) {
    // Four k steps per loop trip (64x256x784 on an AMD EPYC Zen 3, one
    // thread: 88 -> 93 GFLOP/s, oneDNN's sgemm 94).
    _Pragma("GCC unroll 4") for (int64_t p = 0; p < kk; ++p) {
      const float* bp = b + p * ldb;
      const vec b0 = vload(bp), b1 = vload(bp + kW);
      MR_UNROLL
      for (int r = 0; r < R; ++r) {
        const vec ar = vbroadcast(kTransA ? a + p * lda + r : a + r * lda + p);
        acc[r][0] = vmadd(ar, b0, acc[r][0]);
        acc[r][1] = vmadd(ar, b1, acc[r][1]);
      }
    }
  } else {
    // The same operations on the valid lanes; the others load zeros and are
    // not stored.
    const int n0 = std::min(nb, kW), n1 = nb - n0;
    for (int64_t p = 0; p < kk; ++p) {
      const float* bp = b + p * ldb;
      const vec b0 = vload_n(bp, n0), b1 = n1 > 0 ? vload_n(bp + kW, n1) : vzero();
      MR_UNROLL
      for (int r = 0; r < R; ++r) {
        const vec ar = vbroadcast(kTransA ? a + p * lda + r : a + r * lda + p);
        acc[r][0] = vmadd(ar, b0, acc[r][0]);
        acc[r][1] = vmadd(ar, b1, acc[r][1]);
      }
    }
  }
  const vec va = vset(alpha), vb = vset(beta);
  MR_UNROLL
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    MR_UNROLL
    for (int v = 0; v < kNv; ++v) {
      const int n = std::min(kW, nb - v * kW);
      if (n <= 0) break;
      float* cp = cr + v * kW;
      vec x = acc[r][v];
      if (alpha != 1.0f) x = vmul(x, va);
      if (!first) {
        x = vadd(n == kW ? vload(cp) : vload_n(cp, n), x);
      } else if (beta != 0.0f) {
        x = vmadd(vb, n == kW ? vload(cp) : vload_n(cp, n), x);
      }
      if (n == kW)
        vstore(cp, x);
      else
        vstore_n(cp, x, n);
    }
  }
}

// The tiles of rows [0, m) of one column strip: full tiles, then one of the
// remaining m % kMr rows.
template <bool kTransA, int R = kMr - 1>
void last_tile(int64_t rows, int64_t kk, const float* a, int64_t lda, const float* b, int64_t ldb,
               int nb, float* c, int64_t ldc, float alpha, float beta, bool first) {
  if constexpr (R >= 1) {
    if (rows == R) {
      tile<R, kTransA>(kk, a, lda, b, ldb, nb, c, ldc, alpha, beta, first);
      return;
    }
    last_tile<kTransA, R - 1>(rows, kk, a, lda, b, ldb, nb, c, ldc, alpha, beta, first);
  }
}

template <bool kTransA>
void strip(int64_t m, int64_t kk, const float* a, int64_t lda, const float* b, int64_t ldb, int nb,
           float* c, int64_t ldc, float alpha, float beta, bool first) {
  int64_t r = 0;
  for (; r + kMr <= m; r += kMr)
    tile<kMr, kTransA>(kk, kTransA ? a + r : a + r * lda, lda, b, ldb, nb, c + r * ldc, ldc, alpha,
                       beta, first);
  if (r < m)
    last_tile<kTransA>(m - r, kk, kTransA ? a + r : a + r * lda, lda, b, ldb, nb, c + r * ldc, ldc,
                       alpha, beta, first);
}

// Whether a B that is not transposed is copied (pack_rows) rather than read
// where it lies: when its copy serves more than two row blocks of A, so that
// the copy pays for itself. Measured on an AMD EPYC Zen 3, one thread,
// GFLOP/s read in place / copied: 64x256x784 88 / 63 (the copy costs as much
// as a third of the product), 2048^3 61 / 82 (rows of B 8 KB apart, each strip
// spread over many pages).
inline bool copies_b(const GemmCall& g) { return g.m > 2 * kMc; }

// The copy of op(B)'s block: column strips of kNr, each kKc rows of kNr
// floats, so that a strip is contiguous (a tile streams it from L1; rows of
// B in place lie a row of B apart, and 256 rows 1 KB apart fall into 4 of
// L1's 64 sets).
inline int64_t packed_at(int64_t p, int64_t j) {
  return (j / kNr) * (kKc * kNr) + p * kNr + j % kNr;
}

// The transposed B's block (cols rows of B, each contiguous over p) into the
// copy: op(B)[p, j] = src[j * lds + p] for j < cols, p < rows.
void pack_transposed(const float* src, int64_t lds, int64_t cols, int64_t rows, float* dst) {
  int64_t j = 0;
#if MR_BLOCKED_AVX2
  // 8 x 8 blocks transposed in registers (8 columns of op(B) stay in one
  // strip: kNr is a multiple of 8).
  for (; j + 8 <= cols; j += 8) {
    int64_t p = 0;
    for (; p + 8 <= rows; p += 8) {
      __m256 r[8], t[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (j + i) * lds + p);
      for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
      }
      for (int i = 0; i < 2; ++i) {
        r[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      // r[q] (q < 4) holds, in 128-bit half h, column p + q + 4h of rows
      // j..j+3; r[4 + q] the same of rows j+4..j+7.
      for (int q = 0; q < 4; ++q) {
        _mm256_storeu_ps(dst + packed_at(p + q, j), _mm256_permute2f128_ps(r[q], r[4 + q], 0x20));
        _mm256_storeu_ps(dst + packed_at(p + q + 4, j),
                         _mm256_permute2f128_ps(r[q], r[4 + q], 0x31));
      }
    }
    for (; p < rows; ++p)
      for (int i = 0; i < 8; ++i) dst[packed_at(p, j + i)] = src[(j + i) * lds + p];
  }
#endif
  for (; j < cols; ++j)
    for (int64_t p = 0; p < rows; ++p) dst[packed_at(p, j)] = src[j * lds + p];
}

// B's block (rows of B contiguous over j) into the copy: whole strips by
// vector loads and stores (a memcpy of 64 bytes became `rep movsq`, 3% of a
// 784x256x64 product's time), a partial strip's row by masked ones.
void pack_rows(const float* src, int64_t lds, int64_t cols, int64_t rows, float* dst) {
  for (int64_t p = 0; p < rows; ++p) {
    const float* sp = src + p * lds;
    int64_t j = 0;
    for (; j + kNr <= cols; j += kNr) {
      float* d = dst + packed_at(p, j);
      vstore(d, vload(sp + j));
      vstore(d + kW, vload(sp + j + kW));
    }
    if (j < cols) {
      float* d = dst + packed_at(p, j);
      const int n = static_cast<int>(cols - j), n0 = std::min(n, kW);
      vstore_n(d, vload_n(sp + j, n0), n0);
      if (n > kW) vstore_n(d + kW, vload_n(sp + j + kW, n - kW), n - kW);
    }
  }
}

template <bool kTransA>
void gemm_blocks(const GemmCall& g) {
  alignas(64) float panel[kKc * kNc];  // 64 KB: the copy of op(B)'s block
  const bool pack_b = copies_b(g);
  for (int64_t p0 = 0; p0 < g.k; p0 += kKc) {
    const int64_t kk = std::min(kKc, g.k - p0);
    const bool first = p0 == 0;
    for (int64_t j0 = 0; j0 < g.n; j0 += kNc) {
      const int64_t nj = std::min(kNc, g.n - j0);
      if (g.trans_b)
        pack_transposed(g.b + j0 * g.ldb + p0, g.ldb, nj, kk, panel);
      else if (pack_b)
        pack_rows(g.b + p0 * g.ldb + j0, g.ldb, nj, kk, panel);
      const bool packed = g.trans_b || pack_b;
      for (int64_t i0 = 0; i0 < g.m; i0 += kMc) {
        const int64_t mi = std::min(kMc, g.m - i0);
        const float* ai = kTransA ? g.a + p0 * g.lda + i0 : g.a + i0 * g.lda + p0;
        for (int64_t jj = 0; jj < nj; jj += kNr) {
          const int nb = static_cast<int>(std::min<int64_t>(kNr, nj - jj));
          const float* bs = packed ? panel + packed_at(0, jj) : g.b + p0 * g.ldb + j0 + jj;
          strip<kTransA>(mi, kk, ai, g.lda, bs, packed ? kNr : g.ldb, nb,
                         g.c + i0 * g.ldc + j0 + jj, g.ldc, g.alpha, g.beta, first);
        }
      }
    }
  }
}

}  // namespace

void gemm(const GemmCall& g) {
  if (g.trans_a)
    gemm_blocks<true>(g);
  else
    gemm_blocks<false>(g);
}

#undef MR_UNROLL

}  // namespace mr::cpu::MR_BLOCKED_NS
