// NCCL all-reduce between the GPU replicas of one process: one communicator per
// GPU from ncclCommInitAll, each rank driven by its replica's own thread. In a
// multi-worker job (i16) the same class joins every GPU of every worker:
// ncclCommInitRank with the unique id the chief hands out at rendezvous.
// A collective runs on the rank's own NCCL stream, which first waits on an
// event recorded through the replica's Backend (the gradients are ready); the
// backend's compute lane then waits on the collective's event before the
// update. Nothing here blocks the host; the replica's next download polls
// with the model's deadline and abort flag, so a collective a peer never
// joins ends as a timeout or an abort, never as a hang. NCCL's ring reduction leaves every
// rank with bit-identical sums.
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"  // use_device, MR_CUDA_CALL
#include "backends/cuda/cuda_event.h"
#include "build_config.h"
#include "core/error.h"
#include "dist/comm_threads.h"
#include "dist/communicator.h"

#if MR_WITH_NCCL
#include <nccl.h>
#endif

namespace mr {

#if MR_WITH_NCCL
namespace {

void nccl_check(ncclResult_t st, const char* call, int ordinal) {
  if (st == ncclSuccess) return;
  fail(ErrorKind::device, call, " failed on CUDA device ", ordinal, ": ", ncclGetErrorString(st));
}
#define MR_NCCL_CALL(call, ordinal) nccl_check((call), #call, (ordinal))

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::vector<int> ordinals, double timeout)
      : ordinals_(std::move(ordinals)),
        timeout_(timeout),
        host_(static_cast<int>(ordinals_.size()), timeout) {
    init();
  }
  // i16: this process's GPUs are ranks first_rank.. of a communicator of
  // nranks GPUs over several processes, joined through the unique id `id`.
  NcclCommunicator(std::vector<int> ordinals, double timeout, int nranks, int first_rank,
                   std::string id)
      : ordinals_(std::move(ordinals)),
        timeout_(timeout),
        host_(static_cast<int>(ordinals_.size()), timeout),
        nranks_(nranks),
        first_rank_(first_rank),
        id_(std::move(id)) {
    MR_CHECK(id_.size() == sizeof(ncclUniqueId), internal, "an NCCL unique id has ",
             sizeof(ncclUniqueId), " bytes, not ", id_.size());
    init();
  }
  ~NcclCommunicator() override { destroy(abort_requested()); }

  int size() const override { return static_cast<int>(ordinals_.size()); }
  std::string name() const override { return comm_kind_name(CommKind::nccl); }

  void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) override {
    Rank& r = begin(rank, be);
    MR_NCCL_CALL(
        ncclAllReduce(buf, buf, static_cast<size_t>(n), ncclFloat, ncclSum, r.comm, r.stream),
        r.ordinal);
    end(r, be);
  }
  // i14-overlap: the bucket's collective on NCCL's stream, after the
  // gradients issued so far; the compute lane does not wait here (join()).
  void all_reduce_sum_async(int rank, Backend& be, float* buf, int64_t n) override {
    Rank& r = begin(rank, be);
    MR_NCCL_CALL(
        ncclAllReduce(buf, buf, static_cast<size_t>(n), ncclFloat, ncclSum, r.comm, r.stream),
        r.ordinal);
    MR_CUDA_CALL(cudaEventRecord(r.done->get(), r.stream), r.ordinal);
  }
  // NCCL's stream runs its collectives in order: waiting for the event of
  // the last one waits for all of them.
  void join(int rank, Backend& be) override {
    Rank& r = ranks_.at(static_cast<size_t>(rank));
    be.wait_event(*r.done, Lane::compute);
  }
  void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) override {
    MR_CHECK(root >= 0 && root < size(), value, "broadcast root ", root, " is not a rank");
    Rank& r = begin(rank, be);
    MR_NCCL_CALL(ncclBroadcast(buf, buf, static_cast<size_t>(n), ncclFloat, root, r.comm, r.stream),
                 r.ordinal);
    end(r, be);
  }
  void barrier(int rank) override { host_.barrier(rank); }

 protected:
  // Any thread: only wakes the host waits. A replica thread may be inside
  // ncclAllReduce on any rank's communicator, and NCCL communicators are not
  // thread-safe, so nothing NCCL is touched here.
  void request_abort(const std::string& why) override { host_.abort(why); }
  // One thread, every replica thread returned: a failed replica never joins
  // the collectives its peers queued, so those kernels would spin forever;
  // ncclCommAbort of every rank ends them, then fresh communicators replace
  // the aborted ones.
  void finish_abort(bool aborted) override {
    host_.reset();
    if (!aborted) return;
    // CUDA graphs captured with these communicators hold their kernels: a
    // replay after the abort would run kernels of a dead communicator
    // (illegal address, or a hang). Every backend that ran a collective here
    // drops its graphs; its step then runs eagerly once and captures again,
    // with the new communicators (StepGraphs' lost-graph path).
    for (Backend* be : served_)
      if (be != nullptr) be->graph_reset();
    destroy(true);
    // i16: a communicator across processes cannot be rebuilt by one of them
    // (every process would need the same fresh unique id): it stays closed.
    if (id_.empty()) init();
  }

 private:
  struct Rank {
    int ordinal = 0;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;  // NCCL's stream on this GPU
    // ready: the replica's gradients are complete (recorded on its compute
    // lane); done: the collective finished (recorded on `stream`).
    std::unique_ptr<CudaEvent> ready, done;
  };

  void init() {
    const int n = static_cast<int>(ordinals_.size());
    std::vector<ncclComm_t> comms(static_cast<size_t>(n), nullptr);
    if (id_.empty()) {
      MR_NCCL_CALL(ncclCommInitAll(comms.data(), n, ordinals_.data()), ordinals_.front());
    } else {
      // One process initialising several ranks must group the calls, or the
      // first would wait for the others forever.
      ncclUniqueId uid;
      std::memcpy(&uid, id_.data(), sizeof(uid));
      MR_NCCL_CALL(ncclGroupStart(), ordinals_.front());
      for (int i = 0; i < n; ++i) {
        use_device(ordinals_[static_cast<size_t>(i)]);
        MR_NCCL_CALL(
            ncclCommInitRank(&comms[static_cast<size_t>(i)], nranks_, uid, first_rank_ + i),
            ordinals_[static_cast<size_t>(i)]);
      }
      MR_NCCL_CALL(ncclGroupEnd(), ordinals_.front());
    }
    ranks_.clear();
    ranks_.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      Rank& r = ranks_[static_cast<size_t>(i)];
      r.ordinal = ordinals_[static_cast<size_t>(i)];
      r.comm = comms[static_cast<size_t>(i)];
      use_device(r.ordinal);
      MR_CUDA_CALL(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), r.ordinal);
      r.ready = std::make_unique<CudaEvent>(r.ordinal);
      r.done = std::make_unique<CudaEvent>(r.ordinal);
    }
  }

  // abort: ncclCommAbort first (pending collectives may never complete, and
  // the abort ends them), else drain the streams then ncclCommDestroy.
  // Streams are drained by polling within the timeout; a stream that does
  // not drain is leaked rather than destroyed under work.
  void destroy(bool abort) noexcept {
    if (abort) end_comms(true);
    std::vector<char> drained(ranks_.size(), 0);
    for (size_t i = 0; i < ranks_.size(); ++i) drained[i] = drain(ranks_[i]);
    if (!abort) end_comms(false);
    for (size_t i = 0; i < ranks_.size(); ++i)
      if (drained[i] && cudaSetDevice(ranks_[i].ordinal) == cudaSuccess)
        cudaStreamDestroy(ranks_[i].stream);
    ranks_.clear();
  }
  void end_comms(bool abort) noexcept {
    for (Rank& r : ranks_)
      if (r.comm != nullptr && cudaSetDevice(r.ordinal) == cudaSuccess) {
        if (abort)
          ncclCommAbort(r.comm);
        else
          ncclCommDestroy(r.comm);
        r.comm = nullptr;
      }
  }
  bool drain(Rank& r) noexcept {
    if (r.stream == nullptr || cudaSetDevice(r.ordinal) != cudaSuccess) return false;
    if (cudaEventRecord(r.done->get(), r.stream) != cudaSuccess) return false;
    try {
      cuda_wait_event(r.done->get(), r.ordinal, WaitLimits{timeout_, nullptr, nullptr},
                      "CUDA device " + std::to_string(r.ordinal), "NCCL's stream to drain");
      return true;
    } catch (...) {
      return false;
    }
  }

  // Orders NCCL's stream after the work the replica issued so far (through
  // an event of the replica's backend, whatever it is internally).
  Rank& begin(int rank, Backend& be) {
    MR_CHECK(rank >= 0 && rank < size(), internal, "no rank ", rank);
    MR_CHECK(be.kind() == DeviceKind::cuda, device, "the NCCL all-reduce needs GPU replicas, got ",
             be.name());
    if (abort_requested()) throw CollectiveAborted("NCCL collective abandoned: aborted");
    served_.at(static_cast<size_t>(rank)) = &be;  // rank's own thread: its own slot
    MR_CHECK(!ranks_.empty(), worker,
             "the NCCL communicator across workers was aborted after a failure; every worker "
             "must be restarted");
    Rank& r = ranks_[static_cast<size_t>(rank)];
    MR_CHECK(r.comm != nullptr, internal, "the NCCL communicator was aborted");
    use_device(r.ordinal);
    be.record_event(*r.ready, Lane::compute);
    MR_CUDA_CALL(cudaStreamWaitEvent(r.stream, r.ready->get(), 0), r.ordinal);
    return r;
  }
  // The replica's later work (the update) waits for the collective.
  void end(Rank& r, Backend& be) {
    MR_CUDA_CALL(cudaEventRecord(r.done->get(), r.stream), r.ordinal);
    be.wait_event(*r.done, Lane::compute);
  }

  std::vector<int> ordinals_;
  double timeout_;
  std::vector<Rank> ranks_;
  // The backend each rank's collectives ran on (not owned: the replica set
  // owns both; finish_abort() runs while its backends live), whose captured
  // graphs an aborting reset drops.
  std::vector<Backend*> served_ = std::vector<Backend*>(ordinals_.size(), nullptr);
  ThreadCommunicator host_;  // barriers, deadlines and aborts on the host side
  // i16: ranks across processes (id_ empty: this process alone).
  int nranks_ = 0;
  int first_rank_ = 0;
  std::string id_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<int>& ordinals,
                                                     double timeout_seconds) {
  MR_CHECK(!ordinals.empty(), value, "an NCCL communicator needs at least one GPU");
  return std::make_unique<NcclCommunicator>(ordinals, timeout_seconds);
}

std::unique_ptr<Communicator> make_nccl_communicator_ranks(const std::vector<int>& ordinals,
                                                           double timeout_seconds, int nranks,
                                                           int first_rank, const std::string& id) {
  MR_CHECK(!ordinals.empty(), value, "an NCCL communicator needs at least one GPU");
  MR_CHECK(first_rank >= 0 && first_rank + static_cast<int>(ordinals.size()) <= nranks, internal,
           "NCCL ranks ", first_rank, "+", ordinals.size(), " exceed ", nranks);
  return std::make_unique<NcclCommunicator>(ordinals, timeout_seconds, nranks, first_rank, id);
}

std::string nccl_unique_id() {
  ncclUniqueId uid;
  MR_NCCL_CALL(ncclGetUniqueId(&uid), -1);
  return std::string(reinterpret_cast<const char*>(&uid), sizeof(uid));
}

#else

std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<int>&, double) {
  fail(ErrorKind::device, "this build of mirrored was compiled without NCCL (see NCCL_HOME)");
}

std::unique_ptr<Communicator> make_nccl_communicator_ranks(const std::vector<int>&, double, int,
                                                           int, const std::string&) {
  fail(ErrorKind::device, "this build of mirrored was compiled without NCCL (see NCCL_HOME)");
}

std::string nccl_unique_id() {
  fail(ErrorKind::device, "this build of mirrored was compiled without NCCL (see NCCL_HOME)");
}

#endif

}  // namespace mr
