// NCCL all-reduce between the GPU replicas of one process: one communicator per
// GPU from ncclCommInitAll, each rank driven by its replica's own thread.
// A collective runs on the rank's communication stream, which first waits on
// an event recorded on the replica's compute stream (the gradients are
// ready); the compute stream then waits on the collective's event before the
// update. Nothing here blocks the host. NCCL's ring reduction leaves every
// rank with bit-identical sums.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
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
      : ordinals_(std::move(ordinals)), host_(static_cast<int>(ordinals_.size()), timeout) {
    init();
  }
  ~NcclCommunicator() override { destroy(); }

  int size() const override { return static_cast<int>(ordinals_.size()); }
  std::string name() const override { return comm_kind_name(CommKind::nccl); }

  void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) override {
    Rank& r = begin(rank, be);
    MR_NCCL_CALL(
        ncclAllReduce(buf, buf, static_cast<size_t>(n), ncclFloat, ncclSum, r.comm, r.stream),
        r.ordinal);
    end(r, be);
  }
  void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) override {
    MR_CHECK(root >= 0 && root < size(), value, "broadcast root ", root, " is not a rank");
    Rank& r = begin(rank, be);
    MR_NCCL_CALL(ncclBroadcast(buf, buf, static_cast<size_t>(n), ncclFloat, root, r.comm, r.stream),
                 r.ordinal);
    end(r, be);
  }
  void barrier(int rank) override { host_.barrier(rank); }

  // A failed replica never joins the collectives its peers queued: aborting
  // the NCCL communicators makes those fail instead of hanging the GPUs.
  void abort(const std::string& why) override {
    host_.abort(why);
    for (Rank& r : ranks_)
      if (r.comm != nullptr) ncclCommAbort(r.comm);
    for (Rank& r : ranks_) r.comm = nullptr;
    aborted_ = true;
  }
  void reset() override {
    host_.reset();
    if (aborted_) {
      destroy();
      init();
      aborted_ = false;
    }
  }

 private:
  struct Rank {
    int ordinal = 0;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t ready = nullptr, done = nullptr;
  };

  void init() {
    const int n = static_cast<int>(ordinals_.size());
    std::vector<ncclComm_t> comms(static_cast<size_t>(n), nullptr);
    MR_NCCL_CALL(ncclCommInitAll(comms.data(), n, ordinals_.data()), ordinals_.front());
    ranks_.assign(static_cast<size_t>(n), Rank{});
    for (int i = 0; i < n; ++i) {
      Rank& r = ranks_[static_cast<size_t>(i)];
      r.ordinal = ordinals_[static_cast<size_t>(i)];
      r.comm = comms[static_cast<size_t>(i)];
      use_device(r.ordinal);
      MR_CUDA_CALL(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), r.ordinal);
      MR_CUDA_CALL(cudaEventCreateWithFlags(&r.ready, cudaEventDisableTiming), r.ordinal);
      MR_CUDA_CALL(cudaEventCreateWithFlags(&r.done, cudaEventDisableTiming), r.ordinal);
    }
  }

  void destroy() noexcept {
    for (Rank& r : ranks_) {
      if (cudaSetDevice(r.ordinal) != cudaSuccess) continue;
      if (r.stream) cudaStreamSynchronize(r.stream);
      if (r.comm) ncclCommDestroy(r.comm);
      if (r.ready) cudaEventDestroy(r.ready);
      if (r.done) cudaEventDestroy(r.done);
      if (r.stream) cudaStreamDestroy(r.stream);
    }
    ranks_.clear();
  }

  Rank& begin(int rank, Backend& be) {
    MR_CHECK(rank >= 0 && rank < size(), internal, "no rank ", rank);
    auto* cb = dynamic_cast<CudaBackend*>(&be);
    MR_CHECK(cb != nullptr, device, "the NCCL all-reduce needs GPU replicas, got ", be.name());
    Rank& r = ranks_[static_cast<size_t>(rank)];
    MR_CHECK(r.comm != nullptr, internal, "the NCCL communicator was aborted");
    use_device(r.ordinal);
    MR_CUDA_CALL(cudaEventRecord(r.ready, cb->stream()), r.ordinal);
    MR_CUDA_CALL(cudaStreamWaitEvent(r.stream, r.ready, 0), r.ordinal);
    return r;
  }
  void end(Rank& r, Backend& be) {
    auto& cb = static_cast<CudaBackend&>(be);
    MR_CUDA_CALL(cudaEventRecord(r.done, r.stream), r.ordinal);
    MR_CUDA_CALL(cudaStreamWaitEvent(cb.stream(), r.done, 0), r.ordinal);
  }

  std::vector<int> ordinals_;
  std::vector<Rank> ranks_;
  ThreadCommunicator host_;  // barriers, deadlines and aborts on the host side
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<int>& ordinals,
                                                     double timeout_seconds) {
  MR_CHECK(!ordinals.empty(), value, "an NCCL communicator needs at least one GPU");
  return std::make_unique<NcclCommunicator>(ordinals, timeout_seconds);
}

#else

std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<int>&, double) {
  fail(ErrorKind::device, "this build of mirrored was compiled without NCCL (see NCCL_HOME)");
}

#endif

}  // namespace mr
