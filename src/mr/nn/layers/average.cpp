// Average: the element-wise mean of two or more inputs of one shape,
// (x_0 + .. + x_{k-1}) / k; every input's gradient is dy / k.
#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class Average final : public Layer {
 public:
  explicit Average(ConfigReader& r) : name_(r.name()), who_(r.who()) {}
  const char* class_name() const override { return "Average"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    return merge_shape(who_, in, 2, false);
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    const float inv = 1.0f / static_cast<float>(a.in.size());
    a.be.fill(n, a.out, 0.0f);
    for (const float* x : a.in) a.be.axpy(n, inv, x, a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    const float inv = 1.0f / static_cast<float>(a.in.size());
    for (float* d : a.d_in) {
      if (d == nullptr) continue;
      a.be.fill(n, d, 0.0f);
      a.be.axpy(n, inv, a.d_out, d);
    }
  }
  Json config() const override { return base_config(name_); }

 private:
  std::string name_, who_;
};

}  // namespace

MR_REGISTER_LAYER(Average, Average)

}  // namespace mr
