#include "dist/replica_set.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "core/error.h"
#include "dist/batch_split.h"
#include "dist/comm_threads.h"
#include "dist/worker.h"
#include "dist/worker_group.h"

namespace mr {

ReplicaSet::ReplicaSet(std::vector<DeviceSpec> devices, const PlacementOptions& options)
    : devices_(std::move(devices)) {
  MR_CHECK(!devices_.empty(), value, "a model needs at least one device");
  for (size_t i = 0; i < devices_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      MR_CHECK(!(devices_[i] == devices_[j]), value, "device ", devices_[i].name(),
               " is listed twice");
  assign_gpu_ordinals(devices_, options.logical_per_gpu);
  group_ = options.workers;
  global_size_ = size();
  if (group_) {
    MR_CHECK(group_->local_replicas() == size(), value, "this worker joined its job with ",
             group_->local_replicas(), " replica(s) but the model is placed on ", size(),
             " device(s)");
    const int64_t seq = group_->join_model(options.model_description, options.model_summary);
    first_global_ = group_->first_replica();
    global_size_ = group_->global_replicas();
    comm_ = make_worker_communicator(devices_, options, seq, &comm_note_);
  } else {
    comm_ = make_communicator(devices_, options.collective_timeout, options.cross_device_ops,
                              &comm_note_);
  }
  for (const DeviceSpec& d : devices_) {
    backends_.push_back(create_backend(d, std::max(1, options.threads_per_replica)));
    if (options.tf32) backends_.back()->set_tf32(true);
    // Device waits give up at the collective deadline or when a peer aborts.
    backends_.back()->set_wait_limits(
        WaitLimits{options.collective_timeout, comm_->abort_flag(), &interrupt_});
    workers_.push_back(std::make_unique<Worker>());
  }
}

ReplicaSet::~ReplicaSet() = default;

void ReplicaSet::post(std::function<void(int)> job) {
  auto shared = std::make_shared<std::function<void(int)>>(std::move(job));
  for (int rank = 0; rank < size(); ++rank) {
    Communicator* comm = comm_.get();
    workers_[static_cast<size_t>(rank)]->post([rank, comm, shared] {
      try {
        (*shared)(rank);
      } catch (const std::exception& e) {
        comm->abort("replica " + std::to_string(rank) + " failed: " + e.what());
        throw;
      }
    });
  }
}

bool ReplicaSet::wait(const char* what, int64_t step, const std::function<bool()>& interrupted) {
  if (interrupted) {
    // A healthy step finishes within the grace period and the caller stops at
    // its boundary with every replica intact; only a step still running after
    // it (stuck in a collective or on a device) is stopped.
    constexpr double kGraceSeconds = 5.0;
    bool seen = false;
    auto seen_at = std::chrono::steady_clock::now();
    for (auto& w : workers_) {
      while (!w->wait_for(0.05)) {
        if (!seen && interrupted()) {
          seen = true;
          seen_at = std::chrono::steady_clock::now();
        }
        if (seen && !interrupt_.load(std::memory_order_relaxed) &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - seen_at).count() >
                kGraceSeconds) {
          interrupt_.store(true, std::memory_order_release);
          comm_->abort("interrupted by the user");
        }
      }
    }
    if (seen && !interrupt_.load()) {
      wait(what, step);  // the step completed: report its own failure, if any
      return true;
    }
  }
  const bool was_interrupted = interrupt_.exchange(false);
  // Wait for every replica before reporting. The error reported is the root
  // cause: a replica woken by an abort only says that a peer failed.
  std::exception_ptr first;
  bool first_is_abort = true;
  ErrorKind kind = ErrorKind::internal;
  std::string message, where;
  for (int rank = 0; rank < size(); ++rank) {
    try {
      workers_[static_cast<size_t>(rank)]->wait();
    } catch (const std::exception& e) {
      const bool is_abort = dynamic_cast<const CollectiveAborted*>(&e) != nullptr;
      if (first && (is_abort || !first_is_abort)) continue;
      first = std::current_exception();
      first_is_abort = is_abort;
      const auto* err = dynamic_cast<const Error*>(&e);
      kind = err != nullptr ? err->kind() : ErrorKind::internal;
      message = e.what();
      where = "replica " + std::to_string(rank) + " (" +
              devices_[static_cast<size_t>(rank)].name() + ")";
    }
  }
  if (!first) {
    if (was_interrupted) comm_->reset();  // the abort found nobody waiting
    return was_interrupted;
  }
  comm_->reset();
  // A replica woken by the heartbeat's abort (a worker died) only knows that
  // it was aborted: the group says who.
  if (first_is_abort && group_) {
    const std::string why = group_->diagnose();
    if (!why.empty()) {
      kind = ErrorKind::worker;
      message = why;
    }
  }
  if (was_interrupted)
    fail(ErrorKind::interrupted, "interrupted during ", what, " at step ", step, " (", where, ": ",
         message, ")");
  fail(kind, where, " failed during ", what, " at step ", step, ": ", message);
}

void ReplicaSet::inject_fault(int rank, int64_t step, Fault kind, double seconds) {
  MR_CHECK(rank >= 0 && rank < size(), value, "no replica ", rank);
  fault_.rank = rank;
  fault_.step = step;
  fault_.kind = kind;
  fault_.seconds = seconds;
}

void ReplicaSet::check_fault(int rank, int64_t step) const {
  if (fault_.rank != rank || fault_.step != step) return;
  if (fault_.kind == Fault::error) fail(ErrorKind::internal, "injected failure (test)");
  if (fault_.kind == Fault::stall)
    std::this_thread::sleep_for(std::chrono::duration<double>(fault_.seconds));
}

void ReplicaSet::slice(int64_t rows, int rank, bool local, int64_t& begin, int64_t& count) const {
  if (local || !group_ || shard_)
    replica_slice(rows, size(), rank, begin, count);
  else
    replica_slice(rows, global_size_, global_rank(rank), begin, count);
}

int64_t ReplicaSet::local_rows(int64_t rows) const {
  if (!group_ || shard_) return rows;
  int64_t total = 0, begin = 0, count = 0;
  for (int r = 0; r < size(); ++r) {
    replica_slice(rows, global_size_, global_rank(r), begin, count);
    total += count;
  }
  return total;
}

std::vector<std::thread::id> ReplicaSet::threads() const {
  std::vector<std::thread::id> ids;
  for (const auto& w : workers_) ids.push_back(w->id());
  return ids;
}

}  // namespace mr
