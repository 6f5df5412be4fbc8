// A layer computes one node of the model graph on a replica's local batch.
// Shapes given to layers are per-sample (no batch dimension); every buffer is
// row-major with `rows` samples. Layers hold configuration only: weights,
// gradients and activations live in the replica's flat buffers and are handed
// in as pointers, so one Layer object serves every replica concurrently (its
// methods are const).
//
// A layer type is one file under nn/layers/ plus one line in
// nn/layers/registry.cpp (docs/adding-a-layer.md): the file maps the Keras
// config to the layer and back, so nothing outside it names the type.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/json.h"
#include "core/shape.h"
#include "nn/dtype_policy.h"
#include "nn/initializer.h"
#include "nn/replica_context.h"

namespace mr {

// One variable of a layer, in the layer's (Keras') order. Trainable weights
// live in the parameter buffer (gradients, optimizer slots, all-reduce);
// non-trainable ones (moving statistics) in the state buffer, which neither
// the optimizer nor the gradient all-reduce touches.
// What Keras attaches to a weight through its layer's config
// ("<weight>_regularizer", "<weight>_constraint"), kept as the Keras configs
// (null: none). Layer files only pass them through (ConfigReader::
// weight_options, write_weight_options), which normalizes them to the form
// Keras writes; nn/regularization.h says what the step does with them.
struct WeightOptions {
  Json regularizer;
  Json constraint;
};

struct WeightSpec {
  std::string name;  // "kernel", "bias", "moving_mean"
  Shape shape;
  Initializer init;
  bool trainable = true;
  WeightOptions options = {};
};

struct ForwardArgs {
  Backend& be;
  int64_t rows;                // local batch rows (may be 0)
  int64_t global_rows;         // rows of the global batch, over every replica
  int64_t row_offset;          // global index of the first local row
  const StepScalars* scalars;  // this step's device-resident values (the step keys masks)
  uint32_t stream;             // unique per node, keys its random numbers
  bool training;
  std::vector<const float*> in;
  std::vector<Shape> in_shapes;
  float* out;
  std::vector<float*> params;  // trainable weights, in weights() order
  std::vector<float*> state;   // non-trainable weights, in weights() order
  float* aux;                  // aux_per_row() floats per row, kept from forward to backward
  float* work;                 // work_floats() floats, kept from forward to backward
  ReplicaContext& ctx;
};

struct BackwardArgs {
  Backend& be;
  int64_t rows;
  int64_t global_rows;
  bool training;
  std::vector<const float*> in;
  std::vector<Shape> in_shapes;
  const float* out;
  float* d_out;              // gradient of the output; the layer may overwrite it
  std::vector<float*> d_in;  // null where the input needs no gradient
  std::vector<const float*> params;
  std::vector<const float*> state;
  std::vector<float*> grads;  // written (not accumulated), one per trainable weight
  float* aux;
  float* work;
  ReplicaContext& ctx;
  // d_out already holds the gradient with respect to the layer's logits
  // (Layer::logits_activation()): the loss took the logits, and the layer
  // skips its activation's backward.
  bool d_out_is_logits_grad = false;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // Keras' class name, as in .keras files.
  virtual const char* class_name() const = 0;
  // Checks the inputs and returns the per-sample output shape; throws
  // mr::Error (shape) naming the layer for inputs it cannot take.
  virtual Shape output_shape(const std::vector<Shape>& in) const = 0;
  virtual std::vector<WeightSpec> weights(const std::vector<Shape>& /*in*/) const { return {}; }
  virtual int64_t aux_per_row(const std::vector<Shape>& /*in*/) const { return 0; }
  virtual int64_t work_floats(const std::vector<Shape>& /*in*/) const { return 0; }
  virtual void forward(const ForwardArgs& a) const = 0;
  virtual void backward(const BackwardArgs& a) const = 0;
  // The layer's Keras config (the "config" member of its entry in a .keras
  // file), every option written out as Keras' get_config() does.
  virtual Json config() const = 0;
  // Called when the executor sizes its buffers for batches of up to max_rows
  // (outside any step): a layer whose ops need backend resources made ahead
  // of the step (Backend::prepare_conv) asks for them here.
  virtual void prepare(Backend& /*be*/, const std::vector<Shape>& /*in*/,
                       int64_t /*max_rows*/) const {}
  // The layer's activity regularizer (Keras' activity_regularizer, as
  // keras_regularizer() writes it), null when it has none.
  virtual Json activity_regularizer() const { return nullptr; }
  // Whether the layer runs in inference mode in training steps once frozen
  // (trainable = FALSE): Keras 3's BatchNormalization does (it then uses and
  // keeps its moving statistics); every other layer behaves as when trainable.
  virtual bool frozen_runs_inference() const { return false; }

  // ---- Keras-TF's logits of a probability output (issue 28) ----
  // Keras on TensorFlow takes a cross-entropy from the logits of an output
  // made by a softmax (over the last axis) or sigmoid activation (Keras'
  // `_keras_logits`). A layer whose output is that activation of values z
  // of the output's shape, which stay in its buffers from forward to
  // backward, names the activation here (Activation::linear: none), and
  // logits_at() says where z is after a forward of `rows` rows: the layer's
  // first input, or its aux region from floats rows x aux_floats_before on.
  virtual Activation logits_activation() const { return Activation::linear; }
  struct LogitsAt {
    bool first_input = false;
    int64_t aux_floats_before = 0;  // per row
  };
  virtual LogitsAt logits_at(const std::vector<Shape>& /*in*/) const { return {}; }

  // ---- i14-mpcore: the layer's dtype policy (nn/dtype_policy.h) ----
  // Set once by make_layer() from the config's "dtype", before the layer is
  // shared by replicas; layer_config() (nn/layers/registry.h) writes it back.
  // Layers whose products honour a mixed policy read it in forward/backward;
  // the others compute in f32 whatever it says.
  const DTypePolicy& dtype_policy() const { return dtype_policy_; }
  void set_dtype_policy(DTypePolicy p) { dtype_policy_ = std::move(p); }

  // ---- i15-users: values a layer keeps in its work region across steps ----
  // Called by the executor each time it (re)allocates the node's work region
  // (work_floats() floats of `be`), outside any step: a layer may write
  // values there that its passes read and never write (a traced layer's
  // constants, nn/layers/traced_layer.cpp), so no step uploads them.
  virtual void prepare_work(Backend& /*be*/, const std::vector<Shape>& /*in*/,
                            float* /*work*/) const {}
  // Floats of work beyond work_floats() for batches of up to `max_rows` rows,
  // for buffers whose layout is not `rows` copies of a per-row part (a
  // traced layer's graph buffers: per-row floats times rows, then fixed
  // floats). The executor adds them when it sizes the node's work region.
  virtual int64_t work_floats_for_rows(const std::vector<Shape>& /*in*/,
                                       int64_t /*max_rows*/) const {
    return 0;
  }

  // ---- Keras' self$add_loss() in a custom layer's call() (traced_layer.cpp) ----
  // How many loss terms forward computes (0: none), each one float that a
  // forward of rows > 0 leaves at float added_losses_at() of the node's
  // work region. A replica's term v counts with the weight of its rows,
  // rows / global rows, in the loss and its gradient (Executor::
  // activity_penalties; backward), as the traced losses' batch means do: a
  // term that is a batch mean gives the same numbers whatever the split.
  virtual int added_losses() const { return 0; }
  virtual int64_t added_losses_at() const { return 0; }

 private:
  DTypePolicy dtype_policy_;
};

}  // namespace mr
