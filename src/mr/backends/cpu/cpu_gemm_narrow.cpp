// AVX-512 kernels for products with one narrow dimension (n <= 16 or
// k <= 16): the vignette's output layer (784-256-256-10 at batch 64) issues
// H W3 (NN 64x10x256), dW3 = H^T dY (TN 256x10x64) and dX3 = dY W3^T
// (NT 64x256x10).
//
// Why hand-written: general GEMM kernels tile C in blocks of 16+ columns and
// k in long panels, so a 10-wide C or a 10-deep k leaves most vector lanes
// idle or most of the time in packing. Measured on an Intel Xeon Sapphire
// Rapids (2 cores; FMA-loop ceiling ~230 GFLOP/s on one thread), 64-byte
// aligned operands, one thread, GFLOP/s for H W3 / dW3 / dX3:
//   oneDNN 2.6.3 dnnl_sgemm (the path before):   72-76 / 70 / 121-130
//   oneDNN 2.6.3 f32 matmul primitive, cached
//   (brgemm JIT, "brg:avx512_core"):              88-90 / 52 / 115-118
//   the 4x4 dot kernel, k-loop at run time:     106-111 / 138-147 / 111-124
//   these kernels (column pairs for n <= 10,
//   k-loop unrolled for k <= 16):              140-149 / 137-148 / 126-135
// (the last two rows: bench_gemm and interleaved A/B runs of the kernel
// alone, best of 30 rounds; the machine's figures drift by ~5% between
// runs). dX3 as NT stayed at 55-62% of the ceiling: the transpose of W3's
// 256x10 block in every call puts ~1000 shuffles on the port the second FMA
// pipe uses. Dense now keeps W3^T for the step where the narrow kernels run
// (Backend::keeps_transposed_narrow_weights), so the step issues H W3 as NT
// and dX3 as NN (64-69%), from one 0.28 us copy (narrow_transpose).
// The kernels, each keeping all 16 lanes busy:
//   n <= 10, op(A) = A (NN, NT): column pairs: lanes 8c+q of one accumulator
//     hold row i's partial sums over p = q (mod 8) for column 2g+c; A[i, p ..
//     p+7] is broadcast to both halves by one load and feeds the 5 pairs'
//     FMAs (4 rows x 5 pairs of accumulators), B is packed in that layout
//     per k-chunk (NN by register transposes), and a row's pairs fold into
//     its n outputs with one add tree and a permute. It replaced the dot
//     kernel at these widths: its 16-lane fold of every 4x4 tile and its
//     padding of n = 10 to 12 took the shuffle port from the FMAs;
//   11 <= n <= 16, op(A) = A: each C element is a dot product along k of
//     a row of A and a row of op(B)^T (B itself for NT; for NN a transposed
//     copy of a k-chunk of B on the stack, made by register shuffles), 4x4
//     elements per register tile, the 16 accumulators folded into one vector
//     by an add tree (faster than pairs with 3-row tiles at n = 12 .. 16);
//   n <= 16, TN: C^T = B^T A, i.e. each row of A (k of them) broadcast-FMA'd
//     into 32-row strips of C^T held in registers, then gathered into C;
//   k <= 16, op(A) = A: each row of C is sum_p A[i,p] op(B)[p,:], broadcast
//     FMAs over 64-column strips, the k loop unrolled at compile time (NT:
//     op(B) transposed into a stack buffer by register shuffles).
// Every element's arithmetic (the order of its FMAs and of the fold) does not
// depend on the tile it falls in or on the split over the team, so results
// are bit-identical for any thread count.
#include "backends/cpu/cpu_gemm_narrow.h"

#include <algorithm>

#include "backends/cpu/cpu_backend.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace mr::cpu {

#if defined(__AVX512F__)

namespace {

// The register tiles' loops have compile-time trip counts; unrolled early,
// their accumulator arrays live in registers (GCC 12 otherwise kept them on the
// stack and stored them every iteration: dW3 ran at 70 against 143 GFLOP/s).
#define MR_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kNarrow = 16;

inline __mmask16 tail_mask(int64_t r) {
  return r >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << r) - 1u);
}

// Products below this many multiply-adds run on the caller alone: the team
// hand-off (an empty 2-way for_range: 1.0 us on an Intel Xeon Sapphire
// Rapids, 2 cores) leaves no gain on the output layer's 164k-MAC products
// (2.5-3.5 us on one thread): measured, splitting them ran no faster.
constexpr int64_t kSplitMinMacs = 512 * 1024;
// k-chunk of the transposed B copy (NN dot kernel): 16 x 512 floats = 32 KB.
constexpr int64_t kDotChunk = 512;
// Column chunk of the transposed B copy (NT broadcast kernel): 16 x 512.
constexpr int64_t kColChunk = 512;
// Row stride of both copies: a chunk plus one vector, so that their rows do
// not sit 4 KB-aliased on the same cache sets as one another and as C.
constexpr int64_t kCopyStride = 512 + 16;
// dst[j * ldd + p] = src[p * lds + j] for p < rows, j < cols <= 16: a tall
// block with at most 16 columns transposed 16 rows at a time in registers
// (16 masked row loads, four levels of in-lane and 128-bit-block shuffles,
// one store per column). It replaced a copy by gathers (one 16-lane gather
// per row of dst), which run at about one element per cycle on an Intel Xeon
// Sapphire Rapids: measured there, one thread, interleaved A/B runs, H W3
// (NN 64x10x256) 113-115 -> 116-117 GFLOP/s, dX3 (NT 64x256x10) 124-128 ->
// 126-130, NN 64x16x256 130 -> 143.
// transpose16 does the shuffles and hands each column j < cols of the block
// of rows p0 .. p0+15 (rows >= `rows` zero) to store(j, p0, vector, mask of
// the rows < `rows`).
template <class Store>
void transpose16(const float* src, int64_t lds, int64_t rows, int64_t cols, Store&& store) {
  const __mmask16 mc = tail_mask(cols);
  for (int64_t p0 = 0; p0 < rows; p0 += 16) {
    const int64_t pr = std::min<int64_t>(16, rows - p0);
    __m512 r[16], t[16], u[16];
    MR_UNROLL
    for (int i = 0; i < 16; ++i)
      r[i] = i < pr ? _mm512_maskz_loadu_ps(mc, src + (p0 + i) * lds) : _mm512_setzero_ps();
    MR_UNROLL
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // t[2i] (block q): r[2i][4q], r[2i+1][4q], r[2i][4q+1], r[2i+1][4q+1];
    // t[2i+1]: the same for columns 4q+2, 4q+3.
    MR_UNROLL
    for (int i = 0; i < 4; ++i) {
      u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    // u[4i+c] block q: column 4q+c of rows 4i .. 4i+3.
    const __mmask16 mp = tail_mask(pr);
    MR_UNROLL
    for (int c = 0; c < 4; ++c) {
      const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
      const __m512 w0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
      const __m512 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
      const __m512 w1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
      // Columns c, 4+c, 8+c, 12+c.
      const __m512 o[4] = {_mm512_shuffle_f32x4(v0, w0, 0x88), _mm512_shuffle_f32x4(v1, w1, 0x88),
                           _mm512_shuffle_f32x4(v0, w0, 0xDD), _mm512_shuffle_f32x4(v1, w1, 0xDD)};
      MR_UNROLL
      for (int q = 0; q < 4; ++q)
        if (4 * q + c < cols) store(4 * q + c, p0, o[q], mp);
    }
  }
}

void transpose_narrow(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst,
                      int64_t ldd) {
  transpose16(src, lds, rows, cols, [&](int64_t j, int64_t p0, __m512 v, __mmask16 mp) {
    _mm512_mask_storeu_ps(dst + j * ldd + p0, mp, v);
  });
}

// C = alpha * v + beta * C on the lanes of `mask` (beta == 0: C not read).
inline void store_scaled(float* c, __mmask16 mask, __m512 v, float alpha, float beta) {
  if (alpha != 1.0f) v = _mm512_mul_ps(v, _mm512_set1_ps(alpha));
  if (beta != 0.0f) v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, c), _mm512_set1_ps(beta), v);
  _mm512_mask_storeu_ps(c, mask, v);
}

// Folds 16 vectors into one whose lane s is the sum of the lanes of x[s],
// always by the same tree (pairs of lanes, then of 128-bit blocks).
inline __m512 fold16(const __m512 x[16]) {
  __m512 s1[8], s2[4], s3[2];
  MR_UNROLL
  for (int i = 0; i < 8; ++i)
    s1[i] = _mm512_add_ps(_mm512_unpacklo_ps(x[2 * i], x[2 * i + 1]),
                          _mm512_unpackhi_ps(x[2 * i], x[2 * i + 1]));
  MR_UNROLL
  for (int i = 0; i < 4; ++i)
    s2[i] = _mm512_add_ps(_mm512_shuffle_ps(s1[2 * i], s1[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_ps(s1[2 * i], s1[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // s2[i], 128-bit block q: the partial sums (block q) of x[4i .. 4i+3].
  MR_UNROLL
  for (int i = 0; i < 2; ++i)
    s3[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s2[2 * i], s2[2 * i + 1], 0x88),
                          _mm512_shuffle_f32x4(s2[2 * i], s2[2 * i + 1], 0xDD));
  // s3[i]: blocks (x[8i..8i+3] halves 0-1, halves 2-3, x[8i+4..8i+7] the
  // same); the last level leaves x[4q .. 4q+3]'s sums in block q, in order.
  return _mm512_add_ps(_mm512_shuffle_f32x4(s3[0], s3[1], 0x88),
                       _mm512_shuffle_f32x4(s3[0], s3[1], 0xDD));
}

// ---- n <= 16, op(A) = A: dot products -------------------------------------
// acc[r][q] += A[i0+r, p..] . Bt[j0+q, p..] over p < kk, R x Q <= 4 x 4.
template <int R, int Q>
void dot_tile(const float* a, int64_t lda, const float* bt, int64_t ldbt, int64_t kk,
              __m512 acc[16]) {
  __m512 x[R][Q];
  MR_UNROLL
  for (int r = 0; r < R; ++r) MR_UNROLL
  for (int q = 0; q < Q; ++q) x[r][q] = _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + 16 <= kk; p += 16) {
    __m512 bv[Q];
    MR_UNROLL
    for (int q = 0; q < Q; ++q) bv[q] = _mm512_loadu_ps(bt + q * ldbt + p);
    MR_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_loadu_ps(a + r * lda + p);
      MR_UNROLL
      for (int q = 0; q < Q; ++q) x[r][q] = _mm512_fmadd_ps(av, bv[q], x[r][q]);
    }
  }
  if (p < kk) {
    const __mmask16 mk = tail_mask(kk - p);
    __m512 bv[Q];
    MR_UNROLL
    for (int q = 0; q < Q; ++q) bv[q] = _mm512_maskz_loadu_ps(mk, bt + q * ldbt + p);
    MR_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_maskz_loadu_ps(mk, a + r * lda + p);
      MR_UNROLL
      for (int q = 0; q < Q; ++q) x[r][q] = _mm512_fmadd_ps(av, bv[q], x[r][q]);
    }
  }
  MR_UNROLL
  for (int s = 0; s < 16; ++s) acc[s] = _mm512_setzero_ps();
  MR_UNROLL
  for (int r = 0; r < R; ++r) MR_UNROLL
  for (int q = 0; q < Q; ++q) acc[r * 4 + q] = x[r][q];
}

// Rows [i0, i1) of C over the k-chunk [p0, p0+kk); `first` applies beta.
template <int R>
void dot_rows(int64_t i0, int64_t n, const float* a, int64_t lda, const float* bt, int64_t ldbt,
              int64_t kk, float alpha, float beta, float* c, int64_t ldc) {
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const int64_t nq = std::min<int64_t>(4, n - j0);
    __m512 acc[16];
    const float* ar = a + i0 * lda;
    const float* bq = bt + j0 * ldbt;
    switch (nq) {
      case 4:
        dot_tile<R, 4>(ar, lda, bq, ldbt, kk, acc);
        break;
      case 3:
        dot_tile<R, 3>(ar, lda, bq, ldbt, kk, acc);
        break;
      case 2:
        dot_tile<R, 2>(ar, lda, bq, ldbt, kk, acc);
        break;
      default:
        dot_tile<R, 1>(ar, lda, bq, ldbt, kk, acc);
        break;
    }
    // Lanes 4r .. 4r+nq-1 of the fold are row r's elements: one masked
    // 4-lane store per row.
    alignas(64) float sums[16];
    __m512 f = fold16(acc);
    if (alpha != 1.0f) f = _mm512_mul_ps(f, _mm512_set1_ps(alpha));
    _mm512_store_ps(sums, f);
    const __mmask8 mq = static_cast<__mmask8>((1u << nq) - 1u);
    MR_UNROLL
    for (int r = 0; r < R; ++r) {
      float* cr = c + (i0 + r) * ldc + j0;
      __m128 v = _mm_load_ps(sums + 4 * r);
      if (beta != 0.0f) v = _mm_fmadd_ps(_mm_maskz_loadu_ps(mq, cr), _mm_set1_ps(beta), v);
      _mm_mask_storeu_ps(cr, mq, v);
    }
  }
}

void dot_kernel(bool trans_b, int64_t i0, int64_t i1, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  alignas(64) float bt_buf[kNarrow * kCopyStride];
  for (int64_t p0 = 0; p0 < k; p0 += kDotChunk) {
    const int64_t kk = std::min(kDotChunk, k - p0);
    // Later chunks add onto C (beta 1).
    const float bet = p0 == 0 ? beta : 1.0f;
    const float* bt = b + p0;
    int64_t ldbt = ldb;
    if (!trans_b) {
      // Bt[j, p] = B[p0 + p, j].
      transpose_narrow(b + p0 * ldb, ldb, kk, n, bt_buf, kCopyStride);
      bt = bt_buf;
      ldbt = kCopyStride;
    }
    const float* ap = a + p0;
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) dot_rows<4>(i, n, ap, lda, bt, ldbt, kk, alpha, bet, c, ldc);
    switch (i1 - i) {
      case 3:
        dot_rows<3>(i, n, ap, lda, bt, ldbt, kk, alpha, bet, c, ldc);
        break;
      case 2:
        dot_rows<2>(i, n, ap, lda, bt, ldbt, kk, alpha, bet, c, ldc);
        break;
      case 1:
        dot_rows<1>(i, n, ap, lda, bt, ldbt, kk, alpha, bet, c, ldc);
        break;
      default:
        break;
    }
  }
}

// ---- n <= 16, NN: column pairs, 8 deep in the lanes ------------------------
// Column pair g (columns 2g, 2g+1; G = ceil(n/2) pairs) of row i of C is
// accumulated in one vector whose lanes 8c+q hold the partial sums over
// p = q (mod 8) of A[i,p] B[p,2g+c]: each FMA multiplies A[i, p .. p+7]
// broadcast to both 256-bit halves (a broadcast load, no shuffle) by a packed
// block of B (lanes 8c+q = B[p+q, 2g+c]). All 16 lanes carry work for even n,
// one load of A feeds G FMAs, and a row's G vectors fold into its n outputs
// with 14 shuffles, 7 adds and one permute, against the dot kernel's 16-lane
// fold per element (which shares the shuffle port with the FMAs).
// Packed blocks of B per k-chunk: 512 / 8 blocks x 5 pairs x 16 floats = 20 KB.
constexpr int64_t kPairChunk = 512;
// Up to 5 pairs a row tile holds 4 rows (20 accumulators); 6-8 pairs leave
// room for 3, and there the dot kernel's 4x4 tiles measured faster (one
// thread, Intel Xeon Sapphire Rapids, NN 64 x n x 256: n = 12 139 against
// 120 GFLOP/s, n = 16 138 against 122), so n = 11 .. 16 stay on it.
constexpr int64_t kPairMaxN = 10;

// packed[(b * G + g) * 16 + 8c + q] = B[8b + q, 2g + c] for the kk rows of a
// k-chunk, zero for rows kk .. (kk rounded up to 16) and for column n when n
// is odd. The transpose hands over 16 rows of one column at a time; its two
// halves are two blocks (the second stored through a base 8 floats back so
// that one mask selects lanes 8-15).
void pack_pairs(const float* b, int64_t ldb, int64_t kk, int64_t n, int64_t pairs, float* packed) {
  transpose16(b, ldb, kk, n, [&](int64_t j, int64_t p0, __m512 v, __mmask16) {
    float* lo = packed + ((p0 / 8) * pairs + j / 2) * 16 + 8 * (j % 2);
    _mm512_mask_storeu_ps(lo, 0x00FF, v);
    _mm512_mask_storeu_ps(lo + pairs * 16 - 8, 0xFF00, v);
  });
  if (n % 2 != 0) {
    const int64_t blocks = (kk + 7) / 8;
    for (int64_t bl = 0; bl < blocks; ++bl)
      _mm256_store_ps(packed + (bl * pairs + pairs - 1) * 16 + 8, _mm256_setzero_ps());
  }
}

// The same layout from B^T (NT: column j of op(B) is row j of B, k-contiguous):
// 8-float row pieces copied, zero past kk and for column n when n is odd.
void pack_pairs_t(const float* b, int64_t ldb, int64_t kk, int64_t n, int64_t pairs,
                  float* packed) {
  const int64_t blocks = (kk + 7) / 8;
  for (int64_t j = 0; j < 2 * pairs; ++j) {
    float* dst = packed + (j / 2) * 16 + 8 * (j % 2);
    const float* src = b + j * ldb;
    for (int64_t bl = 0; bl < blocks; ++bl) {
      const int64_t left = j < n ? kk - 8 * bl : 0;
      const __mmask8 mk =
          left >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << left) - 1u);
      _mm256_store_ps(dst + bl * pairs * 16, _mm256_maskz_loadu_ps(mk, src + 8 * bl));
    }
  }
}

// Folds the pair vectors x[0 .. 7] into one whose lane 2g+c is the sum of
// lanes 8c .. 8c+7 of x[g], always by the same tree.
inline __m512 fold_pairs(const __m512 x[8]) {
  __m512 s1[4], s2[2];
  MR_UNROLL
  for (int i = 0; i < 4; ++i)
    s1[i] = _mm512_add_ps(_mm512_unpacklo_ps(x[2 * i], x[2 * i + 1]),
                          _mm512_unpackhi_ps(x[2 * i], x[2 * i + 1]));
  MR_UNROLL
  for (int i = 0; i < 2; ++i)
    s2[i] = _mm512_add_ps(_mm512_shuffle_ps(s1[2 * i], s1[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_ps(s1[2 * i], s1[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // s2[i], 128-bit block q, lane t: x[4i+t]'s sum over its lanes 4q .. 4q+3.
  const __m512 s3 = _mm512_add_ps(_mm512_shuffle_f32x4(s2[0], s2[1], 0x88),
                                  _mm512_shuffle_f32x4(s2[0], s2[1], 0xDD));
  // s3 lane 4h+t: h = 0, 1: x[t] column c = h; h = 2, 3: x[4+t], c = h - 2.
  const __m512i order = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
  return _mm512_permutexvar_ps(order, s3);
}

// Rows i0 .. i0+R-1 of C over a k-chunk of kk (A, packed at its start).
template <int R, int G>
void pair_tile(int64_t i0, int64_t n, const float* a, int64_t lda, const float* packed, int64_t kk,
               float alpha, float beta, float* c, int64_t ldc) {
  __m512 acc[R][G];
  MR_UNROLL
  for (int r = 0; r < R; ++r) MR_UNROLL
  for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
  const float* ar = a + i0 * lda;
  const int64_t full = kk / 8;
  for (int64_t bl = 0; bl < full; ++bl) {
    const float* wp = packed + bl * (G * 16);
    __m512 av[R];
    MR_UNROLL
    for (int r = 0; r < R; ++r)
      av[r] = _mm512_broadcast_f32x8(_mm256_loadu_ps(ar + r * lda + 8 * bl));
    MR_UNROLL
    for (int g = 0; g < G; ++g) {
      const __m512 w = _mm512_load_ps(wp + 16 * g);
      MR_UNROLL
      for (int r = 0; r < R; ++r) acc[r][g] = _mm512_fmadd_ps(av[r], w, acc[r][g]);
    }
  }
  if (full * 8 < kk) {  // the packed rows past kk are zero
    const __mmask8 mk = static_cast<__mmask8>((1u << (kk - full * 8)) - 1u);
    const float* wp = packed + full * (G * 16);
    __m512 av[R];
    MR_UNROLL
    for (int r = 0; r < R; ++r)
      av[r] = _mm512_broadcast_f32x8(_mm256_maskz_loadu_ps(mk, ar + r * lda + 8 * full));
    MR_UNROLL
    for (int g = 0; g < G; ++g) {
      const __m512 w = _mm512_load_ps(wp + 16 * g);
      MR_UNROLL
      for (int r = 0; r < R; ++r) acc[r][g] = _mm512_fmadd_ps(av[r], w, acc[r][g]);
    }
  }
  const __mmask16 mn = tail_mask(n);
  MR_UNROLL
  for (int r = 0; r < R; ++r) {
    __m512 x[8];
    MR_UNROLL
    for (int g = 0; g < 8; ++g) x[g] = g < G ? acc[r][g] : _mm512_setzero_ps();
    store_scaled(c + (i0 + r) * ldc, mn, fold_pairs(x), alpha, beta);
  }
}

template <int G>
void pair_rows(int64_t i0, int64_t i1, int64_t n, const float* a, int64_t lda, const float* packed,
               int64_t kk, float alpha, float beta, float* c, int64_t ldc) {
  // 4 x G <= 20 accumulators, 4 broadcasts and one block of B in the 32
  // registers.
  constexpr int R = 4;
  int64_t i = i0;
  for (; i + R <= i1; i += R) pair_tile<R, G>(i, n, a, lda, packed, kk, alpha, beta, c, ldc);
  for (; i < i1; ++i) pair_tile<1, G>(i, n, a, lda, packed, kk, alpha, beta, c, ldc);
}

void pair_kernel(bool trans_b, int64_t i0, int64_t i1, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  alignas(64) float packed[kPairChunk / 8 * ((kPairMaxN + 1) / 2) * 16];
  const int64_t pairs = (n + 1) / 2;
  for (int64_t p0 = 0; p0 < k; p0 += kPairChunk) {
    const int64_t kk = std::min(kPairChunk, k - p0);
    const float bet = p0 == 0 ? beta : 1.0f;  // later chunks add onto C
    if (trans_b)
      pack_pairs_t(b + p0, ldb, kk, n, pairs, packed);
    else
      pack_pairs(b + p0 * ldb, ldb, kk, n, pairs, packed);
    const float* ap = a + p0;
#define MR_PAIR_CASE(G)                                               \
  case G:                                                             \
    pair_rows<G>(i0, i1, n, ap, lda, packed, kk, alpha, bet, c, ldc); \
    break;
    switch (pairs) {
      MR_PAIR_CASE(1)
      MR_PAIR_CASE(2)
      MR_PAIR_CASE(3)
      MR_PAIR_CASE(4)
      default:
        pair_rows<5>(i0, i1, n, ap, lda, packed, kk, alpha, bet, c, ldc);
        break;
    }
#undef MR_PAIR_CASE
  }
}

// ---- n <= 16, TN: C^T = B^T A by broadcast FMAs -----------------------------
// Rows [i0, i0+V*16) (masked by mlast on the last vector) of C, columns
// [j0, j0+J) of C: acc[j][v] += B[p, j0+j] * A[p, i0+16v ..] over all p.
template <int J, int V>
void tn_strip(int64_t i0, __mmask16 mlast, int64_t j0, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  __m512 acc[J][V];
  MR_UNROLL
  for (int j = 0; j < J; ++j) MR_UNROLL
  for (int v = 0; v < V; ++v) acc[j][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const float* ap = a + p * lda + i0;
    const float* bp = b + p * ldb + j0;
    __m512 av[V];
    MR_UNROLL
    for (int v = 0; v < V; ++v)
      av[v] = v == V - 1 ? _mm512_maskz_loadu_ps(mlast, ap + 16 * v) : _mm512_loadu_ps(ap + 16 * v);
    MR_UNROLL
    for (int j = 0; j < J; ++j) {
      const __m512 bj = _mm512_set1_ps(bp[j]);
      MR_UNROLL
      for (int v = 0; v < V; ++v) acc[j][v] = _mm512_fmadd_ps(bj, av[v], acc[j][v]);
    }
  }
  // Transpose out: C[i0 + r, j0 + j] = acc[j][r / 16] lane r % 16, gathered
  // from a stack copy one row of C at a time.
  alignas(64) float t[J * V * 16];
  MR_UNROLL
  for (int j = 0; j < J; ++j) MR_UNROLL
  for (int v = 0; v < V; ++v) _mm512_store_ps(t + (j * V + v) * 16, acc[j][v]);
  const __mmask16 mj = tail_mask(J);
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(V * 16));
  const int rows = (V - 1) * 16 + _mm_popcnt_u32(mlast);
  for (int r = 0; r < rows; ++r) {
    const __m512 row = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mj, idx, t + r, 4);
    store_scaled(c + (i0 + r) * ldc + j0, mj, row, alpha, beta);
  }
}

template <int J>
void tn_columns(int64_t i0, int64_t i1, int64_t j0, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  int64_t i = i0;
  for (; i + 32 <= i1; i += 32)
    tn_strip<J, 2>(i, 0xFFFF, j0, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (i < i1) {
    const int64_t r = i1 - i;
    if (r > 16)
      tn_strip<J, 2>(i, tail_mask(r - 16), j0, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else
      tn_strip<J, 1>(i, tail_mask(r), j0, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

void tn_kernel(int64_t i0, int64_t i1, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  // Up to 12 columns in one pass (2 x 12 accumulators); 13-16 in two halves.
  const int64_t half = n > 12 ? (n + 1) / 2 : n;
  for (int64_t j0 = 0; j0 < n; j0 += half) {
    const int64_t nj = std::min(half, n - j0);
#define MR_TN_CASE(J)                                                  \
  case J:                                                              \
    tn_columns<J>(i0, i1, j0, k, alpha, a, lda, b, ldb, beta, c, ldc); \
    break;
    switch (nj) {
      MR_TN_CASE(1)
      MR_TN_CASE(2)
      MR_TN_CASE(3)
      MR_TN_CASE(4)
      MR_TN_CASE(5)
      MR_TN_CASE(6)
      MR_TN_CASE(7)
      MR_TN_CASE(8)
      MR_TN_CASE(9)
      MR_TN_CASE(10)
      MR_TN_CASE(11) default : tn_columns<12>(i0, i1, j0, k, alpha, a, lda, b, ldb, beta, c, ldc);
      break;
    }
#undef MR_TN_CASE
  }
}

// ---- k <= 16, op(A) = A: broadcast FMAs along the rows of C ------------------
// C[i0+r, j0 .. j0+16V) = sum_p A[i0+r, p] Bk[p, j0 ..], R rows x V vectors.
template <int R, int V, int K = 0>
__attribute__((noinline)) void k_tile(int64_t i0, int64_t j0, int64_t nj, int64_t k_, float alpha,
                                      const float* a, int64_t lda, const float* bk, int64_t ldbk,
                                      float beta, float* c, int64_t ldc) {
  const int64_t k = K > 0 ? K : k_;
  __m512 acc[R][V];
  MR_UNROLL
  for (int r = 0; r < R; ++r) MR_UNROLL
  for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  const __mmask16 mlast = tail_mask(nj - 16 * (V - 1));
  MR_UNROLL
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = bk + p * ldbk + j0;
    __m512 bv[V];
    MR_UNROLL
    for (int v = 0; v < V; ++v)
      bv[v] = v == V - 1 ? _mm512_maskz_loadu_ps(mlast, bp + 16 * v) : _mm512_loadu_ps(bp + 16 * v);
    MR_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512 ar = _mm512_set1_ps(a[(i0 + r) * lda + p]);
      MR_UNROLL
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
  MR_UNROLL
  for (int r = 0; r < R; ++r) MR_UNROLL
  for (int v = 0; v < V; ++v)
    store_scaled(c + (i0 + r) * ldc + j0 + 16 * v, v == V - 1 ? mlast : 0xFFFF, acc[r][v], alpha,
                 beta);
}

template <int R>
void k_rows(int64_t i0, int64_t jb, int64_t je, int64_t k, float alpha, const float* a, int64_t lda,
            const float* bk, int64_t ldbk, float beta, float* c, int64_t ldc) {
  int64_t j = jb;
  // Whole 64-column tiles with k a compile-time constant: the p loop fully
  // unrolled (dX3, 64x256x10, one thread on an Intel Xeon Sapphire Rapids:
  // 125 -> 138 GFLOP/s against the runtime-k loop).
#define MR_K_CASE(K)                                                        \
  case K:                                                                   \
    for (; j + 64 <= je; j += 64)                                           \
      k_tile<R, 4, K>(i0, j, 64, k, alpha, a, lda, bk, ldbk, beta, c, ldc); \
    break;
  switch (k) {
    MR_K_CASE(1)
    MR_K_CASE(2)
    MR_K_CASE(3)
    MR_K_CASE(4)
    MR_K_CASE(5)
    MR_K_CASE(6)
    MR_K_CASE(7)
    MR_K_CASE(8)
    MR_K_CASE(9)
    MR_K_CASE(10)
    MR_K_CASE(11)
    MR_K_CASE(12)
    MR_K_CASE(13)
    MR_K_CASE(14)
    MR_K_CASE(15)
    MR_K_CASE(16)
    default:
      break;
  }
#undef MR_K_CASE
  const int64_t rest = je - j;
  if (rest > 48)
    k_tile<R, 4>(i0, j, rest, k, alpha, a, lda, bk, ldbk, beta, c, ldc);
  else if (rest > 32)
    k_tile<R, 3>(i0, j, rest, k, alpha, a, lda, bk, ldbk, beta, c, ldc);
  else if (rest > 16)
    k_tile<R, 2>(i0, j, rest, k, alpha, a, lda, bk, ldbk, beta, c, ldc);
  else if (rest > 0)
    k_tile<R, 1>(i0, j, rest, k, alpha, a, lda, bk, ldbk, beta, c, ldc);
}

// Rows [i0, i1) and columns [jb, je) of C.
void k_kernel(bool trans_b, int64_t i0, int64_t i1, int64_t jb, int64_t je, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc) {
  alignas(64) float bk_buf[kNarrow * kCopyStride];
  for (int64_t c0 = jb; c0 < je; c0 += kColChunk) {
    const int64_t c1 = std::min(je, c0 + kColChunk);
    // Column c0 of op(B) at bk, of C at cc.
    const float* bk = b + c0;
    int64_t ldbk = ldb;
    if (trans_b) {
      // Bk[p, j] = B[c0 + j, p]: B's rows are k <= 16 floats long.
      transpose_narrow(b + c0 * ldb, ldb, c1 - c0, k, bk_buf, kCopyStride);
      bk = bk_buf;
      ldbk = kCopyStride;
    }
    float* cc = c + c0;
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) k_rows<4>(i, 0, c1 - c0, k, alpha, a, lda, bk, ldbk, beta, cc, ldc);
    for (; i < i1; ++i) k_rows<1>(i, 0, c1 - c0, k, alpha, a, lda, bk, ldbk, beta, cc, ldc);
  }
}

}  // namespace

bool narrow_gemm_handles(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return false;
  if (n <= kNarrow) return !trans_a || !trans_b;
  return k <= kNarrow && !trans_a;
}

void narrow_gemm(ThreadTeam* team, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                 float* c, int64_t ldc) {
  const bool split = team != nullptr && team->size() > 1 && m * n * k >= kSplitMinMacs;
  // Runs f over [0, total) on the team in chunks of `grain`, or on the caller.
  auto run = [&](int64_t total, int64_t grain, auto&& f) {
    if (team != nullptr)
      for_range(*team, total, split ? grain : total, f);
    else
      f(int64_t{0}, total);
  };
  if (n <= kPairMaxN && !trans_a) {
    // By rows of C in multiples of 4 (one register tile).
    run(m, 4, [&](int64_t i0, int64_t i1) {
      pair_kernel(trans_b, i0, i1, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
  } else if (n <= kNarrow && !trans_a) {
    // By rows of C in multiples of 4 (one register tile).
    run(m, 4, [&](int64_t i0, int64_t i1) {
      dot_kernel(trans_b, i0, i1, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
  } else if (n <= kNarrow) {
    // TN: by rows of C in multiples of 32 (one strip).
    run(m, 32, [&](int64_t i0, int64_t i1) {
      tn_kernel(i0, i1, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
  } else {
    // k <= 16: by columns of C in multiples of 64 (one tile), so that each
    // member transposes only its own columns of B (NT).
    run(n, 64, [&](int64_t j0, int64_t j1) {
      k_kernel(trans_b, 0, m, j0, j1, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
  }
}

void narrow_transpose(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst,
                      int64_t ldd) {
  transpose_narrow(src, lds, rows, cols, dst, ldd);
}

#else  // no AVX-512 in this build: the general GEMM runs every shape.

bool narrow_gemm_handles(bool, bool, int64_t, int64_t, int64_t) { return false; }

void narrow_gemm(ThreadTeam*, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                 const float*, int64_t, float, float*, int64_t) {}

void narrow_transpose(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst,
                      int64_t ldd) {
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t p = 0; p < rows; ++p) dst[j * ldd + p] = src[p * lds + j];
}

#endif

}  // namespace mr::cpu
