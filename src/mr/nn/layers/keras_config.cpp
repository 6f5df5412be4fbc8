#include "nn/layers/keras_config.h"

#include "core/error.h"
#include "nn/dtype_policy.h"
#include "nn/regularization.h"

namespace mr {

uint64_t derive_seed(uint64_t seed, int k) {
  // splitmix64 finaliser: distinct, well-mixed seeds for the layer's parts.
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(k + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) & 0x7fffffffULL;
}

ConfigReader::ConfigReader(const char* class_name, const Json& config, uint64_t seed)
    : class_name_(class_name), cfg_(config), seed_(seed) {
  MR_CHECK(cfg_.is_object(), value, class_name_, ": the config must be an object, got ",
           cfg_.dump());
  const Json* n = get("name");
  MR_CHECK(n != nullptr && n->is_string() && !n->get<std::string>().empty(), value, class_name_,
           ": the config needs a non-empty string 'name'");
  name_ = n->get<std::string>();
  // trainable is read, not kept: whether a layer trains is fixed per compile
  // (CompileConfig::frozen), as in Keras, so the R side owns the flag.
  if (const Json* t = get("trainable"))
    MR_CHECK(t->is_boolean(), value, who(), ": 'trainable' must be true or false, got ", t->dump());
  // The dtype policy: make_layer() keeps it on the layer (Layer::
  // dtype_policy()); here it is only checked, so that every layer refuses a
  // policy mirrored does not implement with the same message.
  // InputLayer's "dtype" is its tensor's dtype (InputLayer checks it).
  if (class_name_ != "InputLayer")
    if (const Json* d = get("dtype")) parse_dtype_policy(*d, who());
}

std::string ConfigReader::who() const { return class_name_ + " '" + name_ + "'"; }

const Json* ConfigReader::get(const char* key) {
  seen_.insert(key);
  auto it = cfg_.find(key);
  return it == cfg_.end() ? nullptr : &*it;
}

void ConfigReader::bad(const char* key, const std::string& expected) const {
  auto it = cfg_.find(key);
  fail(ErrorKind::value, who(), ": '", key, "' must be ", expected, ", got ",
       it == cfg_.end() ? std::string("nothing") : it->dump());
}

int64_t ConfigReader::integer(const char* key, int64_t def, int64_t min) {
  const Json* v = get(key);
  if (v == nullptr || v->is_null()) return def;
  int64_t x = 0;
  if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else if (v->is_number_float() &&
             v->get<double>() == static_cast<double>(static_cast<int64_t>(v->get<double>()))) {
    x = static_cast<int64_t>(v->get<double>());
  } else {
    bad(key, "an integer");
  }
  if (x < min) bad(key, "an integer >= " + std::to_string(min));
  return x;
}

double ConfigReader::number(const char* key, double def) {
  const Json* v = get(key);
  if (v == nullptr || v->is_null()) return def;
  if (!v->is_number()) bad(key, "a number");
  return v->get<double>();
}

bool ConfigReader::boolean(const char* key, bool def) {
  const Json* v = get(key);
  if (v == nullptr || v->is_null()) return def;
  if (!v->is_boolean()) bad(key, "TRUE or FALSE");
  return v->get<bool>();
}

std::string ConfigReader::string(const char* key, const std::string& def) {
  const Json* v = get(key);
  if (v == nullptr || v->is_null()) return def;
  if (!v->is_string()) bad(key, "a string");
  return v->get<std::string>();
}

Activation ConfigReader::activation(const char* key) {
  const Json* v = get(key);
  if (v == nullptr || v->is_null()) return Activation::linear;
  if (!v->is_string()) bad(key, "the name of an activation");
  return activation_from_name(v->get<std::string>());
}

Initializer ConfigReader::initializer(const char* key, const char* def, int k) {
  const Json* v = get(key);
  const uint64_t s = derive_seed(seed_, k);
  if (v == nullptr || v->is_null()) return initializer_from_keras(Json(def), s, who());
  return initializer_from_keras(*v, s, who() + " " + key);
}

uint64_t ConfigReader::seed(const char* key, bool* given) {
  const Json* v = get(key);
  *given = v != nullptr && !v->is_null();
  if (!*given) return derive_seed(seed_, 100);
  if (!v->is_number_integer() || v->get<int64_t>() < 0) bad(key, "a non-negative integer or null");
  return v->get<uint64_t>();
}

WeightOptions ConfigReader::weight_options(const char* weight) {
  WeightOptions o;
  const std::string reg = std::string(weight) + "_regularizer";
  const std::string con = std::string(weight) + "_constraint";
  if (const Json* v = get(reg.c_str())) o.regularizer = keras_regularizer(*v, who() + " " + reg);
  if (const Json* v = get(con.c_str())) o.constraint = keras_constraint(*v, who() + " " + con);
  return o;
}

Json ConfigReader::activity_regularizer() {
  const Json* v = get("activity_regularizer");
  if (v == nullptr) return nullptr;
  Json r = keras_regularizer(*v, who() + " activity_regularizer");
  // Keras applies it to the whole batch's output: its pairs of rows would
  // span replicas, so the value would depend on the replica count.
  MR_CHECK(r.is_null() || r["class_name"] != "OrthogonalRegularizer", value, who(),
           ": OrthogonalRegularizer is supported as a weight regularizer only, not as "
           "activity_regularizer");
  return r;
}

void write_weight_options(
    Json& config, const std::vector<std::pair<const char*, const WeightOptions*>>& weights) {
  for (const auto& w : weights)
    config[std::string(w.first) + "_regularizer"] = w.second->regularizer;
  for (const auto& w : weights) config[std::string(w.first) + "_constraint"] = w.second->constraint;
}

void ConfigReader::must_be_null(const char* key) {
  const Json* v = get(key);
  if (v != nullptr && !v->is_null()) bad(key, "null (the option is not supported yet)");
}

void ConfigReader::must_equal(const char* key, const Json& def) {
  const Json* v = get(key);
  if (v != nullptr && !v->is_null() && *v != def)
    bad(key, def.dump() + " (other values are not supported yet)");
}

void ConfigReader::finish() {
  for (auto it = cfg_.begin(); it != cfg_.end(); ++it)
    MR_CHECK(seen_.count(it.key()) != 0, value, who(), ": unknown option '", it.key(), "'");
}

Json base_config(const std::string& name) {
  return Json{{"name", name},
              {"trainable", true},
              {"dtype",
               {{"module", "keras"},
                {"class_name", "DTypePolicy"},
                {"config", {{"name", "float32"}}},
                {"registered_name", nullptr}}}};
}

namespace {

// Keras 3's names (keras.activations.serialize), in Activation order.
struct ActivationEntry {
  Activation act;
  const char* name;
};
constexpr ActivationEntry kActivations[] = {{Activation::linear, "linear"},
                                            {Activation::relu, "relu"},
                                            {Activation::sigmoid, "sigmoid"},
                                            {Activation::tanh, "tanh"},
                                            {Activation::softmax, "softmax"},
                                            {Activation::gelu, "gelu"},
                                            {Activation::elu, "elu"},
                                            {Activation::selu, "selu"},
                                            {Activation::silu, "silu"},
                                            {Activation::leaky_relu, "leaky_relu"},
                                            {Activation::relu6, "relu6"},
                                            {Activation::softplus, "softplus"},
                                            {Activation::softsign, "softsign"},
                                            {Activation::hard_sigmoid, "hard_sigmoid"},
                                            {Activation::hard_silu, "hard_silu"},
                                            {Activation::exponential, "exponential"},
                                            {Activation::mish, "mish"},
                                            {Activation::log_softmax, "log_softmax"}};

}  // namespace

Activation activation_from_name(const std::string& name) {
  if (name.empty()) return Activation::linear;
  // Keras' aliases (keras.activations.get): swish is silu, hard_swish is hard_silu.
  if (name == "swish") return Activation::silu;
  if (name == "hard_swish") return Activation::hard_silu;
  std::string known;
  for (const ActivationEntry& e : kActivations) {
    if (name == e.name) return e.act;
    known += std::string(known.empty() ? "" : ", ") + e.name;
  }
  fail(ErrorKind::value, "unknown activation '", name, "' (expected one of ", known,
       ", swish, hard_swish)");
}

const char* activation_name(Activation act) {
  for (const ActivationEntry& e : kActivations)
    if (e.act == act) return e.name;
  return "linear";
}

}  // namespace mr
