// Pooling windows, shared by the CPU and CUDA kernels (MR_HD: core/hd.h):
// the real (unpadded) input elements an output position reads.
#pragma once

#include <cstdint>

#include "core/conv_geometry.h"
#include "core/hd.h"

namespace mr {
namespace pool {

// Rows [y0, y1) and columns [x0, x1) of the input under output (oy, ox);
// padding is left out, so with "same" padding the window may be smaller
// than k_h x k_w (never empty: "same" pads less than a window).
struct Window {
  int64_t y0, y1, x0, x1;
  MR_HD int64_t count() const { return (y1 - y0) * (x1 - x0); }
};

MR_HD Window window(const ConvGeometry& g, int64_t oy, int64_t ox) {
  const int64_t ys = oy * g.stride_h - g.pad_top, xs = ox * g.stride_w - g.pad_left;
  Window w;
  w.y0 = ys < 0 ? 0 : ys;
  w.y1 = ys + g.k_h < g.in_h ? ys + g.k_h : g.in_h;
  w.x0 = xs < 0 ? 0 : xs;
  w.x1 = xs + g.k_w < g.in_w ? xs + g.k_w : g.in_w;
  return w;
}

}  // namespace pool
}  // namespace mr
