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

// The Keras class names the registry knows, in registry order.
std::vector<std::string> layer_class_names();

}  // namespace mr
