// The layer class behind UpSampling1D and UpSampling2D (their files register
// it): nearest-neighbour upsampling repeats each spatial position size[k]
// times along spatial axis k. Forward is a stride-0 copy over the box
// (rows, d_1, s_1, .., d_N, s_N, channels); backward sums the gradient over
// the s_k axes of that box.
#pragma once

#include <string>
#include <vector>

#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

template <int N>
class UpSampling final : public Layer {
 public:
  UpSampling(ConfigReader& r, const char* cls) : cls_(cls), name_(r.name()), who_(r.who()) {
    size_ = int_tuple(r, "size", N, std::vector<int64_t>(N, 2), 1);
    if (N == 2) {
      channels_last_only(r);
      const std::string interp = r.string("interpolation", "nearest");
      if (interp == "bilinear")
        r.bad("interpolation", "\"nearest\" (bilinear is not supported yet)");
      if (interp != "nearest") r.bad("interpolation", "\"nearest\"");
    }
  }
  const char* class_name() const override { return cls_; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    MR_CHECK(in[0].rank() == N + 1, shape, who_, " needs inputs of rank ", N + 2, " (batch, ",
             N == 1 ? "steps" : "rows, cols", ", channels), got ", in[0].str_with_batch());
    std::vector<int64_t> d = in[0].dims();
    for (int k = 0; k < N; ++k) d[static_cast<size_t>(k)] *= size_[static_cast<size_t>(k)];
    return Shape(d);
  }
  void forward(const ForwardArgs& a) const override {
    const Box b = box(a.in_shapes[0]);
    a.be.strided_copy(make_box(a.rows, b.extent, b.in_stride, b.out_stride), a.in[0], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] == nullptr) return;
    const Box b = box(a.in_shapes[0]);
    // Box over the input's axes; the s_k axes of the output become sum axes.
    std::vector<int64_t> extent, src{b.out_stride[0]}, dst{b.in_stride[0]};
    StridedCopy c;
    for (size_t k = 0; k < b.extent.size(); ++k) {
      if (b.in_stride[k + 1] == 0) {
        c.sum_dims[c.sum_rank] = b.extent[k];
        c.sum_stride[c.sum_rank] = b.out_stride[k + 1];
        ++c.sum_rank;
      } else {
        extent.push_back(b.extent[k]);
        src.push_back(b.out_stride[k + 1]);
        dst.push_back(b.in_stride[k + 1]);
      }
    }
    StridedCopy m = make_box(a.rows, extent, src, dst);
    m.sum_rank = c.sum_rank;
    for (int k = 0; k < c.sum_rank; ++k) {
      m.sum_dims[k] = c.sum_dims[k];
      m.sum_stride[k] = c.sum_stride[k];
    }
    a.be.strided_copy(m, a.d_out, a.d_in[0]);
  }
  Json config() const override {
    Json c = base_config(name_);
    if (N == 1) {
      c["size"] = size_[0];
    } else {
      c["size"] = size_;
      c["data_format"] = "channels_last";
      c["interpolation"] = "nearest";
    }
    return c;
  }

 private:
  // The forward box without its batch axis, with the input's and the
  // output's strides (batch stride first); repeat axes have input stride 0.
  struct Box {
    std::vector<int64_t> extent, in_stride, out_stride;
  };
  Box box(const Shape& s) const {
    const Shape o = output_shape({s});
    const std::vector<int64_t> is = batched_strides(s), os = batched_strides(o);
    Box b;
    b.in_stride.push_back(is[0]);
    b.out_stride.push_back(os[0]);
    for (int k = 0; k < N; ++k) {
      const size_t u = static_cast<size_t>(k);
      b.extent.push_back(s[k]);  // input position along axis k
      b.in_stride.push_back(is[u + 1]);
      b.out_stride.push_back(os[u + 1] * size_[u]);
      b.extent.push_back(size_[u]);  // its copies
      b.in_stride.push_back(0);
      b.out_stride.push_back(os[u + 1]);
    }
    b.extent.push_back(s[N]);  // channels
    b.in_stride.push_back(1);
    b.out_stride.push_back(1);
    return b;
  }

  const char* cls_;
  std::string name_, who_;
  std::vector<int64_t> size_;
};

}  // namespace mr
