// Small helpers the layer files share: the registration macro, input-count
// checks and row copies.
#pragma once

#include <memory>
#include <vector>

#include "core/error.h"
#include "nn/layer.h"
#include "nn/layers/keras_config.h"

// Defines the factory registry.cpp declares for Keras class `cls`, from a
// constructor Type(ConfigReader&).
#define MR_REGISTER_LAYER(cls, Type)                                           \
  std::unique_ptr<Layer> make_layer_##cls(const Json& config, uint64_t seed) { \
    ConfigReader r(#cls, config, seed);                                        \
    auto layer = std::make_unique<Type>(r);                                    \
    r.finish();                                                                \
    return layer;                                                              \
  }

// The same for a layer class that several Keras classes share (Maximum and
// Minimum, the padding and cropping layers, ...): Keras class `cls` is
// Type(ConfigReader&, <the remaining arguments>).
#define MR_REGISTER_SHARED_LAYER(cls, Type, ...)                               \
  std::unique_ptr<Layer> make_layer_##cls(const Json& config, uint64_t seed) { \
    ConfigReader r(#cls, config, seed);                                        \
    auto layer = std::make_unique<Type>(r, __VA_ARGS__);                       \
    r.finish();                                                                \
    return layer;                                                              \
  }

namespace mr {

inline void expect_inputs(const std::string& who, const std::vector<Shape>& in, size_t n) {
  MR_CHECK(in.size() == n, shape, who, " takes exactly ", n, " input", n == 1 ? "" : "s", ", got ",
           in.size());
}

inline void copy_floats(Backend& be, int64_t count, const float* src, float* dst) {
  if (count > 0 && src != dst) be.copy(dst, src, static_cast<size_t>(count) * sizeof(float));
}

// The activation whose logits a layer applying `act` as its last step can
// hand a cross-entropy (Layer::logits_activation): softmax over the last
// axis and sigmoid, as Keras on TensorFlow keeps `_keras_logits` for them.
inline Activation logits_activation_of(Activation act) {
  return act == Activation::softmax || act == Activation::sigmoid ? act : Activation::linear;
}

}  // namespace mr
