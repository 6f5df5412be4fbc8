// Multiply: the element-wise product of two or more inputs of one shape;
// input k's gradient is dy times the product of the other inputs.
#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class Multiply final : public Layer {
 public:
  explicit Multiply(ConfigReader& r) : name_(r.name()), who_(r.who()) {}
  const char* class_name() const override { return "Multiply"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    return merge_shape(who_, in, 2, false);
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    a.be.multiply(n, a.in[0], a.in[1], a.out);
    for (size_t k = 2; k < a.in.size(); ++k) a.be.multiply(n, a.out, a.in[k], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    for (size_t k = 0; k < a.in.size(); ++k) {
      float* d = a.d_in[k];
      if (d == nullptr) continue;
      copy_floats(a.be, n, a.d_out, d);
      for (size_t j = 0; j < a.in.size(); ++j)
        if (j != k) a.be.multiply(n, d, a.in[j], d);
    }
  }
  Json config() const override { return base_config(name_); }

 private:
  std::string name_, who_;
};

}  // namespace

MR_REGISTER_LAYER(Multiply, Multiply)

}  // namespace mr
