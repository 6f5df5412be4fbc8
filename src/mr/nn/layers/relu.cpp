// ReLU: Keras' parametrised relu, f(x) = x > threshold ? min(x, max_value) : 0
// for x >= threshold, negative_slope * (x - threshold) below it (formula in
// backends/common/kernel_math.h).
#include <cmath>

#include "nn/layers/activation_layer.h"

namespace mr {

namespace {

class ReLU final : public Layer {
 public:
  explicit ReLU(ConfigReader& r)
      : name_(r.name()), who_(r.who()), op_(who_, Activation::relu, read(r)) {}
  const char* class_name() const override { return "ReLU"; }
  Shape output_shape(const std::vector<Shape>& in) const override { return op_.output_shape(in); }
  void forward(const ForwardArgs& a) const override { op_.forward(a); }
  void backward(const BackwardArgs& a) const override { op_.backward(a); }
  Json config() const override {
    Json c = base_config(name_);
    c["max_value"] = std::isinf(p_.max_value) ? Json(nullptr) : Json(p_.max_value);
    c["negative_slope"] = p_.alpha;
    c["threshold"] = p_.threshold;
    return c;
  }

 private:
  ActivationParams read(ConfigReader& r) {
    const double mv = r.number("max_value", INFINITY);
    if (mv < 0) r.bad("max_value", "NULL or a number >= 0");
    const double ns = r.number("negative_slope", 0.0);
    if (!(ns >= 0)) r.bad("negative_slope", "a number >= 0");
    const double th = r.number("threshold", 0.0);
    if (!(th >= 0)) r.bad("threshold", "a number >= 0");
    p_.alpha = static_cast<float>(ns);
    p_.max_value = static_cast<float>(mv);
    p_.threshold = static_cast<float>(th);
    return p_;
  }

  std::string name_, who_;
  ActivationParams p_;
  ActivationOp op_;
};

}  // namespace

MR_REGISTER_LAYER(ReLU, ReLU)

}  // namespace mr
