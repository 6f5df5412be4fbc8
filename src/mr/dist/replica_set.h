// The replica set: a strategy's devices, one backend and one host thread per
// replica, and the communicator that joins them. It runs a job on every
// replica and turns failures into one error naming the root cause; it knows
// nothing of models (train/ holds the state and the step).
//
// Invariants: at most one job per replica is in flight; a replica whose job
// throws aborts the communicator, so peers blocked in a collective stop
// waiting (within the collective deadline otherwise); wait() returns only
// after every replica's job returned, so no job outlives the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "dist/communicator.h"
#include "dist/device.h"

namespace mr {

class WorkerGroup;

// How a strategy is placed and reduced, beyond its devices.
struct PlacementOptions {
  int threads_per_replica = 1;      // CPU threads of each replica's backend
  double collective_timeout = 300;  // seconds a replica waits for its peers
  std::string cross_device_ops;     // see make_communicator()
  int logical_per_gpu = 1;          // logical GPUs per physical GPU: gpu:k is on k / n
  bool tf32 = false;                // GPU gemm may use TF32 tensor cores
  // ---- i16: several workers ----
  // The job's workers (null: this process alone). The model's description
  // and summary are compared across workers before anything else
  // (WorkerGroup::join_model).
  std::shared_ptr<WorkerGroup> workers;
  std::string model_description, model_summary;
};

class Worker;

class ReplicaSet {
 public:
  ReplicaSet(std::vector<DeviceSpec> devices, const PlacementOptions& options);
  ~ReplicaSet();
  ReplicaSet(const ReplicaSet&) = delete;
  ReplicaSet& operator=(const ReplicaSet&) = delete;

  int size() const { return static_cast<int>(devices_.size()); }
  const std::vector<DeviceSpec>& devices() const { return devices_; }
  Backend& backend(int rank) const { return *backends_.at(static_cast<size_t>(rank)); }
  Communicator& comm() const { return *comm_; }
  // What all-reduces ("NCCL", "thread all-reduce", ...), and why it is not
  // what the strategy asked for ("" when it is).
  std::string communicator_name() const { return comm_->name(); }
  const std::string& communicator_note() const { return comm_note_; }

  // Starts job(rank) on every replica's thread.
  void post(std::function<void(int rank)> job);
  // Waits for every replica; a failure throws mr::Error of the root cause's
  // kind: "replica <r> (<device>) failed during <what> at step <step>: ...".
  // While replicas work, `interrupted` (when given) is polled on the calling
  // thread; once it says true, replicas blocked in a collective or in a
  // device wait stop (the communicator is aborted, the backends' interrupt
  // flag set), a step that fails then throws Error(interrupted), and one that
  // completes anyway returns true: the caller stops at this step boundary.
  bool wait(const char* what, int64_t step, const std::function<bool()>& interrupted = nullptr);
  void run(const char* what, int64_t step, const std::function<void(int rank)>& job) {
    post(job);
    wait(what, step);
  }

  // For tests: replica `rank` fails (throws) or stalls `seconds` when the
  // step calls check_fault(rank, step) for training step `step` (1-based).
  enum class Fault { none, error, stall };
  void inject_fault(int rank, int64_t step, Fault kind, double seconds = 0.0);
  void check_fault(int rank, int64_t step) const;

  std::vector<std::thread::id> threads() const;

  // ---- i16: several workers ----
  // Replica `rank` of this process is replica global_rank(rank) of the job,
  // which has global_size() replicas (size() and rank without workers).
  const std::shared_ptr<WorkerGroup>& workers() const { return group_; }
  int global_size() const { return global_size_; }
  int global_rank(int rank) const { return first_global_ + rank; }
  // Replica `rank`'s rows of a batch of `rows` (dist/batch_split.h): over
  // every replica of the job when every worker holds the whole global batch
  // (training, evaluation), or over this process's replicas only (`local`:
  // prediction, which every worker computes for all its rows).
  void slice(int64_t rows, int rank, bool local, int64_t& begin, int64_t& count) const;
  // The rows of a global batch that this process's replicas take.
  int64_t local_rows(int64_t rows) const;
  // A sharded step (each worker holds only its own rows of the global
  // batch): this worker's rows start at global row `offset` of a global
  // batch of `global_rows`; slice() then splits the local batch over the
  // local replicas. Cleared by clear_shard().
  void set_shard(int64_t offset, int64_t global_rows) {
    shard_ = true;
    shard_offset_ = offset;
    shard_rows_ = global_rows;
  }
  void clear_shard() { shard_ = false; }
  bool sharded() const { return shard_; }
  // The global batch size of a step on a batch of `rows` (local rows when
  // sharded), and the global index of local row `begin`.
  int64_t global_rows(int64_t rows) const { return shard_ ? shard_rows_ : rows; }
  int64_t global_row(int64_t begin) const { return shard_ ? shard_offset_ + begin : begin; }

 private:
  std::shared_ptr<WorkerGroup> group_;
  int first_global_ = 0;
  int global_size_ = 0;
  bool shard_ = false;
  int64_t shard_offset_ = 0, shard_rows_ = 0;
  std::vector<DeviceSpec> devices_;
  std::unique_ptr<Communicator> comm_;
  std::string comm_note_;
  // The backends' device waits stop when this is set (WaitLimits::interrupt).
  std::atomic<bool> interrupt_{false};
  std::vector<std::unique_ptr<Backend>> backends_;
  // Declared last so that they are destroyed first: threads stop before the
  // backends their jobs use.
  std::vector<std::unique_ptr<Worker>> workers_;
  struct {
    int rank = -1;
    int64_t step = -1;
    Fault kind = Fault::none;
    double seconds = 0.0;
  } fault_;
};

}  // namespace mr
