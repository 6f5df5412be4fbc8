// The layer classes behind ZeroPadding1D/2D and Cropping1D/2D (their files
// register them): a per-sample tensor (spatial axes..., channels) grows by
// zero borders or loses borders on each spatial axis. Forward and backward
// are window copies (strided_copy): padding's backward is cropping's forward
// and the other way round.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

// Keras' padding / cropping for `N` spatial axes: an int (every border), a
// list of N ints (symmetric per axis) or, for N == 2, a list of N pairs. N ==
// 1 takes an int or one pair. Returns (before, after) per axis.
template <int N>
std::vector<std::array<int64_t, 2>> read_borders(ConfigReader& r, const char* key, int64_t def) {
  std::vector<std::array<int64_t, 2>> out(N, {def, def});
  const Json* v = r.take(key);
  if (v == nullptr || v->is_null()) return out;
  const std::string expected =
      N == 1 ? "a non-negative integer or a pair of them"
             : "a non-negative integer, a list of 2 of them, or a list of 2 pairs of them";
  auto one = [&](const Json& x) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0) r.bad(key, expected);
    return x.get<int64_t>();
  };
  if (v->is_number()) {
    const int64_t p = one(*v);
    for (auto& b : out) b = {p, p};
    return out;
  }
  if (!v->is_array()) r.bad(key, expected);
  if (N == 1) {
    if (v->size() != 2) r.bad(key, expected);
    out[0] = {one((*v)[0]), one((*v)[1])};
    return out;
  }
  if (v->size() != N) r.bad(key, expected);
  for (size_t k = 0; k < N; ++k) {
    const Json& e = (*v)[k];
    if (e.is_array()) {
      if (e.size() != 2) r.bad(key, expected);
      out[k] = {one(e[0]), one(e[1])};
    } else {
      const int64_t p = one(e);
      out[k] = {p, p};
    }
  }
  return out;
}

template <int N>
class SpatialWindow final : public Layer {
 public:
  // pad: ZeroPadding (key "padding", default 1 per border); else Cropping
  // (key "cropping", default crop_def per border). Cropping1D has no
  // data_format option in Keras.
  SpatialWindow(ConfigReader& r, const char* cls, bool pad, int64_t def, bool has_data_format)
      : cls_(cls), name_(r.name()), who_(r.who()), pad_(pad), has_df_(has_data_format) {
    borders_ = read_borders<N>(r, pad ? "padding" : "cropping", def);
    if (has_df_) channels_last_only(r);
  }
  const char* class_name() const override { return cls_; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    MR_CHECK(in[0].rank() == N + 1, shape, who_, " needs inputs of rank ", N + 2, " (batch, ",
             N == 1 ? "steps" : "rows, cols", ", channels), got ", in[0].str_with_batch());
    std::vector<int64_t> d = in[0].dims();
    for (int k = 0; k < N; ++k) {
      const int64_t b = borders_[static_cast<size_t>(k)][0] + borders_[static_cast<size_t>(k)][1];
      MR_CHECK(pad_ || b < d[static_cast<size_t>(k)], shape, who_, ": cropping ", b,
               " from spatial axis ", k + 1, " of inputs of shape ", in[0].str_with_batch(),
               " leaves nothing");
      d[static_cast<size_t>(k)] += pad_ ? b : -b;
    }
    return Shape(d);
  }
  void forward(const ForwardArgs& a) const override {
    const Shape& s = a.in_shapes[0];
    const Shape o = output_shape(a.in_shapes);
    if (pad_) {
      a.be.fill(a.rows * o.numel(), a.out, 0.0f);
      copy_window(a.be, a.rows, s, zeros(), o, before(), s.dims(), a.in[0], a.out);
    } else {
      copy_window(a.be, a.rows, s, before(), o, zeros(), o.dims(), a.in[0], a.out);
    }
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] == nullptr) return;
    const Shape& s = a.in_shapes[0];
    const Shape o = output_shape(a.in_shapes);
    if (pad_) {
      copy_window(a.be, a.rows, o, before(), s, zeros(), s.dims(), a.d_out, a.d_in[0]);
    } else {
      a.be.fill(a.rows * s.numel(), a.d_in[0], 0.0f);
      copy_window(a.be, a.rows, o, zeros(), s, before(), o.dims(), a.d_out, a.d_in[0]);
    }
  }
  Json config() const override {
    Json c = base_config(name_);
    Json b;
    if (N == 1) {
      b = Json::array({borders_[0][0], borders_[0][1]});
    } else {
      b = Json::array();
      for (const auto& p : borders_) b.push_back(Json::array({p[0], p[1]}));
    }
    c[pad_ ? "padding" : "cropping"] = b;
    if (has_df_) c["data_format"] = "channels_last";
    return c;
  }

 private:
  // Origins over every per-sample axis (spatial ones, then channels).
  std::vector<int64_t> zeros() const { return std::vector<int64_t>(N + 1, 0); }
  std::vector<int64_t> before() const {
    std::vector<int64_t> o(N + 1, 0);
    for (int k = 0; k < N; ++k) o[static_cast<size_t>(k)] = borders_[static_cast<size_t>(k)][0];
    return o;
  }

  const char* cls_;
  std::string name_, who_;
  bool pad_, has_df_;
  std::vector<std::array<int64_t, 2>> borders_;
};

}  // namespace mr
