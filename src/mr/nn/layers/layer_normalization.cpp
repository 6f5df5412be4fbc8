// LayerNormalization, as Keras 3's layer: each sample is normalized over the
// axes in `axis` with its own mean and (biased) variance, then scaled by
// gamma and shifted by beta (both of the normalized axes' shape):
// y = (x - mean) / sqrt(var + epsilon) * gamma + beta. With Keras'
// deprecated rms_scaling = TRUE: y = x / sqrt(var + epsilon) * gamma (no
// centering, no beta; the variance is still the centered one, as Keras
// computes it).
//
// `axis` is an integer or a list of integers (Keras writes the sorted
// non-negative list after build, e.g. [1] for a (batch, features) input).
// mirrored normalizes a trailing block of axes: the axes must be the last k
// axes of the input (k >= 1), which makes each sample a set of rows of their
// flattened size; other axis sets are an error (value) saying they are not
// implemented yet.
//
// No statistics cross samples, so replicas need no collective and any
// replica count computes what one device computes. Workspace: aux holds
// (mean, 1/std) of each normalized row for backward.
#include <algorithm>

#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class LayerNormalization final : public Layer {
 public:
  explicit LayerNormalization(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    const Json* ax = r.take("axis");
    if (ax == nullptr || ax->is_number_integer()) {
      axes_ = {ax == nullptr ? -1 : ax->get<int64_t>()};
    } else {
      if (!ax->is_array() || ax->empty()) r.bad("axis", "an integer or a list of integers");
      axis_is_list_ = true;
      for (const Json& a : *ax) {
        if (!a.is_number_integer()) r.bad("axis", "an integer or a list of integers");
        axes_.push_back(a.get<int64_t>());
      }
    }
    epsilon_ = r.number("epsilon", 1e-3);
    if (!(epsilon_ > 0.0)) r.bad("epsilon", "a positive number");
    center_ = r.boolean("center", true);
    scale_ = r.boolean("scale", true);
    rms_ = r.boolean("rms_scaling", false);
    beta_init_ = r.initializer("beta_initializer", "zeros", 0);
    gamma_init_ = r.initializer("gamma_initializer", "ones", 1);
    beta_opt_ = r.weight_options("beta");
    gamma_opt_ = r.weight_options("gamma");
  }
  const char* class_name() const override { return "LayerNormalization"; }

  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    trailing_axes(in[0]);
    return in[0];
  }
  std::vector<WeightSpec> weights(const std::vector<Shape>& in) const override {
    const int64_t k = trailing_axes(in[0]);
    const std::vector<int64_t>& d = in[0].dims();
    const Shape shape(std::vector<int64_t>(d.end() - k, d.end()));
    std::vector<WeightSpec> w;
    if (scale_ || rms_) w.push_back({"gamma", shape, gamma_init_, true, gamma_opt_});
    if (center_ && !rms_) w.push_back({"beta", shape, beta_init_, true, beta_opt_});
    return w;
  }
  int64_t aux_per_row(const std::vector<Shape>& in) const override {
    return 2 * (in[0].numel() / block(in[0]));
  }

  void forward(const ForwardArgs& a) const override {
    const int64_t cols = block(a.in_shapes[0]);
    const int64_t rows = a.rows * (a.in_shapes[0].numel() / cols);
    a.be.layer_norm_forward(rows, cols, a.in[0], gamma(a.params), beta(a.params),
                            static_cast<float>(epsilon_), rms_, a.aux, a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t cols = block(a.in_shapes[0]);
    const int64_t rows = a.rows * (a.in_shapes[0].numel() / cols);
    float* dgamma = has_gamma() ? a.grads[0] : nullptr;
    float* dbeta = has_beta() ? a.grads[has_gamma() ? 1 : 0] : nullptr;
    const float* g = has_gamma() ? a.params[0] : nullptr;
    // rows == 0 still writes zero parameter gradients (the op's contract).
    a.be.layer_norm_backward(rows, cols, a.d_out, a.in[0], g, a.aux, rms_, a.d_in[0], dgamma,
                             dbeta);
  }

  Json config() const override {
    Json c = base_config(name_);
    if (axis_is_list_) {
      c["axis"] = Json::array();
      for (int64_t a : axes_) c["axis"].push_back(a);
    } else {
      c["axis"] = axes_[0];
    }
    c["epsilon"] = epsilon_;
    c["center"] = center_;
    c["scale"] = scale_;
    c["rms_scaling"] = rms_;
    c["beta_initializer"] = initializer_to_keras(beta_init_);
    c["gamma_initializer"] = initializer_to_keras(gamma_init_);
    write_weight_options(c, {{"beta", &beta_opt_}, {"gamma", &gamma_opt_}});
    return c;
  }

 private:
  bool has_gamma() const { return scale_ || rms_; }
  bool has_beta() const { return center_ && !rms_; }
  const float* gamma(const std::vector<float*>& p) const { return has_gamma() ? p[0] : nullptr; }
  const float* beta(const std::vector<float*>& p) const {
    return has_beta() ? p[has_gamma() ? 1 : 0] : nullptr;
  }
  // Elements normalized together: the product of the trailing axes.
  int64_t block(const Shape& s) const {
    const int64_t k = trailing_axes(s);
    int64_t n = 1;
    for (int64_t i = s.rank() - k; i < s.rank(); ++i) n *= s[static_cast<int>(i)];
    return n;
  }
  // How many trailing per-sample axes `axis` names; throws unless they are
  // exactly the last k axes of the input (batch axis included in numbering).
  int64_t trailing_axes(const Shape& s) const {
    const int64_t ndim = s.rank() + 1;
    std::vector<int64_t> ax;
    for (int64_t a : axes_) {
      const int64_t p = a < 0 ? a + ndim : a;
      MR_CHECK(p >= 0 && p < ndim, shape, who_, ": axis ", a, " is out of range for input ",
               s.str_with_batch());
      MR_CHECK(std::find(ax.begin(), ax.end(), p) == ax.end(), value, who_,
               ": duplicate axes are not allowed, got axis ", a, " twice");
      ax.push_back(p);
    }
    std::sort(ax.begin(), ax.end());
    const auto k = static_cast<int64_t>(ax.size());
    bool trailing = ax.front() >= 1;
    for (int64_t i = 0; i < k; ++i)
      trailing = trailing && ax[static_cast<size_t>(i)] == ndim - k + i;
    MR_CHECK(trailing, value, who_,
             ": normalizing over axes other than the last ones (or over the batch axis) is not "
             "implemented yet; got axes for input ",
             s.str_with_batch());
    return k;
  }

  std::string name_, who_;
  std::vector<int64_t> axes_;
  bool axis_is_list_ = false;
  double epsilon_ = 1e-3;
  bool center_ = true, scale_ = true, rms_ = false;
  Initializer beta_init_, gamma_init_;
  WeightOptions beta_opt_, gamma_opt_;
};

}  // namespace

MR_REGISTER_LAYER(LayerNormalization, LayerNormalization)

}  // namespace mr
