#include "nn/initializer.h"

#include <cmath>

#include "core/error.h"
#include "core/rng.h"

namespace mr {

namespace {

struct NameKind {
  const char* name;
  Initializer::Kind kind;
};
constexpr NameKind kNames[] = {
    {"zeros", Initializer::Kind::zeros},
    {"ones", Initializer::Kind::ones},
    {"constant", Initializer::Kind::constant},
    {"glorot_uniform", Initializer::Kind::glorot_uniform},
    {"glorot_normal", Initializer::Kind::glorot_normal},
    {"he_normal", Initializer::Kind::he_normal},
    {"he_uniform", Initializer::Kind::he_uniform},
    {"random_normal", Initializer::Kind::random_normal},
    {"random_uniform", Initializer::Kind::random_uniform},
};

// Keras' compute_fans: the receptive field multiplies both fans for kernels of
// rank > 2; a vector has fan_in = fan_out = its length.
void fans(const Shape& shape, double& fan_in, double& fan_out) {
  if (shape.rank() == 0) {
    fan_in = fan_out = 1;
  } else if (shape.rank() == 1) {
    fan_in = fan_out = static_cast<double>(shape[0]);
  } else {
    double receptive = 1;
    for (int i = 0; i + 2 < shape.rank(); ++i) receptive *= static_cast<double>(shape[i]);
    fan_in = static_cast<double>(shape[shape.rank() - 2]) * receptive;
    fan_out = static_cast<double>(shape[shape.rank() - 1]) * receptive;
  }
}

// A normal truncated at two standard deviations by redrawing, as Keras'
// truncated_normal does; draw k of element i uses stream index i * 64 + k.
double truncated_normal(const RandomStream& rs, uint64_t i) {
  for (uint64_t k = 0; k < 64; ++k) {
    const double z = rs.normal(i * 64 + k);
    if (std::fabs(z) <= 2.0) return z;
  }
  return 0.0;  // probability of 64 rejections is ~1e-86
}

}  // namespace

Initializer::Kind initializer_kind(const std::string& name) {
  for (const auto& nk : kNames)
    if (name == nk.name) return nk.kind;
  fail(ErrorKind::value, "unknown initializer '", name, "'");
}

const char* initializer_name(Initializer::Kind kind) {
  for (const auto& nk : kNames)
    if (kind == nk.kind) return nk.name;
  return "zeros";
}

void initialize(const Initializer& init, const Shape& shape, uint32_t stream,
                std::vector<float>& out) {
  const int64_t n = shape.numel();
  out.assign(static_cast<size_t>(n), 0.0f);
  double fan_in = 1, fan_out = 1;
  fans(shape, fan_in, fan_out);
  const RandomStream rs(init.seed, 0, stream);
  // Variance scaling with truncation divides the stddev by the stddev of a
  // standard normal truncated to [-2, 2], as Keras does.
  constexpr double kTruncatedStd = 0.87962566103423978;
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<uint64_t>(i);
    double v = 0.0;
    switch (init.kind) {
      case Initializer::Kind::zeros:
        v = 0.0;
        break;
      case Initializer::Kind::ones:
        v = 1.0;
        break;
      case Initializer::Kind::constant:
        v = init.a;
        break;
      case Initializer::Kind::glorot_uniform: {
        const double limit = std::sqrt(6.0 / (fan_in + fan_out));
        v = (2.0 * rs.uniform_double(u) - 1.0) * limit;
        break;
      }
      case Initializer::Kind::glorot_normal:
        v = truncated_normal(rs, u) * std::sqrt(2.0 / (fan_in + fan_out)) / kTruncatedStd;
        break;
      case Initializer::Kind::he_normal:
        v = truncated_normal(rs, u) * std::sqrt(2.0 / fan_in) / kTruncatedStd;
        break;
      case Initializer::Kind::he_uniform: {
        const double limit = std::sqrt(6.0 / fan_in);
        v = (2.0 * rs.uniform_double(u) - 1.0) * limit;
        break;
      }
      case Initializer::Kind::random_normal:
        v = init.a + init.b * rs.normal(u);
        break;
      case Initializer::Kind::random_uniform:
        v = init.a + (init.b - init.a) * rs.uniform_double(u);
        break;
    }
    out[static_cast<size_t>(i)] = static_cast<float>(v);
  }
}

}  // namespace mr
