// A model placed on a strategy's devices: the graph, one replica per device
// (each with its own backend, flat parameter/gradient/slot buffers, activation
// workspace and host thread), the communicator that joins them, and the
// compiled loss, metrics and optimizer. One device is a strategy of one
// replica: there is no other code path.
//
// Invariants: after every public call returns, all replicas hold bit-identical
// parameters and slots; iterations() counts applied updates (Keras'
// optimizer.iterations); metric accumulators live on the devices and are only
// read by read_metrics().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "data/batch.h"
#include "dist/communicator.h"
#include "dist/device.h"
#include "nn/graph.h"
#include "nn/loss.h"
#include "nn/optimizer.h"

namespace mr {

struct CompileConfig {
  OptimizerConfig optimizer;
  LossConfig loss;
  std::vector<MetricConfig> metrics;
};

// How a model is placed and reduced, beyond its devices.
struct PlacementOptions {
  int threads_per_replica = 1;      // CPU threads of each replica's backend
  double collective_timeout = 300;  // seconds a replica waits for its peers
  std::string cross_device_ops;     // see make_communicator()
  int logical_per_gpu = 1;          // logical GPUs per physical GPU: gpu:k is on k / n
  bool tf32 = false;                // GPU gemm may use TF32 tensor cores
};

class Model {
 public:
  // threads_per_replica: CPU threads of each replica's backend;
  // collective_timeout: seconds a replica waits for its peers in a collective.
  // initialize = false leaves the parameters at zero, for a caller that sets
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
  int replicas() const { return static_cast<int>(replicas_.size()); }
  const std::vector<DeviceSpec>& devices() const { return devices_; }
  // What all-reduces the gradients ("NCCL", "thread all-reduce", ...), and why
  // it is not what the strategy asked for ("" when it is).
  std::string communicator_name() const { return comm_->name(); }
  const std::string& communicator_note() const { return comm_note_; }

  // Flat parameters (Graph layout) of replica `rank`.
  std::vector<float> get_params(int rank = 0) const;
  // Sets every replica's parameters (a broadcast from the host).
  void set_params(const std::vector<float>& flat);
  // Non-trainable variables (Graph::states() layout), likewise.
  std::vector<float> get_state(int rank = 0) const;
  void set_state(const std::vector<float>& flat);

  void compile(const CompileConfig& config);
  bool compiled() const { return compiled_; }
  const CompileConfig& config() const { return config_; }
  void set_learning_rate(double lr);
  int64_t iterations() const { return iterations_; }
  void set_iterations(int64_t n) { iterations_ = n; }
  // Slot buffer k (slot_names() order) of replica `rank`.
  std::vector<float> get_slot(int k, int rank = 0) const;
  void set_slot(int k, const std::vector<float>& flat);

  // One optimizer step on a global batch: split, forward, loss, backward,
  // all-reduce, update. start/finish let the caller prepare the next batch
  // while the replicas work; the batch must stay valid until finish returns.
  void start_train_step(const HostBatch& batch);
  void finish_step();
  void train_step(const HostBatch& batch) {
    start_train_step(batch);
    finish_step();
  }
  void start_eval_step(const HostBatch& batch);
  // Forward only; writes rows x output_width() floats for output `k`.
  void predict_step(const HostBatch& batch, int k, float* out);
  int64_t output_width(int k) const;

  // "loss" then the metric names; read_metrics() gives their running means.
  std::vector<std::string> metric_names() const;
  void reset_metrics();
  std::vector<double> read_metrics() const;

  // For tests: make replica `rank` fail (throw) or stall for `seconds` at the
  // start of training step `step` (1-based, Keras' iterations + 1).
  enum class Fault { none, error, stall };
  void inject_fault(int rank, int64_t step, Fault kind, double seconds = 0.0);

  // For tests and diagnostics.
  std::vector<int64_t> rows_last_step() const;
  std::vector<std::thread::id> replica_threads() const;
  std::vector<const void*> replica_param_buffers() const;

 private:
  struct Replica;
  void run_all(const char* what, const std::function<void(Replica&)>& job);
  void wait_all(const char* what);
  // Posts `job` to every replica; a replica whose job throws aborts the
  // communicator so that its peers stop waiting for it.
  void post_all(std::function<void(Replica&)> job);
  enum class Buffers { params, state, slots };
  void broadcast_from_first(Buffers which);
  void stage(Replica& r, const HostBatch& batch, int64_t begin, int64_t count, bool targets);
  void check_batch(const HostBatch& batch, bool targets) const;

  std::shared_ptr<const Graph> graph_;
  std::vector<DeviceSpec> devices_;
  std::unique_ptr<Communicator> comm_;
  std::string comm_note_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  CompileConfig config_;
  bool compiled_ = false;
  int64_t iterations_ = 0;
  int64_t samples_seen_ = 0;  // since reset_metrics()
  bool in_flight_ = false;
  bool in_flight_train_ = false;
  struct {
    int rank = -1;
    int64_t step = -1;
    Fault kind = Fault::none;
    double seconds = 0.0;
  } fault_;
};

}  // namespace mr
