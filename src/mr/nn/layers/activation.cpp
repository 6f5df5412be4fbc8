// Activation: applies an element-wise (softmax: row-wise) function.
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class ActivationLayer final : public Layer {
 public:
  explicit ActivationLayer(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    act_ = r.activation("activation");
  }
  const char* class_name() const override { return "Activation"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    return in[0];
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t cols = a.in_shapes[0].last(), rows = a.rows * (a.in_shapes[0].numel() / cols);
    if (rows == 0) return;
    if (act_ == Activation::linear)
      copy_floats(a.be, rows * cols, a.in[0], a.out);
    else
      a.be.activation_forward(act_, rows, cols, a.in[0], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] == nullptr) return;
    const int64_t cols = a.in_shapes[0].last(), rows = a.rows * (a.in_shapes[0].numel() / cols);
    if (rows == 0) return;
    if (act_ == Activation::linear || a.d_out_is_logits_grad)
      copy_floats(a.be, rows * cols, a.d_out, a.d_in[0]);
    else
      a.be.activation_backward(act_, rows, cols, a.in[0], a.out, a.d_out, a.d_in[0]);
  }
  // Its input is the logits.
  Activation logits_activation() const override { return logits_activation_of(act_); }
  LogitsAt logits_at(const std::vector<Shape>&) const override { return {true, 0}; }
  Json config() const override {
    Json c = base_config(name_);
    c["activation"] = activation_name(act_);
    return c;
  }

 private:
  std::string name_, who_;
  Activation act_ = Activation::linear;
};

}  // namespace

MR_REGISTER_LAYER(Activation, ActivationLayer)

}  // namespace mr
