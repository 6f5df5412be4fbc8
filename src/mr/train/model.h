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

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "data/batch.h"
#include "dist/device.h"
#include "dist/replica_set.h"
#include "nn/graph.h"
#include "nn/loss.h"
#include "nn/optimizer.h"
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

  void compile(const CompileConfig& config);
  bool compiled() const { return compiled_; }
  const CompileConfig& config() const { return config_; }
  void set_learning_rate(double lr);
  int64_t iterations() const { return state_.iterations; }
  // Keras' optimizer.finalize_variable_values at the end of fit() (EMA).
  void finalize_optimizer();
  void set_iterations(int64_t n) { state_.iterations = n; }
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
  int64_t output_width(int k) const;

  // The log keys; read_metrics() gives their running means in this order.
  // One output: "loss" then the metric names. Several (Keras 3's keys, sorted
  // as Keras 3 sorts them): "loss" (the weighted total), "<output>_loss",
  // "<output>_<metric>".
  std::vector<std::string> metric_names() const;
  void reset_metrics();
  std::vector<double> read_metrics() const;

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

 private:
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

  // ---- i14-gpu: CUDA graphs of the training step (train/step_graphs.h) ----------
 public:
  // options(mirrored.cuda_graphs); between steps.
  void set_cuda_graphs(bool on) { step_.graphs().set_enabled(on); }
  bool cuda_graphs() const { return step_.graphs().enabled(); }
  // Replays, captures and eager steps so far (0 replays on CPU replicas).
  const StepGraphStats& cuda_graph_stats() const { return step_.graphs().stats(); }
};

}  // namespace mr
