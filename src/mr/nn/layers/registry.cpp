#include "nn/layers/registry.h"

#include <sstream>

#include "core/error.h"
#include "nn/dtype_policy.h"
#include "nn/layers/traced_layer.h"  // i15-users

// One line per layer type: X(KerasClassName). The file nn/layers/<name>.cpp
// defines make_layer_<KerasClassName>() with MR_REGISTER_LAYER.
#define MR_LAYER_TYPES(X) \
  X(InputLayer)           \
  X(Dense)                \
  X(Activation)           \
  X(Dropout)              \
  X(Flatten)              \
  X(BatchNormalization)   \
  X(Add)                  \
  X(LayerNormalization)   \
  X(Normalization)        \
  X(Rescaling)            \
  X(Embedding)            \
  X(Reshape)              \
  X(Permute)              \
  X(RepeatVector)         \
  X(ZeroPadding1D)        \
  X(ZeroPadding2D)        \
  X(Cropping1D)           \
  X(Cropping2D)           \
  X(UpSampling1D)         \
  X(UpSampling2D)         \
  X(Concatenate)          \
  X(Subtract)             \
  X(Multiply)             \
  X(Average)              \
  X(Maximum)              \
  X(Minimum)              \
  X(Dot)                  \
  X(ReLU)                 \
  X(LeakyReLU)            \
  X(ELU)                  \
  X(Softmax)              \
  X(Conv1D)               \
  X(Conv2D)               \
  X(MaxPooling1D)         \
  X(MaxPooling2D)         \
  X(AveragePooling1D)     \
  X(AveragePooling2D)     \
  X(GlobalMaxPooling1D)   \
  X(GlobalMaxPooling2D)   \
  X(GlobalAveragePooling1D) \
  X(GlobalAveragePooling2D)

namespace mr {

#define MR_DECLARE_FACTORY(cls) \
  std::unique_ptr<Layer> make_layer_##cls(const Json& config, uint64_t seed);
MR_LAYER_TYPES(MR_DECLARE_FACTORY)
#undef MR_DECLARE_FACTORY

namespace {

struct LayerType {
  const char* class_name;
  std::unique_ptr<Layer> (*make)(const Json&, uint64_t);
};

#define MR_TABLE_ENTRY(cls) {#cls, &make_layer_##cls},
constexpr LayerType kLayerTypes[] = {MR_LAYER_TYPES(MR_TABLE_ENTRY)};
#undef MR_TABLE_ENTRY

}  // namespace

std::unique_ptr<Layer> make_layer(const std::string& class_name, const Json& config,
                                  uint64_t seed) {
  // ---- i15-users: a config carrying a traced graph is a traced layer,
  // whatever its (the user's) class name (nn/layers/traced_layer.h) ----
  if (config.is_object() && config.contains("mirrored_graph")) {
    std::unique_ptr<Layer> layer = make_traced_layer(class_name, config, seed);
    if (config.contains("dtype"))
      layer->set_dtype_policy(parse_dtype_policy(config["dtype"], class_name));
    return layer;
  }
  for (const LayerType& t : kLayerTypes)
    if (class_name == t.class_name) {
      std::unique_ptr<Layer> layer = t.make(config, seed);
      // The factory's ConfigReader has checked "dtype" (parse_dtype_policy);
      // InputLayer's "dtype" is its tensor's dtype, not a policy.
      if (class_name != "InputLayer" && config.is_object() && config.contains("dtype"))
        layer->set_dtype_policy(parse_dtype_policy(config["dtype"], class_name));
      return layer;
    }
  std::ostringstream known;
  for (const LayerType& t : kLayerTypes) known << (&t == kLayerTypes ? "" : ", ") << t.class_name;
  fail(ErrorKind::value, "unknown layer class '", class_name, "' (mirrored has ", known.str(), ")");
}

Json layer_config(const Layer& layer) {
  Json c = layer.config();
  if (c.is_object() && c.contains("dtype") && c["dtype"].is_object())
    c["dtype"] = dtype_policy_json(layer.dtype_policy());
  return c;
}

std::vector<std::string> layer_class_names() {
  std::vector<std::string> out;
  for (const LayerType& t : kLayerTypes) out.emplace_back(t.class_name);
  return out;
}

}  // namespace mr
