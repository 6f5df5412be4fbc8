// LeakyReLU: x >= 0 ? x : negative_slope * x (Keras 3's layer default 0.3).
#include "nn/layers/activation_layer.h"

namespace mr {

namespace {

class LeakyReLU final : public Layer {
 public:
  explicit LeakyReLU(ConfigReader& r)
      : name_(r.name()), who_(r.who()), op_(who_, Activation::leaky_relu, read(r)) {}
  const char* class_name() const override { return "LeakyReLU"; }
  Shape output_shape(const std::vector<Shape>& in) const override { return op_.output_shape(in); }
  void forward(const ForwardArgs& a) const override { op_.forward(a); }
  void backward(const BackwardArgs& a) const override { op_.backward(a); }
  Json config() const override {
    Json c = base_config(name_);
    c["negative_slope"] = slope_;
    return c;
  }

 private:
  ActivationParams read(ConfigReader& r) {
    slope_ = r.number("negative_slope", 0.3);
    if (!(slope_ >= 0)) r.bad("negative_slope", "a number >= 0");
    ActivationParams p;
    p.alpha = static_cast<float>(slope_);
    return p;
  }

  std::string name_, who_;
  double slope_ = 0.3;
  ActivationOp op_;
};

}  // namespace

MR_REGISTER_LAYER(LeakyReLU, LeakyReLU)

}  // namespace mr
