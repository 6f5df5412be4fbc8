// What the convolution and pooling layer files share: reading Keras' tuple,
// padding and data_format options, and the output size rule (Keras' and
// TensorFlow's: "valid" keeps the windows that fit, "same" gives
// ceil(in / stride) outputs with half of the needed zeros before, rounded
// down, and the rest after).
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "core/conv_geometry.h"
#include "core/error.h"
#include "nn/layers/keras_config.h"

namespace mr {

// A Keras tuple option: an integer (repeated `rank` times) or a list of
// `rank` integers, each >= 1. Absent or null gives `def`.
inline std::vector<int64_t> read_tuple(ConfigReader& r, const char* key, int rank,
                                       const std::vector<int64_t>& def) {
  const Json* v = r.take(key);
  if (v == nullptr || v->is_null()) return def;
  const std::string expected = rank == 1
                                   ? "a positive integer"
                                   : "a positive integer or " + std::to_string(rank) + " of them";
  std::vector<int64_t> out;
  auto one = [&](const Json& e) {
    if (!e.is_number_integer() || e.get<int64_t>() < 1) r.bad(key, expected);
    out.push_back(e.get<int64_t>());
  };
  if (v->is_array()) {
    if (static_cast<int>(v->size()) != rank) r.bad(key, expected);
    for (const Json& e : *v) one(e);
  } else {
    one(*v);
    out.assign(static_cast<size_t>(rank), out[0]);
  }
  return out;
}

inline Json tuple_json(const std::vector<int64_t>& t) {
  Json a = Json::array();
  for (int64_t v : t) a.push_back(v);
  return a;
}

// "valid" or "same" (Keras lower-cases it; "causal" is not supported).
inline std::string read_padding(ConfigReader& r) {
  std::string p = r.string("padding", "valid");
  for (char& ch : p) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (p != "valid" && p != "same") r.bad("padding", "\"valid\" or \"same\"");
  return p;
}

// data_format: null or "channels_last"; "channels_first" is refused.
inline void read_data_format(ConfigReader& r) {
  const Json* v = r.take("data_format");
  if (v == nullptr || v->is_null()) return;
  if (v->is_string() && v->get<std::string>() == "channels_last") return;
  r.bad("data_format",
        "\"channels_last\" or null (mirrored supports channels_last only; channels_first is not "
        "supported)");
}

// Output length along one axis and the zeros before the first element, for a
// window of k elements spaced `dil` apart moved by `stride`. Returns < 1 when
// the window does not fit ("valid" on a too small input).
inline int64_t spatial_out(int64_t in, int64_t k, int64_t stride, int64_t dil, bool same,
                           int64_t* pad_before) {
  const int64_t span = (k - 1) * dil + 1;
  if (!same) {
    *pad_before = 0;
    return in >= span ? (in - span) / stride + 1 : 0;
  }
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + span - in, 0);
  *pad_before = total / 2;
  return out;
}

// The per-sample input of a `rank`-D spatial layer: (W, C) or (H, W, C).
// Fills in_h/in_w/in_c of `g` or throws mr::Error (shape) naming `who`.
inline void spatial_input(const std::string& who, const Shape& in, int rank, ConvGeometry* g) {
  MR_CHECK(in.rank() == rank + 1, shape, who, " needs an input of rank ", rank + 2, " (batch, ",
           rank == 2 ? "height, width" : "steps", ", channels), got ", in.str_with_batch());
  g->in_h = rank == 2 ? in[0] : 1;
  g->in_w = in[rank - 1];
  g->in_c = in[rank];
}

inline std::string tuple_str(const std::vector<int64_t>& t) {
  std::string s;
  for (size_t i = 0; i < t.size(); ++i) s += (i ? "x" : "") + std::to_string(t[i]);
  return s;
}

// Fills the output size and padding of `g` (in_* set) for windows `k`,
// strides `s` and dilations `d` (rank entries each) or throws mr::Error
// (shape) when the window does not fit the (padded) input.
inline void spatial_output(const std::string& who, int rank, const std::vector<int64_t>& k,
                           const std::vector<int64_t>& s, const std::vector<int64_t>& d, bool same,
                           const char* window_arg, ConvGeometry* g) {
  const int off = rank == 2 ? 0 : -1;  // index of the height entry (none in 1-D)
  g->k_h = off < 0 ? 1 : k[0];
  g->stride_h = off < 0 ? 1 : s[0];
  g->dil_h = off < 0 ? 1 : d[0];
  g->k_w = k[rank - 1];
  g->stride_w = s[rank - 1];
  g->dil_w = d[rank - 1];
  g->out_h = spatial_out(g->in_h, g->k_h, g->stride_h, g->dil_h, same, &g->pad_top);
  g->out_w = spatial_out(g->in_w, g->k_w, g->stride_w, g->dil_w, same, &g->pad_left);
  MR_CHECK(
      g->out_h >= 1 && g->out_w >= 1, shape, who, ": ", window_arg, " ", tuple_str(k),
      (tuple_str(d) == tuple_str(std::vector<int64_t>(k.size(), 1))
           ? std::string()
           : " with dilation_rate " + tuple_str(d)),
      " is larger than the input (",
      rank == 2 ? std::to_string(g->in_h) + "x" + std::to_string(g->in_w) : std::to_string(g->in_w),
      ") with padding \"valid\"; the output would be empty");
}

}  // namespace mr
