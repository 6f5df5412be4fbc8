// The Keras 3 weights file (model.weights.h5 inside a .keras archive, and
// .weights.h5 files) as named host tensors; it knows nothing of models
// (train/model_weights.h maps a model to it):
//
//   /vars                          attr name = model name (no datasets)
//   /layers/<group>/vars/<i>       attr name = layer name; variable i of the
//                                  layer, in the layer's order
//   /optimizer/vars/0              iteration (int64 scalar)
//   /optimizer/vars/1              learning_rate (float32 scalar), absent when
//                                  the learning rate is a schedule
//   /optimizer/vars/2...           the optimizer's variables, in Keras' order
//
// A LossScaleOptimizer (Keras 3's layout; i14-mpapi) prefixes its own
// variables and nests the inner optimizer's:
//   /optimizer/vars/0, 1           its own iteration (int64, 0) and learning
//                                  rate (float32, 0): Keras' BaseOptimizer's
//   /optimizer/vars/2, 3           step_counter (int64), dynamic_scale (float32)
//   /optimizer/vars/4...           the inner optimizer's, as above
//   /optimizer/inner_optimizer/vars/<i>  the inner optimizer's again (Keras
//                                  reads both groups)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/shape.h"
#include "io/file_util.h"

namespace mr {

struct HostTensor {
  Shape shape;
  std::vector<float> values;  // row-major, shape.numel() floats
};

struct KerasWeightsFile {
  struct Layer {
    std::string group;  // "layers/dense_1"
    std::string name;   // the layer's own name (the vars attribute)
    std::vector<HostTensor> vars;
  };
  std::string model_name;
  std::vector<Layer> layers;
  bool has_optimizer = false;
  std::string optimizer_name;
  int64_t iterations = 0;
  double learning_rate = 0;
  bool has_learning_rate = true;           // false: a schedule (Keras writes no variable)
  std::vector<HostTensor> optimizer_vars;  // after the iteration and the learning rate
  // ---- i14-mpapi: a LossScaleOptimizer around the optimizer above ----
  bool loss_scale = false;
  std::string inner_optimizer_name;  // the inner optimizer's vars attribute
  int64_t step_counter = 0;
  float dynamic_scale = 0;
};

// The file's bytes; `root_attrs` become string attributes of "/" (mirrored
// keeps its training state there; Keras ignores them).
Bytes write_weights_h5(const KerasWeightsFile& file,
                       const std::vector<std::pair<std::string, std::string>>& root_attrs,
                       const std::string& what);

// What a reader expects: the layers (group, name, variable shapes) and the
// shapes of the optimizer's variables (none: the optimizer group is not read).
struct KerasWeightsExpect {
  struct Layer {
    std::string group, name;
    std::vector<Shape> shapes;
  };
  std::vector<Layer> layers;
  bool optimizer = false;
  bool learning_rate_var = true;  // false: the optimizer's learning rate is a schedule
  std::vector<Shape> optimizer_shapes;
  bool loss_scale = false;  // i14-mpapi: a LossScaleOptimizer's layout
};

// Reads and checks the file against `expect`: layers with variables must
// match exactly (groups, counts, shapes), else mr::Error (io) naming the file,
// the group and the problem. `optimizer` in the result is "loaded",
// "partial" (only the iteration and learning rate: an optimizer that never
// stepped), "mismatch" (other variable count; nothing read) or "absent".
struct KerasWeightsRead {
  KerasWeightsFile file;
  std::string optimizer = "absent";
};
KerasWeightsRead read_weights_h5(const Bytes& image, const std::string& what,
                                 const KerasWeightsExpect& expect);

// A string attribute of the file's root, `found` false when absent.
std::string read_keras_root_attr(const Bytes& image, const std::string& what,
                                 const std::string& name, bool* found);

}  // namespace mr
