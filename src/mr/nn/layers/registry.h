// The layer registry: Keras class name -> the factory in that layer's file.
// It is the only list of layer types in the core; R asks it (through
// src/r_layer.cpp) for output shapes, weights and configs instead of keeping
// its own rules.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "nn/layer.h"

namespace mr {

// A layer of Keras class `class_name` from its Keras config (validated; every
// key known). `seed` seeds what the config leaves unseeded (initializers,
// dropout masks): the caller draws it once per layer.
std::unique_ptr<Layer> make_layer(const std::string& class_name, const Json& config, uint64_t seed);

// ---- i14-mpcore ----
// The layer's Keras config with its dtype policy: Layer::config() writes
// the float32 policy (base_config()); this puts the layer's own policy
// (Layer::dtype_policy()) in its place. Configs whose "dtype" is a plain
// tensor dtype (InputLayer: "float32" under any policy, as in Keras) are
// left as they are. What R keeps and saves.
Json layer_config(const Layer& layer);

// The Keras class names the registry knows, in registry order.
std::vector<std::string> layer_class_names();

}  // namespace mr
