// Helpers of the reshaping and merging layers: the strided_copy boxes they
// issue (windows of a tensor, permutes, repeats) and the per-sample shape
// checks they share. A batch of `rows` samples of per-sample shape s is the
// row-major tensor (rows, s...).
#pragma once

#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/shape.h"
#include "nn/layers/keras_config.h"

namespace mr {

// Row-major strides (in floats) of the batched tensor (rows, s...): the
// stride of the batch axis first.
inline std::vector<int64_t> batched_strides(const Shape& s) {
  std::vector<int64_t> st(static_cast<size_t>(s.rank()) + 1, 1);
  for (int k = s.rank() - 1; k >= 0; --k)
    st[static_cast<size_t>(k)] = st[static_cast<size_t>(k) + 1] * s[k];
  return st;
}

// The box (rows, extent...) with the given source and destination strides
// (one per box axis, batch axis first).
inline StridedCopy make_box(int64_t rows, const std::vector<int64_t>& extent,
                            const std::vector<int64_t>& src_stride,
                            const std::vector<int64_t>& dst_stride) {
  StridedCopy c;
  c.rank = static_cast<int>(extent.size()) + 1;
  MR_CHECK(c.rank <= kMaxStridedRank, value, "tensors of rank ", c.rank,
           " (with the batch axis) are not supported by reshaping layers yet (at most ",
           kMaxStridedRank, ")");
  c.dims[0] = rows;
  for (size_t k = 0; k < extent.size(); ++k) c.dims[k + 1] = extent[k];
  for (int k = 0; k < c.rank; ++k) {
    c.src_stride[k] = src_stride[static_cast<size_t>(k)];
    c.dst_stride[k] = dst_stride[static_cast<size_t>(k)];
  }
  return c;
}

// Copies the window of `extent` at `src_origin` of the batch src (per-sample
// shape src_shape) to the window at `dst_origin` of the batch dst, sample by
// sample: crops and pads, forward and backward.
inline void copy_window(Backend& be, int64_t rows, const Shape& src_shape,
                        const std::vector<int64_t>& src_origin, const Shape& dst_shape,
                        const std::vector<int64_t>& dst_origin, const std::vector<int64_t>& extent,
                        const float* src, float* dst) {
  const std::vector<int64_t> ss = batched_strides(src_shape), ds = batched_strides(dst_shape);
  int64_t so = 0, doff = 0;
  for (size_t k = 0; k < extent.size(); ++k) {
    so += src_origin[k] * ss[k + 1];
    doff += dst_origin[k] * ds[k + 1];
  }
  be.strided_copy(make_box(rows, extent, ss, ds), src + so, dst + doff);
}

// Keras' axis argument (counting the batch axis as 0; negative from the end)
// as a per-sample axis 0..rank-1; throws for the batch axis or out of range.
inline int per_sample_axis(const std::string& who, const char* what, int64_t axis, int rank) {
  const int64_t a = axis < 0 ? axis + rank + 1 : axis;
  MR_CHECK(a >= 1 && a <= rank, shape, who, ": ", what, " ", axis,
           " is out of range for inputs of rank ", rank + 1, " (batch axis included)");
  return static_cast<int>(a - 1);
}

// The check of element-wise merge layers: at least `min` inputs (exactly
// `min` when `exact`), all of one shape; returns that shape.
inline Shape merge_shape(const std::string& who, const std::vector<Shape>& in, size_t min,
                         bool exact) {
  MR_CHECK(exact ? in.size() == min : in.size() >= min, shape, who, " needs ",
           exact ? "exactly " : "at least ", min, " inputs, got ", in.size());
  for (size_t k = 1; k < in.size(); ++k)
    MR_CHECK(in[k] == in[0], shape, who, " needs inputs of one shape, got ", in[0].str_with_batch(),
             " and ", in[k].str_with_batch());
  return in[0];
}

// A config option that is an integer or a list of `n` integers (Keras'
// standardize_tuple), each >= min; `def` when absent or null.
inline std::vector<int64_t> int_tuple(ConfigReader& r, const char* key, size_t n,
                                      std::vector<int64_t> def, int64_t min) {
  const Json* v = r.take(key);
  if (v == nullptr || v->is_null()) return def;
  const std::string expected = "an integer >= " + std::to_string(min) + " or a list of " +
                               std::to_string(n) + " such integers";
  auto one = [&](const Json& x) {
    if (!x.is_number_integer() || x.get<int64_t>() < min) r.bad(key, expected);
    return x.get<int64_t>();
  };
  if (v->is_number()) return std::vector<int64_t>(n, one(*v));
  if (!v->is_array() || v->size() != n) r.bad(key, expected);
  std::vector<int64_t> out;
  for (const Json& x : *v) out.push_back(one(x));
  return out;
}

// Keras' data_format: only channels_last (null means it) is supported.
inline void channels_last_only(ConfigReader& r) {
  const std::string f = r.string("data_format", "channels_last");
  if (f != "channels_last")
    r.bad("data_format", "\"channels_last\" (channels_first is not supported yet)");
}

}  // namespace mr
