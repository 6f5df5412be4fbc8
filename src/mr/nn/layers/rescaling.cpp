// Rescaling, as Keras 3's layer: y = x * scale + offset, element-wise, with
// scalar scale and offset (Keras also takes per-channel arrays; mirrored does
// not yet: a non-number is an error (value) saying so). The gradient is
// dx = scale * dy. No weights, no workspace.
#include <cmath>

#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class Rescaling final : public Layer {
 public:
  explicit Rescaling(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    scale_ = scalar(r, "scale", true);
    offset_ = scalar(r, "offset", false);
  }
  const char* class_name() const override { return "Rescaling"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    return in[0];
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    a.be.fill(n, a.out, static_cast<float>(offset_));
    a.be.axpy(n, static_cast<float>(scale_), a.in[0], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0 || a.d_in[0] == nullptr) return;
    if (a.d_in[0] == a.d_out) {  // in place: d += (scale - 1) * d
      a.be.axpy(n, static_cast<float>(scale_ - 1.0), a.d_out, a.d_in[0]);
      return;
    }
    a.be.fill(n, a.d_in[0], 0.0f);
    a.be.axpy(n, static_cast<float>(scale_), a.d_out, a.d_in[0]);
  }
  Json config() const override {
    Json c = base_config(name_);
    c["scale"] = scale_;
    c["offset"] = offset_;
    return c;
  }

 private:
  // A finite number (scale is required, as in Keras; offset defaults to 0).
  static double scalar(ConfigReader& r, const char* key, bool required) {
    const Json* v = r.take(key);
    if (v == nullptr || v->is_null()) {
      if (required) r.bad(key, "a number");
      return 0.0;
    }
    if (v->is_array() || v->is_object())
      r.bad(key, "a number (per-channel arrays are not implemented yet)");
    if (!v->is_number() || !std::isfinite(v->get<double>())) r.bad(key, "a finite number");
    return v->get<double>();
  }

  std::string name_, who_;
  double scale_ = 1.0, offset_ = 0.0;
};

}  // namespace

MR_REGISTER_LAYER(Rescaling, Rescaling)

}  // namespace mr
