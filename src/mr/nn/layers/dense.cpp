// Dense: y = activation(x W + b) over the last axis; inputs of rank > 1 are
// treated as rows of their last dimension, as Keras' Dense does.
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class Dense final : public Layer {
 public:
  explicit Dense(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    units_ = r.integer("units", -1, 1);
    if (units_ < 1) r.bad("units", "a positive integer");
    act_ = r.activation("activation");
    use_bias_ = r.boolean("use_bias", true);
    kinit_ = r.initializer("kernel_initializer", "glorot_uniform", 0);
    binit_ = r.initializer("bias_initializer", "zeros", 1);
    kopt_ = r.weight_options("kernel");
    bopt_ = r.weight_options("bias");
    activity_ = r.activity_regularizer();
    for (const char* k : {"lora_rank", "lora_alpha", "quantization_config"}) r.must_be_null(k);
  }
  const char* class_name() const override { return "Dense"; }
  Json activity_regularizer() const override { return activity_; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    MR_CHECK(in[0].rank() >= 1, shape, who_, " needs an input of rank >= 1 per sample, got ",
             in[0].str());
    std::vector<int64_t> d = in[0].dims();
    d.back() = units_;
    return Shape(d);
  }
  std::vector<WeightSpec> weights(const std::vector<Shape>& in) const override {
    std::vector<WeightSpec> w{{"kernel", Shape{in[0].last(), units_}, kinit_, true, kopt_}};
    if (use_bias_) w.push_back({"bias", Shape{units_}, binit_, true, bopt_});
    return w;
  }
  // The pre-activation z is kept when the activation needs it for backward.
  int64_t aux_per_row(const std::vector<Shape>& in) const override {
    return act_ == Activation::linear ? 0 : in[0].numel() / in[0].last() * units_;
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t k = a.in_shapes[0].last();
    const int64_t m = a.rows * (a.in_shapes[0].numel() / k);
    if (m == 0) return;
    float* z = act_ == Activation::linear ? a.out : a.aux;
    a.be.gemm(false, false, m, units_, k, 1.0f, a.in[0], k, a.params[0], units_, 0.0f, z, units_);
    if (use_bias_) a.be.bias_add(m, units_, a.params[1], z);
    if (act_ != Activation::linear) a.be.activation_forward(act_, m, units_, z, a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t k = a.in_shapes[0].last();
    const int64_t m = a.rows * (a.in_shapes[0].numel() / k);
    if (m == 0) {
      // A replica with no rows contributes zero gradients to the all-reduce.
      a.be.fill(k * units_, a.grads[0], 0.0f);
      if (use_bias_) a.be.fill(units_, a.grads[1], 0.0f);
      return;
    }
    float* dz = a.d_out;
    if (act_ != Activation::linear)
      a.be.activation_backward(act_, m, units_, a.aux, a.out, a.d_out, dz);
    a.be.gemm(true, false, k, units_, m, 1.0f, a.in[0], k, dz, units_, 0.0f, a.grads[0], units_);
    if (use_bias_) a.be.bias_grad(m, units_, dz, a.grads[1], false);
    if (a.d_in[0] != nullptr)
      a.be.gemm(false, true, m, k, units_, 1.0f, dz, units_, a.params[0], units_, 0.0f, a.d_in[0],
                k);
  }
  Json config() const override {
    Json c = base_config(name_);
    // Keras' base Layer writes it after dtype, only when there is one.
    if (!activity_.is_null()) c["activity_regularizer"] = activity_;
    c["units"] = units_;
    c["activation"] = activation_name(act_);
    c["use_bias"] = use_bias_;
    c["kernel_initializer"] = initializer_to_keras(kinit_);
    c["bias_initializer"] = initializer_to_keras(binit_);
    write_weight_options(c, {{"kernel", &kopt_}, {"bias", &bopt_}});
    c["quantization_config"] = nullptr;
    return c;
  }

 private:
  std::string name_, who_;
  int64_t units_ = 0;
  Activation act_ = Activation::linear;
  bool use_bias_ = true;
  Initializer kinit_, binit_;
  WeightOptions kopt_, bopt_;
  Json activity_;
};

}  // namespace

MR_REGISTER_LAYER(Dense, Dense)

}  // namespace mr
