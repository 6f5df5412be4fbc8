// The layer class behind Maximum and Minimum (their files register it): the
// element-wise max (min) of two or more inputs of one shape. The gradient
// goes to the first input (in input order) equal to the output, so ties are
// resolved the same way on every device; aux holds the per-element "already
// taken" flags of that pass.
#pragma once

#include <string>
#include <vector>

#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

class ExtremumMerge final : public Layer {
 public:
  ExtremumMerge(ConfigReader& r, const char* cls, bool is_max)
      : cls_(cls), name_(r.name()), who_(r.who()), max_(is_max) {}
  const char* class_name() const override { return cls_; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    return merge_shape(who_, in, 2, false);
  }
  int64_t aux_per_row(const std::vector<Shape>& in) const override { return in[0].numel(); }
  void forward(const ForwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    a.be.extremum(n, max_, a.in[0], a.in[1], a.out);
    for (size_t k = 2; k < a.in.size(); ++k) a.be.extremum(n, max_, a.out, a.in[k], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    a.be.fill(n, a.aux, 0.0f);
    for (size_t k = 0; k < a.in.size(); ++k)
      a.be.extremum_grad(n, a.in[k], a.out, a.d_out, a.aux, a.d_in[k]);
  }
  Json config() const override { return base_config(name_); }

 private:
  const char* cls_;
  std::string name_, who_;
  bool max_;
};

}  // namespace mr
