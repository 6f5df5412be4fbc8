// Softmax: the softmax over the last axis (axis -1, or the last axis'
// number); other axes are a not-yet error.
#include "nn/layers/activation_layer.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class Softmax final : public Layer {
 public:
  explicit Softmax(ConfigReader& r)
      : name_(r.name()), who_(r.who()), op_(who_, Activation::softmax, {}) {
    const Json* v = r.take("axis");
    if (v != nullptr && !v->is_null()) {
      if (!v->is_number_integer()) r.bad("axis", "an integer");
      axis_ = v->get<int64_t>();
    }
  }
  const char* class_name() const override { return "Softmax"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    const Shape s = op_.output_shape(in);
    const int ax = per_sample_axis(who_, "axis", axis_, s.rank());
    MR_CHECK(ax == s.rank() - 1, value, who_, ": axis ", axis_, " is not supported yet for inputs ",
             s.str_with_batch(), " (only the last axis is)");
    return s;
  }
  void forward(const ForwardArgs& a) const override { op_.forward(a); }
  void backward(const BackwardArgs& a) const override { op_.backward(a); }
  // Its input is the logits.
  Activation logits_activation() const override { return op_.logits_activation(); }
  LogitsAt logits_at(const std::vector<Shape>&) const override { return {true, 0}; }
  Json config() const override {
    Json c = base_config(name_);
    c["axis"] = axis_;
    return c;
  }

 private:
  std::string name_, who_;
  ActivationOp op_;
  int64_t axis_ = -1;
};

}  // namespace

MR_REGISTER_LAYER(Softmax, Softmax)

}  // namespace mr
