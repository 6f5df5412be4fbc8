// A model placed on a strategy's devices: the graph, the replica set (devices,
// one thread per replica, the communicator; dist/replica_set.h), the training
// state (train/training_state.h) and the step (train/step.h), plus the
// compiled loss, metrics and optimizer. One device is a strategy of one
// replica: there is no other code path.
//
// Invariants: after every public call returns, all replicas hold bit-identical
// parameters, state and slots; iterations() counts applied updates (Keras'
// optimizer.iterations); metric sums live on the devices and are only read by
// read_metrics().
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu_utilization.h"
#include "data/batch.h"
#include "dist/device.h"
#include "dist/replica_set.h"
#include "nn/graph.h"
#include "nn/loss.h"
#include "nn/optimizer.h"
#include "train/device_report.h"
#include "train/step.h"
#include "train/training_state.h"

namespace mr {

class Model {
 public:
  // threads_per_replica: CPU threads of each replica's backend;
  // collective_timeout: seconds a replica waits for its peers in a collective.
  // initialize = false leaves the variables at zero, for a caller that sets
  // them right away (loading a file): initializers of a large model cost more
  // than reading its weights.
  Model(std::shared_ptr<const Graph> graph, std::vector<DeviceSpec> devices,
        int threads_per_replica, double collective_timeout = 300.0, bool initialize = true);
  Model(std::shared_ptr<const Graph> graph, std::vector<DeviceSpec> devices,
        const PlacementOptions& options, bool initialize = true);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const Graph& graph() const { return *graph_; }
  int replicas() const { return replicas_.size(); }
  const std::vector<DeviceSpec>& devices() const { return replicas_.devices(); }
  std::string communicator_name() const { return replicas_.communicator_name(); }
  const std::string& communicator_note() const { return replicas_.communicator_note(); }

  // Flat parameters (Graph layout) of replica `rank`.
  std::vector<float> get_params(int rank = 0) const { return state_.get_params(rank); }
  // Sets every replica's parameters (a broadcast from the host).
  void set_params(const std::vector<float>& flat) { state_.set_params(flat); }
  // Non-trainable variables (Graph::states() layout), likewise.
  std::vector<float> get_state(int rank = 0) const { return state_.get_state(rank); }
  void set_state(const std::vector<float>& flat) { state_.set_state(flat); }

  // keep_optimizer_state (i15: traced losses and metrics traced again for
  // targets of another shape): a compiled model keeps its optimizer slots
  // and iteration count when the new config needs as many slots and metric
  // sums; otherwise they start afresh, as for any compile().
  void compile(const CompileConfig& config, bool keep_optimizer_state = false);
  bool compiled() const { return compiled_; }
  const CompileConfig& config() const { return config_; }
  void set_learning_rate(double lr);
  // Under dynamic loss scaling the count lives on the device until read
  // (settle_loss_scale()): reading it waits for the steps in flight.
  int64_t iterations() {
    settle_loss_scale();
    return state_.iterations;
  }
  // Keras' optimizer.finalize_variable_values at the end of fit() (EMA).
  void finalize_optimizer();
  void set_iterations(int64_t n) {
    settle_loss_scale();
    state_.iterations = n;
    device_scale_.armed = false;  // the table starts from another iteration
  }
  // Slot buffer k (slot_names() order) of replica `rank`.
  std::vector<float> get_slot(int k, int rank = 0) const;
  void set_slot(int k, const std::vector<float>& flat);
  // The gradient accumulator's value: the sum of the replicas' local sums
  // (get) / all of it on the first replica (set). -1: no accumulator.
  int accumulator_slot() const;
  std::vector<float> get_accumulator() const;
  void set_accumulator(const std::vector<float>& flat);

  // One optimizer step on a global batch: split, forward, loss, backward,
  // all-reduce, update. start/finish let the caller prepare the next batch
  // while the replicas work; the batch must stay valid until finish returns.
  void start_train_step(const HostBatch& batch);
  // Waits for the step in flight. `interrupted`, when given, is polled while
  // the replicas work (ReplicaSet::wait); returns true when it said so and
  // the step completed all the same.
  bool finish_step(const std::function<bool()>& interrupted = nullptr);
  void train_step(const HostBatch& batch) {
    start_train_step(batch);
    finish_step();
  }
  void start_eval_step(const HostBatch& batch);
  // Forward only; writes rows x output_width() floats for output `k`.
  void predict_step(const HostBatch& batch, int k, float* out);
  // Forward only; writes rows x output_width(k) floats of every output k
  // whose pointer in `outs` (one per output) is not null.
  void predict_step(const HostBatch& batch, const std::vector<float*>& outs);
  int outputs() const { return static_cast<int>(graph_->outputs().size()); }
  // Output k's floats per sample and per-sample shape in the graph of the
  // last batch (a variable-length model's depend on its lengths: Step::select).
  int64_t output_width(int k) const;
  Shape output_shape(int k) const;
  // A variable-length model (nn/graph.h): selects the graph of the batch's
  // lengths (checked against the declared shapes), which output_width() and
  // output_shape() then describe; the steps do it themselves. Between steps.
  void select_graph(const HostBatch& batch);
  // How many lengths a variable-length model has run (1 for any other).
  size_t graph_variants() const { return step_.variants(); }

  // The log keys; read_metrics() gives their running means in this order.
  // One output: "loss" then the metric names. Several (Keras 3's keys, sorted
  // as Keras 3 sorts them): "loss" (the weighted total), "<output>_loss",
  // "<output>_<metric>".
  std::vector<std::string> metric_names() const;
  void reset_metrics();
  // across_workers (i16): in a multi-worker job, the sums of every worker
  // (a collective: every worker must call it at the same point, as the
  // loops do at an epoch's end); otherwise this worker's replicas' rows.
  std::vector<double> read_metrics(bool across_workers = false) const;

  // For tests: make replica `rank` fail (throw) or stall for `seconds` at the
  // start of training step `step` (1-based, Keras' iterations + 1).
  using Fault = ReplicaSet::Fault;
  void inject_fault(int rank, int64_t step, Fault kind, double seconds = 0.0) {
    replicas_.inject_fault(rank, step, kind, seconds);
  }

  // For tests and diagnostics.
  std::vector<int64_t> rows_last_step() const { return step_.rows_last(); }
  std::vector<std::thread::id> replica_threads() const { return replicas_.threads(); }
  std::vector<const void*> replica_param_buffers() const;
  const Backend& replica_backend(int rank) const { return replicas_.backend(rank); }
  // i16: a step on this worker's shard of `rows` rows: every worker says
  // how many rows it has (a collective, between steps), this worker's rows
  // start after those of the workers before it, and the global batch is
  // their sum, which is returned (0: every shard has ended). The split holds
  // until end_shard().
  int64_t share_rows(int64_t rows);
  void end_shard() { replicas_.clear_shard(); }
  // i16: the job's workers (null for a process alone) and the global count.
  const std::shared_ptr<WorkerGroup>& workers() const { return replicas_.workers(); }
  int global_replicas() const { return replicas_.global_size(); }

  // ---- i14-mpcore: mixed precision (nn/dtype_policy.h, train/loss_scale.h) ----
  // The loss scale's state (Keras' LossScaleOptimizer variables
  // dynamic_scale and step_counter) after the last finished step; compile()
  // with loss_scale.dynamic resets it to (initial_scale, 0). The setter is
  // for loading a saved optimizer. The device moves the scale and counts
  // the applied steps (core/step_scalars.h: LossScaleWord) without the host;
  // settle_loss_scale() reads them (waiting for the queued steps), as every
  // reader of the state or of iterations() does: the training loop's logs,
  // R, saving. Between reads the host's count assumes no step was skipped.
  const LossScaleState& loss_scale_state() {
    settle_loss_scale();
    return loss_scale_;
  }
  void set_loss_scale_state(float scale, int64_t step_counter);
  void settle_loss_scale();
  // A one-time note from compile() for the R side to show (empty: none),
  // e.g. that this CPU has no bf16 instructions and mixed_bfloat16 layers
  // compute in float32.
  const std::string& precision_note() const { return precision_note_; }
  // For tests: adds +Inf to replica `rank`'s first trainable gradient float
  // right after the all-reduce of training step `step` (1-based, as
  // inject_fault), so that only the flag's all-reduce tells the others.
  // Once: the step it skips clears it.
  void inject_nonfinite_gradient(int rank, int64_t step) {
    step_.update().inject_nonfinite(rank, step);
  }
  // ---- i14-overlap ----
  // The gradient buckets' size (Keras/TF CommunicationOptions'
  // bytes_per_pack; 0: automatic, DDP's 1 MiB then 25 MiB); between steps.
  void set_bytes_per_pack(int64_t bytes) { step_.update().set_bytes_per_pack(bytes); }
  // Off: one fused all-reduce after backward (tests and benchmarks compare).
  void set_overlap(bool on) { step_.update().set_overlap(on); }
  // The bucket plan (empty before compile() and with one replica) and each
  // replica's launch order in its last applying step.
  const GradBuckets& grad_buckets() { return step_.update().buckets(); }

 private:
  // compile(): output o's positions follow a variable-length input when its
  // symbolic shape has -1 before its last axis; checks what such an output
  // cannot have (a variable last axis, losses and metrics written in R).
  void compile_variable_output(OutputConfig& o, const Shape& symbolic) const;
  void check_batch(const HostBatch& batch, bool targets) const;
  // Whether a checked batch carries sample weights (step.h, weight_part()).
  bool has_weights(const HostBatch& batch) const;
  // Floats per sample of each output's targets in `batch`.
  std::vector<int64_t> target_widths(const HostBatch& batch) const;

  std::shared_ptr<const Graph> graph_;
  ReplicaSet replicas_;
  TrainingState state_;
  Step step_;
  CompileConfig config_;
  bool compiled_ = false;
  bool in_flight_ = false;
  bool in_flight_train_ = false;
  // ---- i14-mpcore ----
  // Checks c.loss_scale, resets loss_scale_ and sets precision_note_.
  void compile_precision(const CompileConfig& c);
  // Before a training step is posted: writes the device's word and table
  // when they are not there yet or their rows would run out. Returns the
  // iteration the host posts the step with.
  int64_t begin_train_step();
  // After a training step's wait (or failure).
  void end_train_step(bool failed);
  // Writes the loss scale's word, the table of the next steps' blocks and
  // the first block on every replica, from the settled host state.
  void arm_loss_scale();
  LossScaleState loss_scale_;
  struct DeviceScale {
    bool armed = false;
    int64_t at = 0;                // iterations when armed (the table's row 0)
    int64_t posted = 0;            // training steps posted since
    int64_t read_at = 0;           // `posted` when the word was last read
    int64_t skipped_before = 0;    // loss_scale_.skipped when armed
    int64_t posted_iteration = 0;  // the host's iteration of the last step
  } device_scale_;
  std::vector<StepScalars> scale_rows_;  // the table, host side (no reallocation)
  std::string precision_note_;

  // ---- i14-monitor: where the time goes (train/device_report.cpp) ----
 public:
  // The training steps' clock: train_epoch() opens and closes its epochs.
  StepClock& step_clock() { return step_.clock(); }
  // Opens an epoch on the clock and restarts every backend's memory peak.
  void begin_monitored_epoch();
  // Per replica: the last closed epoch's time parts, memory, GPU utilisation.
  std::vector<ReplicaReport> device_report() const;

 private:
  // NVML, loaded when some replica is a GPU (null otherwise).
  std::unique_ptr<GpuUtilization> nvml_;

  // ---- i14-gpu: CUDA graphs of the training step (train/step_graphs.h) ----------
 public:
  // options(mirrored.cuda_graphs); between steps.
  void set_cuda_graphs(bool on) { step_.graphs().set_enabled(on); }
  bool cuda_graphs() const { return step_.graphs().enabled(); }
  // Replays, captures and eager steps so far (0 replays on CPU replicas).
  const StepGraphStats& cuda_graph_stats() const { return step_.graphs().stats(); }

  // ---- i14-devinput: input staged ahead on the device (train/device_input.h) ----
 public:
  // Whether CPU replicas gather resident arrays by default: yes, it is not
  // slower (the vignette's MLP, batch 64, 2 threads, Intel Xeon Sapphire
  // Rapids: 0.599-0.624 ms/step at best against 0.631-0.650 streaming; the
  // host gather and the upload memcpy are saved).
  // Measured on Intel Xeon Sapphire Rapids only (DESIGN §9: one CPU kind);
  // not yet on AMD or older x86.
  static constexpr bool kResidentOnCpuByDefault = true;
  // The resident data budget when options(mirrored.resident_bytes) is NULL:
  // bytes per device for every resident dataset together.
  static constexpr int64_t kDefaultResidentBudget = int64_t{1} << 30;
  // options(mirrored.device_input): -1 automatic (on for GPU replicas, off
  // for CPU ones, which have no copy lane), 0 off, 1 on; between steps.
  void set_device_input(int mode);
  int device_input_mode() const { return device_input_mode_; }
  // Whether train_epoch()/evaluate() stage batches ahead in device slots.
  bool device_input_active() const;
  // Stages `first` into slot 0 and `second` (when not null) into slot 1 of
  // every replica and waits: the start of a pass, outside steps. Checks both
  // batches as start_train_step() (`train`) or start_eval_step() does; a
  // batch that fails its checks is not staged and its error is raised by its
  // own start_staged_step(), after the steps before it (as on the host path);
  // an evaluation batch of no rows is skipped there.
  void stage_inputs(const HostBatch& first, const HostBatch* second, bool train = true);
  // A training (or evaluation) step on the batch staged in `slot`; once the
  // replicas queued the step's work, they stage `ahead` (the batch after the next,
  // when not null; checked here, its error kept for its own step) into the
  // same slot on the copy lane. `ahead` must stay valid until finish_step()
  // (or stage_late_input()) returns.
  void start_staged_step(bool train, int slot, const HostBatch* ahead);
  // After finish_step() of a staged step whose `ahead` did not fit its slot:
  // grows the slot and stages `ahead` (between steps, after the step's
  // bookkeeping, so that an error here leaves iterations and the loss scale
  // those of the applied update). `go_on`: false drops it (the pass ends).
  // The loop times it as input.
  bool late_input_pending() const { return late_ahead_ != nullptr; }
  void stage_late_input(bool go_on);
  // Slot uploads and slot reads so far, summed over replicas.
  int64_t staged_inputs() const { return step_.device_input().staged(); }
  int64_t taken_inputs() const { return step_.device_input().taken(); }
  // Datasets resident on the device (train/resident_input.h): mode -1
  // automatic (on for GPU replicas; on CPU replicas see
  // kResidentOnCpuByDefault), 0 off, 1 on; `budget`: bytes per device for
  // every resident dataset together (options(mirrored.resident_bytes)).
  void set_resident_input(int mode, int64_t budget);
  int resident_mode() const { return resident_mode_; }
  int64_t resident_budget() const { return resident_budget_; }
  // Whether a pass over `data` gathers on the device: the mode allows it and
  // the data are (made) resident within the budget. Between steps.
  bool resident_input_for(const std::shared_ptr<const ArrayData>& data);
  // A training (or evaluation) step on the `rows` rows at `order` of
  // resident `data` (the order stays valid until finish_step()).
  void start_resident_step(bool train, const ArrayData& data, const int64_t* order, int64_t rows);
  // Drops the resident datasets (end of fit()/evaluate()); between steps.
  void release_resident_input();
  int64_t resident_bytes() const { return step_.resident().resident_bytes(); }
  int64_t gathered_inputs() const { return step_.resident().gathered(); }
  // The input path of the last training or evaluation pass (set by the loop).
  enum class InputPath { host, copy_lane, resident };
  InputPath last_input_path() const { return last_input_path_; }
  void set_last_input_path(InputPath p) { last_input_path_ = p; }
  // For tests, between steps: DeviceInput::probe_order() on replica `rank`.
  DeviceInput::Order device_input_order(int rank, int slot) {
    return step_.device_input().probe_order(rank, slot);
  }

 private:
  // After every step's wait, on every path: leaves slot and resident mode.
  // `ok`: the step ended without an error (otherwise a late `ahead` is
  // dropped). Never throws.
  void end_step_input(bool ok);
  // Checks `batch` for `slot` (see stage_inputs()): true when it is to be
  // staged; otherwise the slot records its error or that it is skipped.
  bool accept_staged(int slot, const HostBatch& batch, bool train);
  // Per slot: the error of the batch it should hold, raised at its step;
  // whether it holds an evaluation batch of no rows (no step).
  std::array<std::exception_ptr, DeviceInput::kSlots> slot_error_{};
  std::array<bool, DeviceInput::kSlots> slot_skip_{};
  int device_input_mode_ = -1;
  int resident_mode_ = -1;
  int64_t resident_budget_ = kDefaultResidentBudget;
  HostBatch resident_desc_;  // the resident step in flight's descriptor
  InputPath last_input_path_ = InputPath::host;
  HostBatch staged_desc_;  // the staged step in flight's descriptor
  const HostBatch* late_ahead_ = nullptr;
  int late_slot_ = 0;
};

}  // namespace mr
