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
    c["max_value"] = std::isinf(max_value_) ? Json(nullptr) : Json(max_value_);
    c["negative_slope"] = negative_slope_;
    c["threshold"] = threshold_;
    return c;
  }

 private:
  ActivationParams read(ConfigReader& r) {
    // Kept as given (doubles), so the config is written back unchanged.
    max_value_ = r.number("max_value", INFINITY);
    if (!(max_value_ >= 0)) r.bad("max_value", "NULL or a number >= 0");
    negative_slope_ = r.number("negative_slope", 0.0);
    if (!(negative_slope_ >= 0)) r.bad("negative_slope", "a number >= 0");
    threshold_ = r.number("threshold", 0.0);
    if (!(threshold_ >= 0)) r.bad("threshold", "a number >= 0");
    ActivationParams p;
    p.alpha = static_cast<float>(negative_slope_);
    p.max_value = static_cast<float>(max_value_);
    p.threshold = static_cast<float>(threshold_);
    return p;
  }

  std::string name_, who_;
  double max_value_ = INFINITY, negative_slope_ = 0.0, threshold_ = 0.0;
  ActivationOp op_;
};

}  // namespace

MR_REGISTER_LAYER(ReLU, ReLU)

}  // namespace mr
