// Subtract: x_0 - x_1 for exactly two inputs of one shape; the gradients are
// dy and -dy.
#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class Subtract final : public Layer {
 public:
  explicit Subtract(ConfigReader& r) : name_(r.name()), who_(r.who()) {}
  const char* class_name() const override { return "Subtract"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    return merge_shape(who_, in, 2, true);
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    copy_floats(a.be, n, a.in[0], a.out);
    a.be.axpy(n, -1.0f, a.in[1], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (a.d_in[0] != nullptr) copy_floats(a.be, n, a.d_out, a.d_in[0]);
    if (a.d_in[1] != nullptr && n > 0) {
      a.be.fill(n, a.d_in[1], 0.0f);
      a.be.axpy(n, -1.0f, a.d_out, a.d_in[1]);
    }
  }
  Json config() const override { return base_config(name_); }

 private:
  std::string name_, who_;
};

}  // namespace

MR_REGISTER_LAYER(Subtract, Subtract)

}  // namespace mr
