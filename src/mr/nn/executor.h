// Runs a Graph forward and backward on one backend (one replica). It owns the
// replica's activation workspace; parameters, gradients and the
// non-trainable state are flat buffers owned by the caller, laid out as
// Graph::params() and Graph::states() say.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "nn/graph.h"
#include "nn/regularization.h"
#include "nn/replica_context.h"

namespace mr {

// ---- i14-overlap ----
// Told during Executor::backward when gradients become final, so that their
// all-reduce can start while backward goes on (train/grad_buckets.h). nn
// never sees dist: the listener is an interface the training step supplies.
class GradReadyListener {
 public:
  virtual ~GradReadyListener() = default;
  // Backward has issued every node with index >= `node` (nodes run in
  // decreasing index order); called before node `node` - 1 and with 0 after
  // the last node. A variable's gradient is final once its owner node is done.
  virtual void nodes_done(int node) = 0;
};

// A replica's activation memory. The executors of one model's graph
// variants (Graph::bind: one per length of a variable-length input) share
// it: one runs at a time, each lays out its buffers from the start, and it
// is sized for the largest layout any of them reserved, so that once the
// longest length has run no other allocates. Values a layer keeps in its
// work region across steps (Layer::prepare_work) belong to the executor
// that wrote them last (`holder`): Executor::activate() rewrites its own.
class Workspace {
 public:
  explicit Workspace(Backend& be) : be_(be), buf_(nullptr, DeviceFree{&be}) {}
  float* data() const { return static_cast<float*>(buf_.get()); }
  int64_t floats() const { return floats_; }
  // Grows to at least `floats` (contents are not kept); outside steps.
  void ensure(int64_t floats) {
    if (floats <= floats_) return;
    buf_ = be_.allocate(static_cast<size_t>(floats) * sizeof(float));
    floats_ = floats;
    ++generation_;
  }
  uint64_t generation() const { return generation_; }
  const void* holder = nullptr;

 private:
  Backend& be_;
  DeviceBuffer buf_;
  int64_t floats_ = 0;
  uint64_t generation_ = 0;
};

class Executor {
 public:
  // `workspace`: shared with the executors of the graph's other variants;
  // null: the executor's own.
  Executor(const Graph& graph, Backend& be, std::shared_ptr<Workspace> workspace = nullptr);
  // Before a pass of this executor when another executor of its workspace
  // may have run since (outside steps): rewrites the values its layers keep
  // in their work regions. reserve() does it too.
  void activate();

  // Makes room for batches of up to `rows` samples (grows, never shrinks).
  void reserve(int64_t rows);
  int64_t capacity() const { return capacity_; }

  // Device buffer of model input k (Graph::inputs()[k]), rows x numel.
  float* input(int k);
  const float* output(int k) const;
  // Gradient buffer of model output k, to be written by the loss.
  float* output_grad(int k);

  // What a pass needs besides the rows: the global batch's size and the
  // replica's place in it, the step, the buffers and the replica context.
  struct Pass {
    int64_t rows = 0;         // local rows
    int64_t global_rows = 0;  // rows of the global batch
    int64_t row_offset = 0;   // global index of the first local row
    uint64_t step = 0;
    // The step's device-resident values; null: the executor stages one from
    // `step` in the backend's own block (callers without a step, tests).
    const StepScalars* scalars = nullptr;
    bool training = false;
    const float* params = nullptr;
    float* state = nullptr;  // written by layers that keep statistics, when training
    ReplicaContext* ctx = nullptr;
    // One flag per node (non-zero: its layer is frozen), or null. A frozen
    // node whose layer runs in inference mode when frozen (Keras'
    // BatchNormalization) gets training = false in both directions.
    const char* frozen = nullptr;
    // i14-overlap: told as gradients become final during backward; or null.
    GradReadyListener* grad_ready = nullptr;
  };
  void forward(const Pass& p);
  // Gradients of all trainable variables into `grads` (written, not
  // accumulated). The loss must have written output_grad(k) for every output.
  // A shared layer's variables get the sum over its calls: the first call
  // backward reaches writes them, later ones write into a scratch region
  // (sized by reserve()) that is added to them.
  void backward(const Pass& p, float* grads);
  // Activity regularization (i13-reg): adds the activity regularizers'
  // penalties of the last forward's outputs over the local rows to *acc
  // (each layer's penalty / global rows is its part of the loss, times the
  // global rows the logged loss sums). backward() adds their gradient,
  // penalty'(output) / global rows, to the output's gradient.
  // It also adds the layers' add_loss() terms (Layer::added_losses), each
  // replica's value times its rows; their gradient is the layer's own.
  void activity_penalties(const Pass& p, double* acc);
  bool has_activity_regularizers() const { return has_activity_; }

  // ---- Keras-TF's logits of a probability output (issue 28) ----
  // The activation (softmax or sigmoid) whose logits model output k can hand
  // its loss, or Activation::linear: its layer keeps them
  // (Layer::logits_activation), computes in float32 (under a mixed policy
  // Keras' loss casts the output, which drops TensorFlow's logits), and the
  // output feeds nothing else (no other layer, no second output, no activity
  // regularizer), so that the whole of its gradient can be the logits'.
  Activation output_logits_activation(int k) const;
  // The logits of output k from the last forward of `rows` rows.
  const float* output_logits(int k, int64_t rows) const;
  // Whether backward takes output_grad(k) as the gradient with respect to
  // output_logits(k) (the loss computed it from them): the output's layer
  // then skips its activation's backward. Set between steps.
  void set_logits_grad(int k, bool on);

 private:
  // The training flag node i's layer sees in pass p.
  bool node_training(const Pass& p, int i) const;

  struct NodeBuffers {
    int64_t out = -1, grad = -1, aux = -1, work = -1;  // offsets in floats into work_, -1 = none
  };
  float* at(int64_t offset) const { return offset < 0 ? nullptr : work_->data() + offset; }

  const Graph& graph_;
  Backend& be_;
  int64_t capacity_ = 0;
  std::shared_ptr<Workspace> work_;
  uint64_t prepared_generation_ = 0;  // work_'s generation when activate() last wrote it
  std::vector<NodeBuffers> buf_;
  int64_t scratch_ = -1;      // for nodes whose output feeds several consumers
  int64_t scratch_slot_ = 0;  // floats per input slot of scratch_
  std::vector<char> grad_written_;
  int64_t param_scratch_ = -1;              // gradients of a shared layer's later call
  std::vector<char> param_grad_written_;    // per node owning variables, in this pass
  std::vector<RegularizerSpec> activity_;   // per node (Kind::none: none)
  std::vector<char> logits_grad_;           // per node: set_logits_grad()
  std::vector<Layer::LogitsAt> logits_at_;  // per node with logits (Layer::logits_at)
  bool has_activity_ = false;  // activity regularizers or add_loss() terms (activity_penalties)
};

}  // namespace mr
