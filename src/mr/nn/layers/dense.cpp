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
  // The pre-activation z is kept when the activation needs it for backward;
  // under a mixed policy (lowp()) the 16-bit copies of the input and of the
  // output gradient follow it (Lowp's layout).
  int64_t aux_per_row(const std::vector<Shape>& in) const override {
    const int64_t per = in[0].numel() / in[0].last();
    const int64_t z = act_ == Activation::linear ? 0 : per * units_;
    if (dtype_policy().compute == ComputeDtype::f32) return z;
    return z + (per * (in[0].last() + units_) + 1) / 2;
  }
  // Made by forward and read by backward: the kernel's 16-bit copy under a
  // mixed policy, or (units <= kNarrowUnits, f32 products) its transpose
  // where the backend keeps narrow weights transposed. One pass uses one.
  int64_t work_floats(const std::vector<Shape>& in) const override {
    const int64_t kw = in[0].last() * units_;
    const int64_t lowp_floats = dtype_policy().compute == ComputeDtype::f32 ? 0 : (kw + 1) / 2;
    return units_ <= kNarrowUnits ? std::max(lowp_floats, kw) : lowp_floats;
  }
  void prepare(Backend& be, const std::vector<Shape>& /*in*/, int64_t /*max_rows*/) const override {
    if (dtype_policy().compute != ComputeDtype::f32) be.prepare_lowp(lowp_type());
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t k = a.in_shapes[0].last();
    const int64_t m = a.rows * (a.in_shapes[0].numel() / k);
    if (m == 0) return;
    float* z = act_ == Activation::linear ? a.out : a.aux;
    if (lowp(a.be)) {
      // Mixed policy: x and the kernel rounded to bf16 / f16, f32 products.
      const Lowp b = buffers(a.aux, a.work, m, k);
      a.be.cast_lowp(lowp_type(), k * units_, a.params[0], b.w);
      a.be.cast_lowp(lowp_type(), m * k, a.in[0], b.x);
      a.be.gemm_lowp(lowp_type(), false, false, m, units_, k, 1.0f, b.x, k, b.w, units_, 0.0f, z,
                     units_);
    } else if (transposed(a.be)) {
      // W^T in work, kept for backward; z = x (W^T)^T.
      a.be.strided_copy(matrix_transpose(k, units_, units_, k), a.params[0], a.work);
      a.be.gemm(false, true, m, units_, k, 1.0f, a.in[0], k, a.work, k, 0.0f, z, units_);
    } else {
      a.be.gemm(false, false, m, units_, k, 1.0f, a.in[0], k, a.params[0], units_, 0.0f, z, units_);
    }
    if (use_bias_) a.be.bias_add(m, units_, a.params[1], z);
    if (act_ != Activation::linear) a.be.activation_forward(act_, m, units_, z, a.out);
  }
  // z is at the start of aux (aux_per_row()).
  Activation logits_activation() const override { return logits_activation_of(act_); }
  LogitsAt logits_at(const std::vector<Shape>&) const override { return {}; }
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
    if (act_ != Activation::linear && !a.d_out_is_logits_grad)
      a.be.activation_backward(act_, m, units_, a.aux, a.out, a.d_out, dz);
    if (lowp(a.be)) {
      // dz rounded too; dW = x^T dz and dx = dz W^T from the 16-bit copies,
      // the bias gradient from the f32 dz.
      const Lowp b = buffers(a.aux, a.work, m, k);
      a.be.cast_lowp(lowp_type(), m * units_, dz, b.dz);
      a.be.gemm_lowp(lowp_type(), true, false, k, units_, m, 1.0f, b.x, k, b.dz, units_, 0.0f,
                     a.grads[0], units_);
      if (use_bias_) a.be.bias_grad(m, units_, dz, a.grads[1], false);
      if (a.d_in[0] != nullptr)
        a.be.gemm_lowp(lowp_type(), false, true, m, k, units_, 1.0f, b.dz, units_, b.w, units_,
                       0.0f, a.d_in[0], k);
      return;
    }
    a.be.gemm(true, false, k, units_, m, 1.0f, a.in[0], k, dz, units_, 0.0f, a.grads[0], units_);
    if (use_bias_) a.be.bias_grad(m, units_, dz, a.grads[1], false);
    if (a.d_in[0] == nullptr) return;
    if (transposed(a.be))  // forward's W^T: dx = dz (W^T)
      a.be.gemm(false, false, m, k, units_, 1.0f, dz, units_, a.work, k, 0.0f, a.d_in[0], k);
    else
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
  // ---- i14-mpcore: mixed precision (nn/dtype_policy.h) ----
  // Whether this pass runs the products in 16 bits: a mixed policy on a
  // backend with 16-bit matrix units (else f32, as compile()'s note says).
  bool lowp(const Backend& be) const {
    return dtype_policy().compute != ComputeDtype::f32 && be.native_lowp(lowp_type());
  }
  DType lowp_type() const {
    return dtype_policy().compute == ComputeDtype::f16 ? DType::f16 : DType::bf16;
  }
  // The 16-bit copies: in aux after z (x then dz, m rows each), in work the
  // kernel. The sizes are aux_per_row() and work_floats().
  struct Lowp {
    void* x;
    void* dz;
    void* w;
  };
  Lowp buffers(float* aux, float* work, int64_t m, int64_t k) const {
    float* base = aux + (act_ == Activation::linear ? 0 : m * units_);
    auto* h = reinterpret_cast<uint16_t*>(base);
    return Lowp{h, h + m * k, work};
  }

  // ---- a narrow kernel kept transposed (Backend::keeps_transposed_narrow_weights)
  static constexpr int64_t kNarrowUnits = 16;
  // Whether this f32 pass keeps W^T in work (forward makes it).
  bool transposed(const Backend& be) const {
    return units_ <= kNarrowUnits && be.keeps_transposed_narrow_weights(units_);
  }

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
