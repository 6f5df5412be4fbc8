// A model's variables in the Keras 3 weights layout (io/keras_weights.h):
// which layer group holds which node's variables (in the layer's order,
// trainable and non-trainable alike), and the optimizer's slots in Keras'
// order. Replicas are identical: writing reads replica 0; reading writes
// every replica, and only after the whole file was read and checked, so a
// failed load leaves the model as it was.
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
  // ---- i14-mpapi ----
  // The inner optimizer's name when the model's optimizer is a
  // LossScaleOptimizer (CompileConfig::loss_scale.dynamic): its variables
  // are written and read in Keras' layout for one (io/keras_weights.h).
  std::string inner_optimizer_name;
};

// Keras' order of the optimizer's slot variables as (slot, parameter) pairs
// (slot = index into slot_names(c), parameter = index into Graph::params()):
// Adam/AdamW create momentum and velocity together per variable, then the
// AMSGrad velocity_hat per variable; SGD and RMSprop create each kind of slot
// for all variables before the next kind; the optimizers of issue 13
// interleave theirs per variable. EMA's averages, then the gradient
// accumulators, come first; Nadam's u_product scalar last, as
// (kNadamUProduct, -1).
constexpr int kNadamUProduct = -1;
// Keras builds the optimizer on the trainable variables only: `trainable`
// (CompileConfig::trainable, one flag per parameter; empty = all) selects them.
std::vector<std::pair<int, int>> keras_slot_order(const OptimizerConfig& c, int n_params,
                                                  const std::vector<char>& trainable = {});

Bytes write_keras_weights(Model& model, const KerasWeightsLayout& layout,
                          const std::vector<std::pair<std::string, std::string>>& root_attrs,
                          const std::string& what);

struct KerasWeightsResult {
  // "loaded", "partial", "mismatch" or "absent" (see read_weights_h5()).
  std::string optimizer = "absent";
  int64_t iterations = 0;
  double learning_rate = 0;  // meaningful unless optimizer == "absent"/"mismatch"
};

// Loads the file into `model`; with load_optimizer and a compiled model, the
// optimizer state is restored when it fits.
KerasWeightsResult read_keras_weights(Model& model, const KerasWeightsLayout& layout,
                                      const Bytes& image, const std::string& what,
                                      bool load_optimizer);

}  // namespace mr
