// The spatial layout of a convolution or pooling op (core/backend.h, the
// "convolution and pooling" section): one sample, channels_last.
#pragma once

#include <cstdint>

namespace mr {

// One sample's spatial layout, channels_last. A 1-D layer is a 2-D one with
// in_h = out_h = k_h = stride_h = dil_h = 1 and pad_top = 0. pad_top/left are
// the zeros before the first element (Keras' "same": half the total, rounded
// down; the rest, after the last one, follows from out_h/out_w).
struct ConvGeometry {
  int64_t in_h = 1, in_w = 1, in_c = 1;
  int64_t out_h = 1, out_w = 1, out_c = 1;
  int64_t k_h = 1, k_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t groups = 1;
  // The convolution is a plain product of x with the kernel (1x1 kernel,
  // stride 1, no padding, one group): no columns are needed.
  bool pointwise() const {
    return k_h == 1 && k_w == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 &&
           pad_left == 0 && groups == 1;
  }
};

// Workspace floats per row the convolution ops need (im2col columns: one row
// of k_h*k_w*in_c/groups values per output position and group).
inline int64_t conv_columns_per_row(const ConvGeometry& g) {
  return g.pointwise() ? 0 : g.out_h * g.out_w * g.k_h * g.k_w * g.in_c;
}

}  // namespace mr
