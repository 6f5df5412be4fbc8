// Initial values of parameters, computed on the host in double and rounded to
// float, then uploaded once (and broadcast to every replica). Formulas are
// Keras 3's: glorot_uniform U(-l, l) with l = sqrt(6 / (fan_in + fan_out));
// he_normal a normal of stddev sqrt(2 / fan_in) truncated at two stddevs;
// random_normal N(mean, stddev); random_uniform U(minval, maxval).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/shape.h"

namespace mr {

struct Initializer {
  enum class Kind {
    zeros,
    ones,
    constant,
    glorot_uniform,
    glorot_normal,
    he_normal,
    he_uniform,
    random_normal,
    random_uniform
  };
  Kind kind = Kind::zeros;
  double a = 0.0;  // constant: value; random_normal: mean; random_uniform: minval
  double b = 0.0;  // random_normal: stddev; random_uniform: maxval
  uint64_t seed = 0;
  // Whether the Keras config named the seed (written back) or it was drawn
  // for an unseeded initializer (written as null, as Keras does).
  bool seed_given = false;
};

Initializer::Kind initializer_kind(const std::string& name);
const char* initializer_name(Initializer::Kind kind);

// Keras' serialized initializer ({"module": "keras.initializers", "class_name":
// "GlorotUniform", "config": {...}, "registered_name": null}) or its string
// form ("glorot_uniform"), and back. `seed` is used when the config has none.
Initializer initializer_from_keras(const Json& j, uint64_t seed, const std::string& what);
Json initializer_to_keras(const Initializer& init);

// Fills `out` (shape.numel() values, row-major) for a variable of `shape`.
// Fans follow Keras: for a 2-D kernel (in, out) fan_in = in, fan_out = out.
void initialize(const Initializer& init, const Shape& shape, uint32_t stream,
                std::vector<float>& out);

}  // namespace mr
