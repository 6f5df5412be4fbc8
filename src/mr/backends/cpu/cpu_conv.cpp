// Convolution on the CPU as im2col + the backend's gemm (docs/convolution.md
// has the measurements behind the choice).
//
// Columns: for group g, col_g is an M x Kg row-major matrix (M = rows *
// out_h * out_w output positions, Kg = k_h * k_w * in_c/groups) whose row
// holds the window of one output position in the kernel's (k_h, k_w, c)
// order, zeros where the window reads padding; the groups' blocks follow one
// another. Keras' kernel (k_h, k_w, in_c/groups, out_c) is then a Kg x out_c
// matrix whose columns [g*fg, (g+1)*fg) belong to group g (fg = out_c/groups),
// so each pass is one gemm per group with leading dimensions:
//   forward          y_g   = col_g  * W_g       (M x fg)
//   backward-filter  dW_g  = col_g^T * dy_g     (Kg x fg; reads forward's col)
//   backward-data    dcol_g = dy_g * W_g^T      (M x Kg), then col2im adds the
//                    windows back into dx.
// Forward and backward-data split whole samples across the team; each member
// runs im2col (col2im) and single-threaded products on chunks of its samples
// small enough to stay in its L2. Every sample's columns, y and dx are
// written by one member in a fixed order; a row's products do not depend on
// the chunk it falls in, so results do not depend on the team size.
// Backward-filter sums over every position: one product on the whole team.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

namespace {

int64_t group_channels(const ConvGeometry& g) { return g.in_c / g.groups; }
int64_t window_floats(const ConvGeometry& g) { return g.k_h * g.k_w * group_channels(g); }

// Columns of samples [n0, n1) (see the file comment).
void im2col(const ConvGeometry& g, int64_t rows, int64_t n0, int64_t n1, const float* x,
            float* col) {
  const int64_t cg = group_channels(g), kg = window_floats(g);
  const int64_t m = rows * g.out_h * g.out_w;
  // A window row of k_w elements that lies inside the input, with one group
  // and no dilation, is one contiguous run of k_w * in_c floats.
  const bool runs = g.groups == 1 && g.dil_w == 1;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    float* cb = col + grp * m * kg;
    for (int64_t n = n0; n < n1; ++n) {
      const float* xn = x + n * g.in_h * g.in_w * g.in_c + grp * cg;
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          float* dst = cb + ((n * g.out_h + oy) * g.out_w + ox) * kg;
          const int64_t ix0 = ox * g.stride_w - g.pad_left;
          for (int64_t ky = 0; ky < g.k_h; ++ky) {
            const int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dil_h;
            if (iy < 0 || iy >= g.in_h) {
              std::memset(dst, 0, sizeof(float) * g.k_w * cg);
              dst += g.k_w * cg;
              continue;
            }
            const float* xrow = xn + iy * g.in_w * g.in_c;
            if (runs && ix0 >= 0 && ix0 + g.k_w <= g.in_w) {
              std::memcpy(dst, xrow + ix0 * g.in_c, sizeof(float) * g.k_w * cg);
              dst += g.k_w * cg;
              continue;
            }
            for (int64_t kx = 0; kx < g.k_w; ++kx, dst += cg) {
              const int64_t ix = ix0 + kx * g.dil_w;
              if (ix < 0 || ix >= g.in_w)
                std::memset(dst, 0, sizeof(float) * cg);
              else
                std::memcpy(dst, xrow + ix * g.in_c, sizeof(float) * cg);
            }
          }
        }
      }
    }
  }
}

// dx of samples [n0, n1) = the sum of their windows' column values (written).
void col2im(const ConvGeometry& g, int64_t rows, int64_t n0, int64_t n1, const float* col,
            float* dx) {
  const int64_t cg = group_channels(g), kg = window_floats(g);
  const int64_t m = rows * g.out_h * g.out_w;
  const int64_t per_sample = g.in_h * g.in_w * g.in_c;
  std::fill(dx + n0 * per_sample, dx + n1 * per_sample, 0.0f);
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float* cb = col + grp * m * kg;
      float* dxn = dx + n * per_sample + grp * cg;
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          const float* src = cb + ((n * g.out_h + oy) * g.out_w + ox) * kg;
          const int64_t ix0 = ox * g.stride_w - g.pad_left;
          for (int64_t ky = 0; ky < g.k_h; ++ky) {
            const int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dil_h;
            if (iy < 0 || iy >= g.in_h) {
              src += g.k_w * cg;
              continue;
            }
            float* drow = dxn + iy * g.in_w * g.in_c;
            for (int64_t kx = 0; kx < g.k_w; ++kx, src += cg) {
              const int64_t ix = ix0 + kx * g.dil_w;
              if (ix < 0 || ix >= g.in_w) continue;
              float* d = drow + ix * g.in_c;
              for (int64_t c = 0; c < cg; ++c) d[c] += src[c];
            }
          }
        }
      }
    }
  }
}

// Columns of one chunk of samples fit in about this many floats (256 KiB,
// well inside a core's L2 next to gemm's packed panels).
constexpr int64_t kChunkFloats = 64 * 1024;
// Backward-filter splits the rows of dW across the team from this many rows
// on, in multiples of kFilterRowGrain (one AVX-512 register of floats).
constexpr int64_t kFilterRowSplit = 32;
constexpr int64_t kFilterRowGrain = 16;

// Splits samples across the team (whole samples per member) and calls
// f(n0, n1) on chunks of them whose columns stay near kChunkFloats.
template <typename F>
void for_sample_chunks(ThreadTeam& team, const ConvGeometry& g, int64_t rows, F&& f) {
  const int64_t per_row = std::max<int64_t>(conv_columns_per_row(g), 1);
  const int64_t chunk = std::max<int64_t>(1, kChunkFloats / per_row);
  cpu::for_rows(team, rows, per_row * g.out_c, [&](int64_t n0, int64_t n1) {
    for (int64_t c0 = n0; c0 < n1; c0 += chunk) f(c0, std::min(c0 + chunk, n1));
  });
}

void check_geometry(const ConvGeometry& g, int64_t rows, const char* op) {
  MR_CHECK(rows >= 0 && g.groups >= 1 && g.in_c % g.groups == 0 && g.out_c % g.groups == 0 &&
               g.out_h >= 1 && g.out_w >= 1 && g.k_h >= 1 && g.k_w >= 1,
           shape, op, ": bad geometry (rows ", rows, ", groups ", g.groups, ", in_c ", g.in_c,
           ", out_c ", g.out_c, ", out ", g.out_h, "x", g.out_w, ")");
}

}  // namespace

void CpuBackend::prepare_conv(const ConvGeometry& g, int64_t max_rows) {
#if MR_WITH_DNNL
  if (conv_dnnl_) dnnl_conv_prepare(dnnl_conv(), g, max_rows);
#else
  (void)g;
  (void)max_rows;
#endif
}

std::string CpuBackend::conv_path(const ConvGeometry& g, int64_t rows) {
#if MR_WITH_DNNL
  if (conv_dnnl_) return "onednn";
#endif
  return Backend::conv_path(g, rows);
}

void CpuBackend::conv_forward(const ConvGeometry& g, int64_t rows, const float* x, const float* w,
                              float* y, float* col) {
  check_geometry(g, rows, "conv_forward");
#if MR_WITH_DNNL
  if (conv_dnnl_) return dnnl_conv_forward(dnnl_conv(), g, rows, x, w, y);
#endif
  if (rows == 0) return;
  const int64_t m = rows * g.out_h * g.out_w, f = g.out_c, fg = f / g.groups;
  if (g.pointwise()) {
    gemm(false, false, m, f, g.in_c, 1.0f, x, g.in_c, w, f, 0.0f, y, f);
    return;
  }
  const int64_t kg = window_floats(g), pos = g.out_h * g.out_w;
  // Each member takes whole samples and, a cache-sized chunk at a time,
  // writes their columns and multiplies them while they are still in L2.
  for_sample_chunks(team_, g, rows, [&](int64_t n0, int64_t n1) {
    im2col(g, rows, n0, n1, x, col);
    for (int64_t grp = 0; grp < g.groups; ++grp)
      cpu::gemm_serial(isa_, false, false, (n1 - n0) * pos, fg, kg, 1.0f,
                       col + grp * m * kg + n0 * pos * kg, kg, w + grp * fg, f, 0.0f,
                       y + n0 * pos * f + grp * fg, f);
  });
}

void CpuBackend::conv_backward_filter(const ConvGeometry& g, int64_t rows, const float* x,
                                      const float* dy, float* dw, float* col) {
  check_geometry(g, rows, "conv_backward_filter");
#if MR_WITH_DNNL
  if (conv_dnnl_) return dnnl_conv_backward_filter(dnnl_conv(), g, rows, x, dy, dw);
#endif
  const int64_t m = rows * g.out_h * g.out_w, f = g.out_c, fg = f / g.groups;
  const int64_t kg = window_floats(g);
  if (rows == 0) {
    fill(kg * f, dw, 0.0f);
    return;
  }
  const float* a = g.pointwise() ? x : col;  // forward left the columns in col
  if (kg < kFilterRowSplit || team_.size() == 1) {
    for (int64_t grp = 0; grp < g.groups; ++grp)
      gemm(true, false, kg, fg, m, 1.0f, a + grp * m * kg, kg, dy + grp * fg, f, 0.0f,
           dw + grp * fg, f);
    return;
  }
  // Members take rows of dW (columns of the column matrix), so each reads its
  // own part of the columns once; gemm's own split of a product this narrow
  // (fg columns) would have every member stream all of them.
  cpu::for_range(team_, kg, kFilterRowGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t grp = 0; grp < g.groups; ++grp)
      cpu::gemm_serial(isa_, true, false, r1 - r0, fg, m, 1.0f, a + grp * m * kg + r0, kg,
                       dy + grp * fg, f, 0.0f, dw + r0 * f + grp * fg, f);
  });
}

void CpuBackend::conv_backward_data(const ConvGeometry& g, int64_t rows, const float* dy,
                                    const float* w, float* dx, float* col) {
  check_geometry(g, rows, "conv_backward_data");
#if MR_WITH_DNNL
  if (conv_dnnl_) return dnnl_conv_backward_data(dnnl_conv(), g, rows, dy, w, dx);
#endif
  if (rows == 0) return;
  const int64_t m = rows * g.out_h * g.out_w, f = g.out_c, fg = f / g.groups;
  if (g.pointwise()) {
    gemm(false, true, m, g.in_c, f, 1.0f, dy, f, w, f, 0.0f, dx, g.in_c);
    return;
  }
  const int64_t kg = window_floats(g), pos = g.out_h * g.out_w;
  // As forward: per member and chunk, the column gradients are made and
  // added back into dx while they are in cache.
  for_sample_chunks(team_, g, rows, [&](int64_t n0, int64_t n1) {
    for (int64_t grp = 0; grp < g.groups; ++grp)
      cpu::gemm_serial(isa_, false, true, (n1 - n0) * pos, kg, fg, 1.0f,
                       dy + n0 * pos * f + grp * fg, f, w + grp * fg, f, 0.0f,
                       col + grp * m * kg + n0 * pos * kg, kg);
    col2im(g, rows, n0, n1, col, dx);
  });
}

}  // namespace mr
