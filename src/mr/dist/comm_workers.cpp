// The communicator of one worker's replicas in a multi-worker job
// (DESIGN.md §7): hierarchical on Gloo — the worker's replicas reduce among
// themselves, its first replica all-reduces the sum with the other workers
// (through host memory for GPU replicas), then hands it to the others — or
// NCCL over every GPU of every worker.
//
// Invariants: every replica of every worker ends an all-reduce with
// bit-identical values (the local sum is the same on every local rank, the
// cross-worker sum is identical on every worker, and the broadcast copies
// it); only local rank 0 talks to the other workers, so Gloo's context is
// never used by two threads at once; a failure of the cross-worker step is
// rethrown by the WorkerGroup, naming the worker that died or hung.
#include <cstring>
#include <vector>

#include "core/error.h"
#include "dist/comm_threads.h"
#include "dist/communicator.h"
#include "dist/device.h"
#include "dist/replica_set.h"
#include "dist/worker_group.h"

namespace mr {

namespace {

class WorkerCommunicator final : public Communicator {
 public:
  WorkerCommunicator(std::unique_ptr<Communicator> local, std::shared_ptr<WorkerGroup> workers)
      : local_(std::move(local)), workers_(std::move(workers)) {
    workers_->watch(this);
  }
  ~WorkerCommunicator() override { workers_->unwatch(this); }

  int size() const override { return local_->size(); }
  std::string name() const override {
    return workers_->communicator_name(local_->name(), local_->size());
  }
  void reserve(int64_t floats) override {
    local_->reserve(floats);
    if (host_.size() < static_cast<size_t>(floats)) host_.resize(static_cast<size_t>(floats));
  }

  void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) override {
    local_->all_reduce_sum(rank, be, buf, n);
    if (rank == 0) cross(be, n, buf, [&](float* h) { group().all_reduce_sum(h, n); });
    local_->broadcast(rank, 0, be, buf, n);
  }
  // `root` is a replica of this process; the value that every replica of
  // every worker ends with is the chief's root replica's.
  void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) override {
    if (workers_->is_chief()) local_->broadcast(rank, root, be, buf, n);
    if (rank == 0) cross(be, n, buf, [&](float* h) { group().broadcast(h, n, 0); });
    local_->broadcast(rank, 0, be, buf, n);
  }
  void barrier(int rank) override {
    local_->barrier(rank);
    if (rank == 0) {
      try {
        group().barrier();
      } catch (const Error& e) {
        workers_->rethrow(e, "a barrier between workers");
      }
    }
    local_->barrier(rank);
  }

 protected:
  void request_abort(const std::string& why) override { local_->abort(why); }
  void finish_abort(bool) override { local_->reset(); }

 private:
  ProcessGroup& group() const {
    ProcessGroup* g = workers_->group();
    MR_CHECK(g != nullptr, worker,
             "this worker has quit its multi-worker job (Ctrl-C during fit() or evaluate()): "
             "restart the job");
    return *g;
  }
  // Runs op on host memory holding buf's n floats: buf itself on a CPU,
  // else a staging copy (sized by reserve(), so no step allocates).
  template <class Op>
  void cross(Backend& be, int64_t n, float* buf, Op&& op) {
    try {
      if (be.kind() == DeviceKind::cpu) {
        op(buf);
        return;
      }
      if (host_.size() < static_cast<size_t>(n)) host_.resize(static_cast<size_t>(n));
      be.download(host_.data(), buf, static_cast<size_t>(n) * sizeof(float));
      op(host_.data());
      be.upload(buf, host_.data(), static_cast<size_t>(n) * sizeof(float));
    } catch (const Error& e) {
      if (dynamic_cast<const CollectiveAborted*>(&e) != nullptr) throw;
      workers_->rethrow(e, "the all-reduce between workers");
    }
  }

  std::unique_ptr<Communicator> local_;
  std::shared_ptr<WorkerGroup> workers_;
  std::vector<float> host_;
};

// NCCL's communicator spans every worker; the group only watches it (a dead
// worker aborts it through the heartbeat).
class WatchedCommunicator final : public Communicator {
 public:
  WatchedCommunicator(std::unique_ptr<Communicator> inner, std::shared_ptr<WorkerGroup> workers)
      : inner_(std::move(inner)), workers_(std::move(workers)) {
    workers_->watch(this);
  }
  ~WatchedCommunicator() override { workers_->unwatch(this); }
  int size() const override { return inner_->size(); }
  std::string name() const override {
    return workers_->communicator_name(inner_->name(), inner_->size());
  }
  void reserve(int64_t floats) override { inner_->reserve(floats); }
  void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) override {
    inner_->all_reduce_sum(rank, be, buf, n);
  }
  void all_reduce_sum_async(int rank, Backend& be, float* buf, int64_t n) override {
    inner_->all_reduce_sum_async(rank, be, buf, n);
  }
  void join(int rank, Backend& be) override { inner_->join(rank, be); }
  void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) override {
    inner_->broadcast(rank, root, be, buf, n);
  }
  void barrier(int rank) override { inner_->barrier(rank); }
  // The inner communicator's abort flag is what its device waits observe.
  void request_abort(const std::string& why) override { inner_->abort(why); }
  void finish_abort(bool) override { inner_->reset(); }

 private:
  std::unique_ptr<Communicator> inner_;
  std::shared_ptr<WorkerGroup> workers_;
};

}  // namespace

std::unique_ptr<Communicator> make_worker_communicator(const std::vector<DeviceSpec>& devices,
                                                       const PlacementOptions& options, int64_t seq,
                                                       std::string* note) {
  const std::shared_ptr<WorkerGroup>& workers = options.workers;
  MR_CHECK(workers != nullptr, internal, "make_worker_communicator without workers");
  if (note != nullptr) note->clear();
  if (workers->engine() == CrossWorker::nccl) {
    std::vector<int> ordinals;
    for (const DeviceSpec& d : devices) ordinals.push_back(d.cuda_ordinal());
    const std::string id = workers->nccl_id(seq, [] { return nccl_unique_id(); });
    return std::make_unique<WatchedCommunicator>(
        make_nccl_communicator_ranks(ordinals, options.collective_timeout,
                                     workers->global_replicas(), workers->first_replica(), id),
        workers);
  }
  // Within the worker: what a single process would use, except that NCCL
  // stays the cross-worker engine's business (a local NCCL communicator is
  // fine too: its results are on the devices, the staging reads them).
  std::string local_note;
  auto local = make_communicator(devices, options.collective_timeout,
                                 options.cross_device_ops == "nccl" ? "" : options.cross_device_ops,
                                 &local_note);
  if (note != nullptr) *note = local_note;
  return std::make_unique<WorkerCommunicator>(std::move(local), workers);
}

}  // namespace mr
