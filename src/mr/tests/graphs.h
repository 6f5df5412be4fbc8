// Model graphs for the C++ tests and benchmarks (no GoogleTest here: the
// benchmark binaries include it too).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "nn/executor.h"
#include "nn/graph.h"
#include "nn/layers/keras_config.h"
#include "nn/layers/registry.h"

namespace mr {

// Layers through the registry, from the Keras configs the R side would send.
inline std::unique_ptr<Layer> make_input_layer(const Shape& shape) {
  Json bs = Json::array({nullptr});
  for (int64_t d : shape.dims()) bs.push_back(d);
  return make_layer("InputLayer", Json{{"batch_shape", bs}, {"name", "input"}}, 0);
}
inline std::unique_ptr<Layer> make_dense(int64_t units, Activation act, bool use_bias,
                                         const Initializer& k, const Initializer& b) {
  Json cfg{{"name", "dense"},
           {"units", units},
           {"activation", activation_name(act)},
           {"use_bias", use_bias},
           {"kernel_initializer", initializer_to_keras(k)},
           {"bias_initializer", initializer_to_keras(b)}};
  cfg["kernel_initializer"]["config"]["seed"] = k.seed;
  if (b.kind != Initializer::Kind::zeros) cfg["bias_initializer"]["config"]["seed"] = b.seed;
  return make_layer("Dense", cfg, 0);
}
inline std::unique_ptr<Layer> make_activation(Activation act) {
  return make_layer("Activation",
                    Json{{"name", "activation"}, {"activation", activation_name(act)}}, 0);
}
inline std::unique_ptr<Layer> make_dropout(double rate, uint64_t seed) {
  return make_layer("Dropout", Json{{"name", "dropout"}, {"rate", rate}, {"seed", seed}}, 0);
}
inline std::unique_ptr<Layer> make_flatten() {
  return make_layer("Flatten", Json{{"name", "flatten"}}, 0);
}

// A training pass of one replica holding the whole batch.
inline Executor::Pass test_pass(int64_t rows, uint64_t step, const float* params,
                                float* state = nullptr) {
  Executor::Pass p;
  p.rows = rows;
  p.global_rows = rows;
  p.step = step;
  p.training = true;
  p.params = params;
  p.state = state;
  return p;
}

// The nodes of a chain: layer k feeds layer k + 1; nodes are named n0, n1, ...
inline std::vector<GraphNode> chain_nodes(std::vector<std::unique_ptr<Layer>> layers) {
  std::vector<GraphNode> nodes;
  for (size_t i = 0; i < layers.size(); ++i) {
    GraphNode n;
    n.name = "n" + std::to_string(i);
    n.layer = std::move(layers[i]);
    if (i > 0) n.inputs = {static_cast<int>(i - 1)};
    nodes.push_back(std::move(n));
  }
  return nodes;
}

// The chain as a graph whose input is the first layer and output the last.
inline std::shared_ptr<const Graph> chain(std::vector<std::unique_ptr<Layer>> layers) {
  const int last = static_cast<int>(layers.size()) - 1;
  return std::make_shared<const Graph>(chain_nodes(std::move(layers)), std::vector<int>{0},
                                       std::vector<int>{last});
}

inline Initializer glorot_uniform(uint64_t seed) {
  Initializer g;
  g.kind = Initializer::Kind::glorot_uniform;
  g.seed = seed;
  return g;
}

// The vignette's model: 784-256-256-10 (logits), ReLU, Keras' default
// initializers; `dropout` >= 0 adds a Dropout after the first Dense.
inline std::shared_ptr<const Graph> vignette_mlp(uint64_t seed, double dropout = -1.0,
                                                 uint64_t dropout_seed = 0) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{784}));
  l.push_back(make_dense(256, Activation::relu, true, glorot_uniform(seed), Initializer{}));
  if (dropout >= 0.0) l.push_back(make_dropout(dropout, dropout_seed));
  l.push_back(make_dense(256, Activation::relu, true, glorot_uniform(seed), Initializer{}));
  l.push_back(make_dense(10, Activation::linear, true, glorot_uniform(seed), Initializer{}));
  return chain(std::move(l));
}

}  // namespace mr
