// The Keras 3 weights layout (model.weights.h5 inside a .keras archive, and
// .weights.h5 files) for a mr::Model.
//
//   /vars                          attr name = model name (no datasets)
//   /layers/<group>/vars/<i>       attr name = layer name; variable i of the
//                                  layer, in the layer's order (kernel, bias)
//   /optimizer/vars/0              iteration (int64 scalar)
//   /optimizer/vars/1              learning_rate (float32 scalar)
//   /optimizer/vars/2...           the slots, in Keras' order (see
//                                  keras_slot_order())
//
// Group names follow the layer's class, not its name (dense, dense_1, ...);
// the caller (which knows the classes and Keras' container rules) gives them
// in the layout. Reading checks everything against the model before changing
// it, so a failed load leaves the model as it was. Replicas are identical:
// writing reads replica 0; reading writes every replica.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/file_util.h"
#include "nn/optimizer.h"
#include "train/model.h"

namespace mr {

struct KerasWeightsLayout {
  struct Layer {
    std::string group;  // "layers/dense_1"
    std::string name;   // the layer's own name (the vars attribute)
    int node = -1;      // graph node whose variables go here; -1: none
  };
  std::string model_name;
  std::vector<Layer> layers;
  std::string optimizer_name;  // the optimizer/vars attribute
  bool optimizer = true;       // write/read the optimizer group (compiled models)
};

// Keras' order of the optimizer's slot variables as (slot, parameter) pairs
// (slot = index into slot_names(c), parameter = index into Graph::params()):
// Adam/AdamW create momentum and velocity together per variable, then the
// AMSGrad velocity_hat per variable; SGD and RMSprop create each kind of slot
// for all variables before the next kind.
std::vector<std::pair<int, int>> keras_slot_order(const OptimizerConfig& c, int n_params);

// The weights file's bytes; `root_attrs` become string attributes of "/"
// (mirrored keeps its training state there; Keras ignores them).
Bytes write_keras_weights(const Model& model, const KerasWeightsLayout& layout,
                          const std::vector<std::pair<std::string, std::string>>& root_attrs,
                          const std::string& what);

struct KerasWeightsResult {
  // "loaded", "partial" (file had only iteration and learning rate, i.e. an
  // optimizer that never stepped), "mismatch" (variable count differs; not
  // loaded) or "absent".
  std::string optimizer = "absent";
  int64_t iterations = 0;
  double learning_rate = 0;  // meaningful unless optimizer == "absent"/"mismatch"
};

// Loads the file into `model`. Layers with variables must match the model
// exactly (groups, variable counts, shapes); a mismatch throws mr::Error (io)
// naming the file, the group and the problem. With load_optimizer and a
// compiled model, the optimizer state is restored when it fits.
KerasWeightsResult read_keras_weights(Model& model, const KerasWeightsLayout& layout,
                                      const Bytes& image, const std::string& what,
                                      bool load_optimizer);

// A string attribute of the file's root, `found` false when absent.
std::string read_keras_root_attr(const Bytes& image, const std::string& what,
                                 const std::string& name, bool* found);

}  // namespace mr
