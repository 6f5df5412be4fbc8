// Traced layers (issue 15, docs/traced-graphs.md §5): a layer whose Keras
// config carries a "mirrored_graph" key runs that traced graph
// (nn/traced_graph.h) whatever its class name (the user's: "Scale", or
// "Lambda" for layer_lambda()). nn/layers/registry.cpp chooses it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/json.h"
#include "nn/layer.h"

namespace mr {

// The layer of the user's class `class_name` from its config: the base
// layer keys (name, trainable, dtype), the user's get_config() entries and
// "mirrored_graph" (the graph's JSON object). mr::Error (value or shape)
// naming the layer for a graph that cannot be a layer's.
std::unique_ptr<Layer> make_traced_layer(const std::string& class_name, const Json& config,
                                         uint64_t seed);

// Whether `layer` runs a traced graph (the step keeps such models off CUDA
// graph capture: train/traced_objectives.h).
bool is_traced_layer(const Layer& layer);

}  // namespace mr
