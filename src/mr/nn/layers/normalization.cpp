// Normalization, as Keras 3's preprocessing layer:
// y = (x - mean) / max(sqrt(variance), 1e-7), or with invert = TRUE
// y = mean + x * max(sqrt(variance), 1e-7); the gradient passes through
// (dx = dy / s, or dy * s).
//
// Where mean and variance live (as in Keras):
// - given in the config (`mean`, `variance`: a number, or one value per
//   feature): constants of the layer, no weights. Each forward fills the
//   workspace with them (fill runs of equal values: a scalar costs two fills).
// - not given (null): three non-trainable weights in the state buffer, in
//   Keras' order and shapes: "mean" and "variance" (the kept axes' shape,
//   initialized to zeros and ones) and "count" (shape (), zeros; Keras keeps
//   it for old files and never reads it). adapt() in R computes the values
//   and writes them into these weights (R/layers-preprocessing.R), so
//   get_weights() and .keras files carry them, as Keras' do.
//
// Axes: Keras' `axis` lists the axes that keep their own statistics. mirrored
// implements the last axis (-1, [-1], or [rank - 1] as Keras writes it after
// build) and none (null or [], one scalar mean and variance); other axis sets
// are an error (value) saying they are not implemented yet.
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class Normalization final : public Layer {
 public:
  explicit Normalization(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    const Json* ax = r.take("axis");
    if (ax == nullptr) {
      axis_ = Json::array({-1});
    } else if (ax->is_null()) {
      axis_ = Json::array();
    } else if (ax->is_number_integer()) {
      axis_ = Json::array({ax->get<int64_t>()});
    } else if (ax->is_array() && ax->size() <= 1 && (ax->empty() || (*ax)[0].is_number_integer())) {
      axis_ = *ax;
    } else {
      r.bad("axis", "-1, the last axis, or null (other axes are not implemented yet)");
    }
    invert_ = r.boolean("invert", false);
    const Json* m = r.take("mean");
    const Json* v = r.take("variance");
    const bool has_m = m != nullptr && !m->is_null(), has_v = v != nullptr && !v->is_null();
    if (has_m != has_v) r.bad(has_m ? "variance" : "mean", "given together with the other");
    if (has_m) {
      mean_json_ = *m;
      var_json_ = *v;
      mean_ = values(r, "mean", *m);
      var_ = values(r, "variance", *v);
      if (mean_.size() != var_.size())
        r.bad("variance", "of the same length as mean (" + std::to_string(mean_.size()) + ")");
      if (axis_.empty() && mean_.size() != 1) r.bad("mean", "a number when axis is null");
    }
  }
  const char* class_name() const override { return "Normalization"; }

  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    const int64_t c = features(in[0]);
    MR_CHECK(mean_.size() <= 1 || static_cast<int64_t>(mean_.size()) == c, shape, who_,
             ": mean and variance have ", mean_.size(), " values, the input ",
             in[0].str_with_batch(), " has ", c, " features");
    return in[0];
  }
  std::vector<WeightSpec> weights(const std::vector<Shape>& in) const override {
    if (!mean_.empty()) return {};
    const Shape s = axis_.empty() ? Shape(std::vector<int64_t>{}) : Shape{features(in[0])};
    Initializer zeros, ones;
    ones.kind = Initializer::Kind::ones;
    return {{"mean", s, zeros, false},
            {"variance", s, ones, false},
            {"count", Shape(std::vector<int64_t>{}), zeros, false}};
  }
  int64_t work_floats(const std::vector<Shape>& in) const override {
    return mean_.empty() ? 0 : 2 * features(in[0]);
  }

  void forward(const ForwardArgs& a) const override {
    const int64_t c = features(a.in_shapes[0]);
    const int64_t rows = a.rows * a.in_shapes[0].numel() / c;
    const float* mean = a.state.empty() ? a.work : a.state[0];
    const float* var = a.state.empty() ? a.work + c : a.state[1];
    if (a.state.empty()) {
      fill_values(a.be, mean_, c, a.work);
      fill_values(a.be, var_, c, a.work + c);
    }
    if (rows > 0) a.be.normalize_columns(rows, c, a.in[0], mean, var, invert_, a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t c = features(a.in_shapes[0]);
    const int64_t rows = a.rows * a.in_shapes[0].numel() / c;
    if (rows == 0 || a.d_in[0] == nullptr) return;
    const float* var = a.state.empty() ? a.work + c : a.state[1];
    a.be.normalize_columns_backward(rows, c, a.d_out, var, invert_, a.d_in[0]);
  }

  Json config() const override {
    Json c = base_config(name_);
    c["axis"] = axis_;
    c["invert"] = invert_;
    c["mean"] = mean_.empty() ? Json(nullptr) : mean_json_;
    c["variance"] = mean_.empty() ? Json(nullptr) : var_json_;
    return c;
  }

 private:
  // Values that keep their own statistics: the last axis' size, or 1.
  int64_t features(const Shape& s) const {
    if (axis_.empty()) return 1;
    const int64_t ndim = s.rank() + 1;
    const int64_t a = axis_[0].get<int64_t>();
    MR_CHECK(s.rank() >= 1 && (a == -1 || a == ndim - 1), value, who_,
             ": statistics per index of an axis other than the last are not implemented yet; got "
             "axis ",
             a, " for input ", s.str_with_batch());
    return s.last();
  }
  static std::vector<float> values(ConfigReader& r, const char* key, const Json& j) {
    std::vector<float> out;
    if (j.is_number()) {
      out.push_back(j.get<float>());
    } else if (j.is_array() && !j.empty()) {
      for (const Json& x : j) {
        if (!x.is_number()) r.bad(key, "a number or a list of numbers");
        out.push_back(x.get<float>());
      }
    } else {
      r.bad(key, "a number or a list of numbers");
    }
    return out;
  }
  // dst[0..c) = v broadcast to c values, one fill per run of equal values.
  static void fill_values(Backend& be, const std::vector<float>& v, int64_t c, float* dst) {
    if (v.size() == 1) {
      be.fill(c, dst, v[0]);
      return;
    }
    for (int64_t i = 0; i < c;) {
      int64_t j = i + 1;
      while (j < c && v[static_cast<size_t>(j)] == v[static_cast<size_t>(i)]) ++j;
      be.fill(j - i, dst + i, v[static_cast<size_t>(i)]);
      i = j;
    }
  }

  std::string name_, who_;
  Json axis_ = Json::array({-1});
  bool invert_ = false;
  Json mean_json_, var_json_;
  std::vector<float> mean_, var_;
};

}  // namespace

MR_REGISTER_LAYER(Normalization, Normalization)

}  // namespace mr
