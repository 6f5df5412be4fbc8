// Dropout (inverted): kept units are scaled by 1 / (1 - rate) while training,
// identity at inference. The mask of global row r depends only on (seed, step,
// node, r), so any split of the batch over replicas draws the same mask.
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class Dropout final : public Layer {
 public:
  explicit Dropout(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    const double rate = r.number("rate", -1.0);
    if (!(rate >= 0.0 && rate < 1.0)) r.bad("rate", "a number in [0, 1)");
    rate_ = static_cast<float>(rate);
    rate_value_ = rate;
    seed_ = r.seed("seed", &seed_given_);
    r.must_be_null("noise_shape");
  }
  const char* class_name() const override { return "Dropout"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    return in[0];
  }
  int64_t aux_per_row(const std::vector<Shape>& in) const override { return in[0].numel(); }
  void forward(const ForwardArgs& a) const override {
    const int64_t cols = a.in_shapes[0].numel();
    if (a.rows == 0) return;
    if (!a.training || rate_ == 0.0f) {
      copy_floats(a.be, a.rows * cols, a.in[0], a.out);
      return;
    }
    a.be.dropout_forward(a.rows, cols, rate_, seed_, a.scalars, a.stream, a.row_offset, a.in[0],
                         a.aux, a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] == nullptr || a.rows == 0) return;
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (!a.training || rate_ == 0.0f)
      copy_floats(a.be, n, a.d_out, a.d_in[0]);
    else
      a.be.multiply(n, a.d_out, a.aux, a.d_in[0]);
  }
  Json config() const override {
    Json c = base_config(name_);
    c["rate"] = rate_value_;
    c["seed"] = seed_given_ ? Json(seed_) : Json(nullptr);
    c["noise_shape"] = nullptr;
    return c;
  }

 private:
  std::string name_, who_;
  float rate_ = 0.0f;
  double rate_value_ = 0.0;
  uint64_t seed_ = 0;
  bool seed_given_ = false;
};

}  // namespace

MR_REGISTER_LAYER(Dropout, Dropout)

}  // namespace mr
