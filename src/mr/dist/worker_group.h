// The workers of a multi-worker job, as one process sees them: the cluster
// (dist/cluster_spec.h), the chief's rendezvous store (dist/tcp_store.h; the
// chief also serves it), every worker's description, the process group the
// CPU collectives run on (dist/process_group.h) and a heartbeat that lets the
// survivors name a worker that died or hangs (DESIGN.md §7).
//
// Construction is the rendezvous: the chief starts the store, every worker
// claims its index (two claims of one index fail on every worker), publishes
// itself and waits for the others up to the rendezvous deadline, naming the
// ones it still waits for. Every worker then derives the same global replica
// ranks: worker w's replicas come after those of workers 0..w-1, so the batch
// split and the dropout keys depend only on global row offsets.
//
// Threads: the store client is used under a mutex (the main thread between
// steps, a replica thread when a collective failed and it names the cause);
// the heartbeat has its own client and thread and never touches R.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "dist/cluster_spec.h"
#include "dist/process_group.h"
#include "dist/tcp_store.h"

namespace mr {

class Communicator;

struct WorkerGroupOptions {
  int local_replicas = 1;
  bool gpu = false;                     // the replicas are GPUs (else CPUs)
  double timeout = 300;                 // the collectives' deadline (seconds)
  double rendezvous_timeout = 300;      // how long a worker waits for the others
  std::string implementation = "auto";  // "auto", "ring" (Gloo) or "nccl"
  // Set by another thread (the glue, on Ctrl-C): the rendezvous stops with
  // Error(interrupted) within ~100 ms. May be null.
  const std::atomic<bool>* cancel = nullptr;
};

// What every worker publishes at rendezvous.
struct WorkerInfo {
  std::string host;  // its host name, as it sees itself
  int64_t pid = 0;
  int replicas = 0;
  bool gpu = false;
  bool gloo = false;  // built with Gloo
  bool nccl = false;  // built with NCCL
};

// Which engine joins the workers' replicas.
enum class CrossWorker { gloo, gloo_staged, nccl };

class WorkerGroup {
 public:
  WorkerGroup(ClusterSpec spec, const WorkerGroupOptions& options);
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  const ClusterSpec& spec() const { return spec_; }
  // Replaces WorkerGroupOptions::cancel (null: none) once the rendezvous
  // is over and the flag it pointed to goes away.
  void set_cancel(const std::atomic<bool>* cancel) { options_.cancel = cancel; }
  int rank() const { return spec_.index; }
  int size() const { return spec_.size(); }
  bool is_chief() const { return spec_.index == 0; }
  const std::vector<WorkerInfo>& workers() const { return infos_; }
  int local_replicas() const { return infos_.at(static_cast<size_t>(rank())).replicas; }
  int first_replica() const { return first_.at(static_cast<size_t>(rank())); }
  int global_replicas() const { return global_replicas_; }
  // The worker that holds global replica `g`.
  int worker_of_replica(int g) const;
  // The rows of a global batch of `global_rows` that worker `w`'s replicas
  // take (the batch-split rule, dist/batch_split.h).
  int64_t worker_rows(int64_t global_rows, int w) const;
  // The job's workers on this worker's host (itself included), by host
  // name: they share its cores.
  int workers_on_this_host() const;
  CrossWorker engine() const { return engine_; }
  // "Gloo (TCP)" / "NCCL": what joins the workers (print()).
  std::string engine_name() const;
  // What all-reduces a model's replicas in this job, for print() and
  // Model::communicator_name(): NCCL's one communicator across the workers,
  // or the engine across the workers with `local` (the name of this worker's
  // own communicator of `local_size` replicas) within each.
  std::string communicator_name(const std::string& local, int local_size) const;
  double timeout() const { return options_.timeout; }
  // The process group (null for NCCL jobs whose workers lack Gloo).
  ProcessGroup* group() const { return group_.get(); }

  // A model placed on the job: every worker must build the same one. Every
  // worker publishes its description (layers, shapes, variables: the text is
  // compared, not a hash, so builds with different standard libraries agree)
  // and summary ("3 layers, 235,146 parameters"); a difference throws
  // Error(value) on every worker, naming the workers that differ from the
  // chief. Returns the model's sequence number (the same on every worker:
  // models are made in the same order).
  int64_t join_model(const std::string& description, const std::string& summary);
  // Every worker's `mine` for the `what`-th exchange of that name, in worker
  // order (through the store; main thread, between steps: e.g. the position
  // each worker's backup restored). Waits up to the collectives' deadline,
  // naming the workers it still waits for.
  std::vector<std::string> all_gather_text(const std::string& what, const std::string& mine);

  // The NCCL unique id of model `seq`'s communicator: made by the chief by
  // `make_id`, read from the store by the others.
  std::string nccl_id(int64_t seq, const std::function<std::string()>& make_id);

  // Sums `buf` over the workers on the host (metric totals at an epoch's end):
  // Gloo when the job has it, else through the store.
  void all_reduce_host(double* buf, int64_t n);

  // The chief says it finished `what` (e.g. saving a checkpoint); the others
  // wait for it for as long as the chief is alive (its heartbeat), not for
  // the collectives' deadline, so a slow save never trips them.
  void chief_done(const std::string& what);
  void wait_for_chief(const std::string& what);

  // Why collectives may have failed: the workers whose connection closed
  // (died) and those not heard from for longer than a few heartbeats (hung,
  // stopped or cut off); "" when every worker looks alive.
  std::string diagnose();
  // `e` with diagnose()'s explanation, as Error(worker) when a worker is
  // known dead or silent (else e's own kind); thrown.
  [[noreturn]] void rethrow(const Error& e, const std::string& during);

  // Leaves the job (idempotent; the destructor leaves too): the heartbeat
  // stops and the store hears goodbye, so the others do not count this
  // worker as dead; the chief first waits, up to the deadline, until every
  // other worker has left, so that nobody loses the store while it still
  // reads from it (e.g. waiting for the chief's last checkpoint). Every later
  // collective of the job throws.
  void leave();
  // This worker stops taking part in the job in the middle of it (Ctrl-C
  // during fit() or evaluate()): it publishes `reason`, closes its Gloo
  // connections and hangs up on the store without goodbye, so the others,
  // blocked in a collective it will never join, stop within a heartbeat
  // with Error(worker) naming it and the reason, not at the deadline. Every
  // later collective of this worker throws; the job must be restarted.
  void abandon(const std::string& reason);

  // Communicators to abort as soon as the heartbeat sees a dead worker (a
  // collective waiting on it then stops within a heartbeat, not a deadline).
  void watch(Communicator* comm);
  void unwatch(Communicator* comm);

 private:
  void rendezvous();
  void check_error_key();
  void start_heartbeat();
  std::string who_main(int i) const;
  std::string who_beat(int i) const;

  ClusterSpec spec_;
  WorkerGroupOptions options_;
  std::unique_ptr<StoreServer> server_;  // the chief's
  std::mutex store_mu_;
  std::unique_ptr<StoreClient> store_;
  std::vector<WorkerInfo> infos_;
  std::vector<int> first_;
  int global_replicas_ = 0;
  CrossWorker engine_ = CrossWorker::gloo;
  std::unique_ptr<ProcessGroup> group_;
  int64_t models_ = 0;
  std::map<std::string, int64_t> exchanges_;  // all_gather_text's counts per name

  std::mutex watch_mu_;
  std::vector<Communicator*> watched_;
  std::atomic<bool> stop_{false};
  bool left_ = false;
  std::atomic<bool> abandoned_{false};
  std::thread heartbeat_;
};

}  // namespace mr
