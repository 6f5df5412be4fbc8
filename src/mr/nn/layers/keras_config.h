// Reading and writing a layer's Keras config (the "config" member of a layer
// entry in a .keras file), shared by the files under nn/layers/. A reader
// checks every key: options a layer file reads are typed and range-checked,
// options mirrored does not implement must be null (or their Keras default),
// and any other key is an error, as Keras' from_config() rejects unknown
// arguments. Messages name the class and the layer: "<Class> '<name>': ...".
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/json.h"
#include "nn/initializer.h"
#include "nn/layer.h"

namespace mr {

class ConfigReader {
 public:
  // `seed`: the layer's own seed (drawn by the caller once per layer), from
  // which unseeded initializers and random layers derive theirs.
  ConfigReader(const char* class_name, const Json& config, uint64_t seed);

  const std::string& name() const { return name_; }
  // "<Class> '<name>'", for messages.
  std::string who() const;

  int64_t integer(const char* key, int64_t def, int64_t min);
  double number(const char* key, double def);
  bool boolean(const char* key, bool def);
  std::string string(const char* key, const std::string& def);
  Activation activation(const char* key);
  // The k-th random component of the layer: a config seed, or one derived
  // from the layer's seed.
  Initializer initializer(const char* key, const char* def, int k);
  // A seed option: the config's integer, else one derived from the layer's.
  uint64_t seed(const char* key, bool* given);
  // "<weight>_regularizer" and "<weight>_constraint" of weight `weight`.
  WeightOptions weight_options(const char* weight);
  // "activity_regularizer", as keras_regularizer() writes it (null: none).
  Json activity_regularizer();
  // Options mirrored does not implement: absent, null, or equal to `def`.
  void must_be_null(const char* key);
  void must_equal(const char* key, const Json& def);
  // Throws for any key no call above has read.
  void finish();

  // The whole config, and one raw option (marked as read).
  const Json& raw() const { return cfg_; }
  const Json* take(const char* key) { return get(key); }

  [[noreturn]] void bad(const char* key, const std::string& expected) const;

 private:
  const Json* get(const char* key);

  std::string class_name_, name_;
  const Json& cfg_;
  uint64_t seed_;
  std::set<std::string> seen_;
};

// name, trainable and the float32 dtype policy, as every layer's config starts.
Json base_config(const std::string& name);

// Writes the weights' options in Keras' order: every "<weight>_regularizer",
// then every "<weight>_constraint".
void write_weight_options(Json& config,
                          const std::vector<std::pair<const char*, const WeightOptions*>>& weights);

Activation activation_from_name(const std::string& name);

// The seed of a layer's k-th random component, from the layer's seed (what
// ConfigReader::initializer uses; i15-users: traced layers' weights).
uint64_t derive_seed(uint64_t seed, int k);
const char* activation_name(Activation act);

}  // namespace mr
