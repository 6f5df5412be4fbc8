// The step of a model on a replica set: per replica an executor (the
// activation workspace), a target buffer and the replica context layers use
// for collectives. Training, evaluation and prediction share one prologue:
// cut the global batch by the batch-split rule and stage this replica's
// slice on its device.
//
// Invariant: nothing a step needs is allocated inside it. reserve() sizes
// the buffers for a global batch on the caller's thread before the step is
// posted (a larger batch than any before grows them there, between steps).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/batch.h"
#include "dist/replica_set.h"
#include "nn/executor.h"
#include "nn/graph.h"
#include "nn/loss.h"
#include "nn/optimizer.h"
#include "train/device_input.h"
#include "train/loss_scale.h"
#include "train/resident_input.h"
#include "train/step_clock.h"
#include "train/step_graphs.h"
#include "train/traced_objectives.h"  // i15-users
#include "train/training_state.h"
#include "train/update.h"

namespace mr {

// The loss of one model output, its weight in the total loss and its metrics.
struct OutputConfig {
  LossConfig loss;
  float weight = 1.0f;  // Keras' loss_weights: total loss = sum of weight * output loss
  std::vector<MetricConfig> metrics;
  std::string name;  // the output's name, prefixing its log keys ("<name>_loss")
  // The output's last extent and its positions per sample (output_positions
  // in nn/loss.h), filled by Model::compile(): built-in losses and metrics
  // see rows x positions rows of `cols` values (cols sizes metric states);
  // traced ones see whole samples.
  int64_t cols = 0;
  int64_t positions = 1;
  // The output's positions follow a variable-length input (nn/graph.h): each
  // batch has its own (Step::positions()), `positions` is the probe's, and
  // the loss weighs each row by 1 / the batch's positions
  // (LossParams::position_weight) instead of dividing the logged sum.
  bool variable = false;
};

struct CompileConfig {
  OptimizerConfig optimizer;
  // A model of one output may give only `loss` and `metrics`: Model::compile()
  // then fills `outputs` from them. After compile(), `outputs` holds one entry
  // per model output (Graph::outputs() order) and the step reads only it.
  LossConfig loss;
  std::vector<MetricConfig> metrics;
  std::vector<OutputConfig> outputs;
  // One flag per Graph::params() index, non-zero for a variable training
  // updates; empty: all are (Keras' trainable, fixed at compile() as in
  // Keras). Frozen variables keep their values and optimizer slots: the
  // post-backward pipeline reduces and updates only trainable_ranges() of it.
  std::vector<char> trainable;
  // One flag per graph node, non-zero where the node's layer is frozen (the
  // R side sends these; Model::compile() derives `trainable` from them when
  // it is empty). A frozen layer whose Layer::frozen_runs_inference() says so
  // (BatchNormalization) runs in inference mode in training steps too.
  std::vector<char> frozen;
  // ---- i14-mpcore: dynamic loss scaling (train/loss_scale.h) ----
  LossScaleConfig loss_scale;
};

// Where output k's sums live in the metric-sum block: its loss sum, then
// each metric's state (metric_state_size() doubles). Outputs follow one
// another.
std::vector<size_t> metric_offsets(const CompileConfig& c);
size_t metric_doubles(const CompileConfig& c);
// The last double of the block: the regularization losses' sum (i13-reg),
// weighted like the loss sums (penalty * rows per batch), added to the
// logged total loss.
size_t regularization_sum_offset(const CompileConfig& c);

// A batch of fit()/evaluate() holds the inputs, the targets (one part per
// output), then the sample weights, one float per sample: none, one part
// shared by every output, or one part per output (Keras 3's forms). The
// index in batch.parts of output k's weights, or -1 without weights (also
// when the number of parts fits none of the forms: Model::check_batch
// rejects those).
int weight_part(size_t parts, size_t n_in, size_t n_out, size_t k);

class Step {
 public:
  Step(const Graph& graph, ReplicaSet& replicas, TrainingState& state);
  ~Step();

  // Buffers for global batches of up to `global_rows` rows with targets of
  // `target_widths[k]` floats per sample for output k (empty: no targets),
  // and with sample weights when `weights` (a float per row and output).
  void reserve(int64_t global_rows, const std::vector<int64_t>& target_widths,
               bool weights = false);

  // Posts the step to every replica; the caller waits (ReplicaSet::wait).
  // The batch must stay valid until then.
  void post_train(const HostBatch& batch, const CompileConfig& config, int64_t iteration);
  void post_eval(const HostBatch& batch, const CompileConfig& config);
  // Forward only, waits; writes rows x (output k's width) floats of output k
  // to outs[k] (outputs whose pointer is null are skipped).
  void predict(const HostBatch& batch, const std::vector<float*>& outs);

  std::vector<int64_t> rows_last() const;

  // ---- variable-length inputs (nn/graph.h) ----
  // The next steps run on the graph bound to `lengths` (one per model input,
  // -1 for fixed ones; Graph::bind), made the first time those lengths come
  // and kept: its executors share each replica's workspace. A model without
  // variable inputs has one graph, its own. Between steps, before reserve().
  void select(const std::vector<int64_t>& lengths);
  const Graph& active_graph() const;
  // Output k's positions per sample (nn/loss.h) in the selected graph.
  int64_t positions(size_t k) const;
  // How many graphs (lengths) the model has run so far.
  size_t variants() const { return variants_.size(); }

  // The post-backward pipeline (train/update.h): prepared by compile().
  UpdatePipeline& update() { return update_; }
  // Keras regularizes and constrains trainable variables only (compile()).
  void set_trainable(const std::vector<char>& trainable);
  // compile(): which outputs' cross-entropies take the logits of their
  // softmax / sigmoid output, as Keras on TensorFlow does (its
  // `_keras_logits`, docs in R/losses-probabilistic.R): the built-in
  // categorical, sparse categorical and binary cross-entropy losses and
  // metrics without from_logits, the binary focal loss on a sigmoid, on an
  // output whose layer keeps its logits (Executor::output_logits_activation).
  // The loss's gradient then goes to the logits (Executor::set_logits_grad).
  void configure_logits(const CompileConfig& c);

 private:
  struct Replica;
  // Stages replica `rank`'s slice of `batch`; returns (begin, count).
  std::pair<int64_t, int64_t> stage(int rank, const HostBatch& batch, bool targets);
  // stage() of a training step, timed as the replica's input phase (i14-monitor).
  std::pair<int64_t, int64_t> timed_stage(int rank, const HostBatch& batch);
  // What replica `rank`'s executor needs for a pass over its slice: a
  // training pass with the step's device block, inference without (null).
  Executor::Pass pass(int rank, int64_t begin, int64_t count, int64_t global_rows,
                      const StepScalars* scalars);
  // Loss (and its gradient into the outputs' gradient buffers when
  // `grad_scale` > 0) and metric sums of every output over the replica's
  // slice, each sample weighted by its sample weight when the batch has them.
  // The loss's per-batch arguments are batch_params_.
  void losses(int rank, const CompileConfig& c, int64_t count, float grad_scale);
  // Dynamic loss scaling: every output's loss gradient (count rows) times
  // the device float at loss_scale (the step block's StepScalars::loss_scale).
  void scale_loss_gradients(int rank, int64_t count, const float* loss_scale);
  // Each output's loss arguments for the global `batch` (batch_loss_params),
  // computed once on the posting thread before the replicas read them.
  void set_batch_params(const HostBatch& batch, const CompileConfig& c);

  const Graph& graph_;
  ReplicaSet& replicas_;
  TrainingState& state_;
  std::vector<std::unique_ptr<Replica>> reps_;
  struct Variant;
  // Graphs by their inputs' lengths; the model's own graph is the first.
  std::map<std::vector<int64_t>, std::unique_ptr<Variant>> variants_;
  Variant* active_ = nullptr;
  Variant& make_variant(const std::vector<int64_t>& lengths, std::shared_ptr<const Graph> owned);
  UpdatePipeline update_;
  std::vector<LossParams> batch_params_;  // one per output, for the step in flight
  // configure_logits(): per output, the activation whose logits its
  // cross-entropy metrics take (linear: none), and whether its loss does.
  std::vector<Activation> logits_act_;
  std::vector<char> loss_logits_;

  // ---- i14-monitor: where each training step's time goes ----
 public:
  StepClock& clock() { return clock_; }
  const StepClock& clock() const { return clock_; }

 private:
  StepClock clock_;
  // ---- i14-gpu: CUDA graphs of the training step (train/step_graphs.h) ----------
 public:
  // options(mirrored.cuda_graphs) and the replay counters.
  StepGraphs& graphs() { return *graphs_; }
  const StepGraphs& graphs() const { return *graphs_; }

 private:
  // Whether a training step under `c` can be captured: a backend with graphs,
  // a capturable communicator (none, or NCCL), and no per-step host choice in
  // the update pipeline (gradient accumulation, EMA overwrite).
  bool graph_eligible(const CompileConfig& c) const;
  std::unique_ptr<StepGraphs> graphs_;
  StepGraphKey graph_key_;  // the step in flight's key, its vector reused
  // ---- i14-devinput: input staged ahead in device slots (train/device_input.h) ----
 public:
  DeviceInput& device_input() { return *input_; }
  const DeviceInput& device_input() const { return *input_; }
  // The host side of staging `batch` into `slot`: its descriptor and each
  // output's loss arguments (set_batch_params reads the targets, which the
  // host batch may no longer hold when the slot's step runs). Caller's
  // thread, while no replica reads the slot's host side.
  void prepare_slot(int slot, const HostBatch& batch, const CompileConfig& c);
  // Stages `batch` into `slot` on every replica and waits (outside steps).
  void stage_slot_now(int slot, const HostBatch& batch);
  // The next post_train()/post_eval() reads slot `slot` (its batch argument
  // is then the slot's descriptor: the step copies the slot into its own
  // buffers first) and, once the step's work is queued, stages `ahead` (when
  // not null) into it on the copy lane; -1: the batch's host data as before.
  // Set between steps only.
  void use_slot(int slot, const HostBatch* ahead) {
    slot_ = slot;
    ahead_ = ahead;
  }
  // Datasets resident on the device (train/resident_input.h).
  ResidentInput& resident() { return *resident_; }
  const ResidentInput& resident() const { return *resident_; }
  // The next post_train()/post_eval() gathers its batch, the `rows` row
  // numbers at `order` into resident `data`, on the device (its batch
  // argument is then the descriptor: rows and the parts' widths); computes
  // the loss's per-batch arguments from the host arrays. Between steps.
  void use_resident(const ArrayData& data, const int64_t* order, int64_t rows,
                    const CompileConfig& c);
  void stop_resident() { resident_on_ = false; }

 private:
  std::pair<int64_t, int64_t> take_slot(int rank, const HostBatch& desc, bool targets);
  // Replica `rank`'s thread, at the end of a step read from a slot: stages
  // the batch after next into that slot (timed as input on `clock`).
  void stage_ahead(int rank, StepClock* clock);
  template <class Put>
  std::pair<int64_t, int64_t> place(int rank, const HostBatch& batch, bool targets, Put&& put);
  std::pair<int64_t, int64_t> take_resident(int rank, const HostBatch& desc, bool targets);
  std::unique_ptr<DeviceInput> input_;
  std::array<std::vector<LossParams>, DeviceInput::kSlots> slot_params_;
  int slot_ = -1;
  const HostBatch* ahead_ = nullptr;
  std::unique_ptr<ResidentInput> resident_;
  bool resident_on_ = false;
  std::vector<LossParams> resident_params_;
  std::vector<float> resident_targets_;  // host scratch: one output's targets of the batch
  // ---- i15-users: traced losses and metrics (train/traced_objectives.h) ----
 public:
  // Configured by Model::compile(), sized by reserve(), run by losses().
  TracedObjectives& traced() { return *traced_; }
  const TracedObjectives& traced() const { return *traced_; }

 private:
  std::unique_ptr<TracedObjectives> traced_;
};

}  // namespace mr
