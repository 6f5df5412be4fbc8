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
    // Keras' alias (Embedding's default); names above win in initializer_name().
    {"uniform", Initializer::Kind::random_uniform},
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

namespace mr {

namespace {

struct KerasClass {
  const char* class_name;
  Initializer::Kind kind;
  bool seeded;
};
constexpr KerasClass kKerasClasses[] = {
    {"Zeros", Initializer::Kind::zeros, false},
    {"Ones", Initializer::Kind::ones, false},
    {"Constant", Initializer::Kind::constant, false},
    {"GlorotUniform", Initializer::Kind::glorot_uniform, true},
    {"GlorotNormal", Initializer::Kind::glorot_normal, true},
    {"HeNormal", Initializer::Kind::he_normal, true},
    {"HeUniform", Initializer::Kind::he_uniform, true},
    {"RandomNormal", Initializer::Kind::random_normal, true},
    {"RandomUniform", Initializer::Kind::random_uniform, true},
};

bool variance_scaling(Initializer::Kind k) {
  return k == Initializer::Kind::glorot_uniform || k == Initializer::Kind::glorot_normal ||
         k == Initializer::Kind::he_normal || k == Initializer::Kind::he_uniform;
}

double number_or(const Json& cfg, const char* key, double def, const std::string& what) {
  if (!cfg.contains(key) || cfg[key].is_null()) return def;
  MR_CHECK(cfg[key].is_number(), value, what, ": initializer option '", key,
           "' must be a number, got ", cfg[key].dump());
  return cfg[key].get<double>();
}

}  // namespace

Initializer initializer_from_keras(const Json& j, uint64_t seed, const std::string& what) {
  Initializer init;
  std::string cls;
  Json cfg = Json::object();
  if (j.is_string()) {
    const std::string name = j.get<std::string>();
    init.kind = initializer_kind(name);
  } else {
    MR_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(), value, what,
             ": an initializer must be a name or a Keras config, got ", j.dump());
    cls = j["class_name"].get<std::string>();
    if (j.contains("config") && j["config"].is_object()) cfg = j["config"];
    bool found = false;
    for (const auto& kc : kKerasClasses)
      if (cls == kc.class_name) {
        init.kind = kc.kind;
        found = true;
      }
    MR_CHECK(found, value, what, ": initializer class '", cls, "' is not supported");
  }
  if (cfg.contains("seed") && !cfg["seed"].is_null()) {
    MR_CHECK(cfg["seed"].is_number_integer() && cfg["seed"].get<int64_t>() >= 0, value, what,
             ": initializer seed must be a non-negative integer, got ", cfg["seed"].dump());
    init.seed = cfg["seed"].get<uint64_t>();
    init.seed_given = true;
  } else {
    init.seed = seed;
  }
  switch (init.kind) {
    case Initializer::Kind::constant:
      init.a = number_or(cfg, "value", 0.0, what);
      break;
    case Initializer::Kind::random_normal:
      init.a = number_or(cfg, "mean", 0.0, what);
      init.b = number_or(cfg, "stddev", 0.05, what);
      MR_CHECK(init.b >= 0, value, what, ": stddev must be >= 0, got ", init.b);
      break;
    case Initializer::Kind::random_uniform:
      init.a = number_or(cfg, "minval", -0.05, what);
      init.b = number_or(cfg, "maxval", 0.05, what);
      break;
    default:
      break;
  }
  return init;
}

Json initializer_to_keras(const Initializer& init) {
  const KerasClass* kc = &kKerasClasses[0];
  for (const auto& k : kKerasClasses)
    if (k.kind == init.kind) kc = &k;
  Json cfg = Json::object();
  const Json seed = init.seed_given ? Json(init.seed) : Json(nullptr);
  if (init.kind == Initializer::Kind::constant) cfg["value"] = init.a;
  if (init.kind == Initializer::Kind::random_normal) {
    cfg["seed"] = seed;
    cfg["mean"] = init.a;
    cfg["stddev"] = init.b;
  } else if (init.kind == Initializer::Kind::random_uniform) {
    cfg["seed"] = seed;
    cfg["minval"] = init.a;
    cfg["maxval"] = init.b;
  } else if (variance_scaling(init.kind)) {
    cfg["seed"] = seed;
    cfg["input_axes"] = nullptr;
    cfg["output_axes"] = nullptr;
  }
  return Json{{"module", "keras.initializers"},
              {"class_name", kc->class_name},
              {"config", cfg},
              {"registered_name", nullptr}};
}

}  // namespace mr
