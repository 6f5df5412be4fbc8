// Collectives between the replicas of one strategy. Every replica thread calls
// the same collective with its own rank; the call returns when the result is
// in that replica's buffer. Sums are done in a fixed order, so every replica
// ends with bit-identical values.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"

namespace mr {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  // buf (n floats on `be`'s device) becomes the sum over ranks.
  virtual void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) = 0;
  // buf becomes root's buf.
  virtual void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) = 0;
  virtual void barrier(int rank) = 0;
  // Aborting happens in two halves, because GPU communicators (NCCL) are not
  // thread-safe and may be inside a collective on every replica thread:
  // - abort() may be called from any thread (the failing replica's): it only
  //   requests the abort, setting abort_flag() and waking ranks blocked on
  //   the host; device waits observe the flag (Backend::set_wait_limits), so
  //   every rank stops waiting and throws CollectiveAborted;
  // - reset() is called from one thread once every replica thread has
  //   returned (Model::wait_all): it performs what the abort needs (e.g.
  //   ncclCommAbort of every rank, then a fresh communicator) and readies the
  //   communicator again.
  void abort(const std::string& why) {
    abort_requested_.store(true, std::memory_order_release);
    request_abort(why);
  }
  void reset() {
    finish_abort(abort_requested_.load(std::memory_order_acquire));
    abort_requested_.store(false, std::memory_order_release);
  }
  bool abort_requested() const { return abort_requested_.load(std::memory_order_acquire); }
  // For WaitLimits::abort.
  const std::atomic<bool>* abort_flag() const { return &abort_requested_; }
  // Sizes the communicator's scratch for collectives of up to `floats`
  // (the flat parameter count), so that no collective allocates. Outside
  // steps; without it a first larger collective allocates once.
  virtual void reserve(int64_t /*floats*/) {}
  // What reduces: "NCCL", "thread all-reduce", ... (printed for the user).
  virtual std::string name() const = 0;

  // ---- i14-overlap ----
  // An all-reduce (SUM) that may overlap the replica's later work (gradient
  // buckets launched during backward): the replica must neither read nor
  // write `buf` until join(). A rank's async collectives run in launch
  // order. Default: the synchronous all_reduce_sum (host communicators).
  virtual void all_reduce_sum_async(int rank, Backend& be, float* buf, int64_t n) {
    all_reduce_sum(rank, be, buf, n);
  }
  // The replica's work issued after this waits for every async all-reduce
  // it started: a device-side wait (no host synchronisation, capturable).
  virtual void join(int /*rank*/, Backend& /*be*/) {}

 protected:
  // Wakes ranks blocked on the host; any thread; must not touch state that
  // a rank inside a collective uses.
  virtual void request_abort(const std::string& /*why*/) {}
  // On one thread, no rank inside a collective; `aborted`: abort() was called.
  virtual void finish_abort(bool /*aborted*/) {}

 private:
  std::atomic<bool> abort_requested_{false};
};

// One replica: every collective is the identity.
std::unique_ptr<Communicator> make_solo_communicator();

struct DeviceSpec;

// Which communicator serves replicas on `devices` (one rank per device).
// `ops` is the strategy's cross_device_ops: "" (choose), "nccl",
// "hierarchical_copy" or "reduce_to_one_device".
// Throws Error(value) for an unknown `ops`, and for "nccl" on CPU devices.
// - one device: the identity;
// - CPU devices: the thread all-reduce ("reduce_to_one_device": host-staged);
// - GPUs: NCCL when built with it and every replica has its own physical GPU,
//   else the peer-copy all-reduce; "reduce_to_one_device" stages through host
//   memory.
// `note` says why the choice is not NCCL when NCCL was asked for or would
// have been the default (for the user, once); it is empty otherwise.
enum class CommKind { solo, threads, staged, peer, nccl };
struct CommPlan {
  CommKind kind = CommKind::solo;
  std::string note;
};
CommPlan plan_communicator(const std::vector<DeviceSpec>& devices, const std::string& ops);
// "none (one replica)", "thread all-reduce", "host-staged reduction",
// "peer-copy all-reduce", "NCCL": what each communicator's name() says.
const char* comm_kind_name(CommKind kind);

// Builds the plan's communicator. When NCCL is planned but cannot be
// initialised, falls back to the peer copy and *note says why.
std::unique_ptr<Communicator> make_communicator(const std::vector<DeviceSpec>& devices,
                                                double timeout_seconds, const std::string& ops = "",
                                                std::string* note = nullptr);

// Host-staged: each rank downloads its buffer into host memory, the ranks sum
// there in rank order (as the thread all-reduce does) and upload the result.
// Works for any backend; the fallback of last resort.
std::unique_ptr<Communicator> make_staged_communicator(int size, double timeout_seconds);

// GPU communicators (dist/comm_nccl.cu, dist/comm_peer.cu; CPU-only builds
// link dist/comm_gpu_none.cpp, whose factories throw Error(device)). One rank
// per entry of `ordinals` (CUDA devices; the peer copy allows repeats).
std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<int>& ordinals,
                                                     double timeout_seconds);
std::unique_ptr<Communicator> make_peer_communicator(const std::vector<int>& ordinals,
                                                     double timeout_seconds);

// ---- i16: several workers (dist/comm_workers.cpp) ----
struct PlacementOptions;
// The communicator of this worker's replicas in a multi-worker job
// (options.workers): NCCL over every GPU of every worker (one communicator,
// this worker's GPUs are ranks first_replica() + i), or hierarchically on
// Gloo: this worker's replicas reduce among themselves (threads, or the
// single-process GPU communicator), its first replica all-reduces with the
// other workers, then broadcasts to the rest. `seq`: the model's sequence
// number in the job (the key of its NCCL id).
std::unique_ptr<Communicator> make_worker_communicator(const std::vector<DeviceSpec>& devices,
                                                       const PlacementOptions& options, int64_t seq,
                                                       std::string* note);
// NCCL over `nranks` GPUs of several processes: this process's GPUs
// `ordinals` are ranks first_rank.. of the communicator whose unique id
// (ncclUniqueId's bytes) `id` is. Error(device) without NCCL.
std::unique_ptr<Communicator> make_nccl_communicator_ranks(const std::vector<int>& ordinals,
                                                           double timeout_seconds, int nranks,
                                                           int first_rank, const std::string& id);
// A fresh ncclUniqueId, as bytes (the chief makes it; Error(device) without NCCL).
std::string nccl_unique_id();

}  // namespace mr
