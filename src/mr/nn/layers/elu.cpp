// ELU: x > 0 ? x : alpha * (exp(x) - 1). Keras 3's ELU has no get_config()
// of its own: Operation's auto-config writes the constructor's arguments,
// i.e. "alpha" after the name.
#include "nn/layers/activation_layer.h"

namespace mr {

namespace {

class ELU final : public Layer {
 public:
  explicit ELU(ConfigReader& r)
      : name_(r.name()), who_(r.who()), op_(who_, Activation::elu, read(r)) {}
  const char* class_name() const override { return "ELU"; }
  Shape output_shape(const std::vector<Shape>& in) const override { return op_.output_shape(in); }
  void forward(const ForwardArgs& a) const override { op_.forward(a); }
  void backward(const BackwardArgs& a) const override { op_.backward(a); }
  Json config() const override {
    Json c = base_config(name_);
    c["alpha"] = alpha_;
    return c;
  }

 private:
  ActivationParams read(ConfigReader& r) {
    alpha_ = r.number("alpha", 1.0);
    ActivationParams p;
    p.alpha = static_cast<float>(alpha_);
    return p;
  }

  std::string name_, who_;
  double alpha_ = 1.0;
  ActivationOp op_;
};

}  // namespace

MR_REGISTER_LAYER(ELU, ELU)

}  // namespace mr
