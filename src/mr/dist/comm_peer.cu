// All-reduce by peer copies (cross_device_ops "hierarchical_copy", and the
// fallback when NCCL cannot be used, e.g. several logical GPUs on one GPU):
// rank 0 pulls every other rank's buffer and adds it, in rank order, on its
// own stream; every rank then copies the sum back. Host threads meet at
// barriers only to exchange pointers and events (with the communicator's
// deadline); the GPUs order the copies through events, so no host waits for a
// GPU. Copies between different GPUs go through cudaMemcpyPeerAsync, which
// CUDA routes over NVLink/PCIe P2P when available and through the host
// otherwise; on one physical GPU they are plain device copies.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "dist/comm_threads.h"
#include "dist/communicator.h"

namespace mr {

namespace {

class PeerCommunicator final : public Communicator {
 public:
  PeerCommunicator(std::vector<int> ordinals, double timeout)
      : host_(static_cast<int>(ordinals.size()), timeout), ranks_(ordinals.size()) {
    for (size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      r.ordinal = ordinals[i];
      use_device(r.ordinal);
      MR_CUDA_CALL(cudaEventCreateWithFlags(&r.ready, cudaEventDisableTiming), r.ordinal);
      MR_CUDA_CALL(cudaEventCreateWithFlags(&r.copied, cudaEventDisableTiming), r.ordinal);
    }
  }
  ~PeerCommunicator() override {
    for (Rank& r : ranks_) {
      // r.stream belongs to a backend that may be gone already; backends
      // synchronise their streams before they die.
      if (cudaSetDevice(r.ordinal) != cudaSuccess) continue;
      if (r.ready) cudaEventDestroy(r.ready);
      if (r.copied) cudaEventDestroy(r.copied);
      if (r.tmp) cudaFree(r.tmp);
    }
  }

  int size() const override { return static_cast<int>(ranks_.size()); }
  std::string name() const override { return comm_kind_name(CommKind::peer); }

  void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) override {
    if (size() == 1) return;
    Rank& me = publish(rank, be, buf);
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    host_.barrier(rank);
    if (rank == 0) {
      // Sum into rank 0's buffer as ((g0 + g1) + g2) + ...: the same order
      // for every step, whatever the timing.
      grow_tmp(me, bytes);
      for (int k = 1; k < size(); ++k) {
        const Rank& src = ranks_[static_cast<size_t>(k)];
        MR_CUDA_CALL(cudaStreamWaitEvent(me.stream, src.ready, 0), me.ordinal);
        MR_CUDA_CALL(
            cudaMemcpyPeerAsync(me.tmp, me.ordinal, src.buf, src.ordinal, bytes, me.stream),
            me.ordinal);
        be.axpy(n, 1.0f, static_cast<const float*>(me.tmp), buf);
      }
      MR_CUDA_CALL(cudaEventRecord(me.ready, me.stream), me.ordinal);
    }
    host_.barrier(rank);
    pull_from(rank, 0, bytes);
  }

  void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) override {
    MR_CHECK(root >= 0 && root < size(), value, "broadcast root ", root, " is not a rank");
    if (size() == 1) return;
    publish(rank, be, buf);
    host_.barrier(rank);
    pull_from(rank, root, static_cast<size_t>(n) * sizeof(float));
  }

  void barrier(int rank) override { host_.barrier(rank); }
  void abort(const std::string& why) override { host_.abort(why); }
  void reset() override { host_.reset(); }

 private:
  struct Rank {
    int ordinal = 0;
    cudaStream_t stream = nullptr;  // the replica's compute stream
    void* buf = nullptr;            // this collective's buffer
    cudaEvent_t ready = nullptr;    // buf holds this rank's input (root: the result)
    cudaEvent_t copied = nullptr;   // this rank has read the result
    void* tmp = nullptr;            // rank 0: one peer buffer at a time
    size_t tmp_bytes = 0;
  };

  // Records that `buf` is ready on the replica's stream; each rank writes only
  // its own entry, read by others after the next barrier.
  Rank& publish(int rank, Backend& be, float* buf) {
    auto* cb = dynamic_cast<CudaBackend*>(&be);
    MR_CHECK(cb != nullptr, device, "the peer-copy all-reduce needs GPU replicas, got ", be.name());
    Rank& me = ranks_.at(static_cast<size_t>(rank));
    use_device(me.ordinal);
    me.stream = cb->stream();
    me.buf = buf;
    MR_CUDA_CALL(cudaEventRecord(me.ready, me.stream), me.ordinal);
    return me;
  }

  // Every rank but `root` copies root's buffer once root's ready event fired;
  // root then waits (on its stream) for all those copies before its buffer
  // may change again.
  void pull_from(int rank, int root, size_t bytes) {
    Rank& me = ranks_[static_cast<size_t>(rank)];
    const Rank& src = ranks_[static_cast<size_t>(root)];
    if (rank != root) {
      MR_CUDA_CALL(cudaStreamWaitEvent(me.stream, src.ready, 0), me.ordinal);
      MR_CUDA_CALL(cudaMemcpyPeerAsync(me.buf, me.ordinal, src.buf, src.ordinal, bytes, me.stream),
                   me.ordinal);
      MR_CUDA_CALL(cudaEventRecord(me.copied, me.stream), me.ordinal);
    }
    host_.barrier(rank);
    if (rank == root)
      for (int k = 0; k < size(); ++k)
        if (k != root)
          MR_CUDA_CALL(cudaStreamWaitEvent(me.stream, ranks_[static_cast<size_t>(k)].copied, 0),
                       me.ordinal);
  }

  void grow_tmp(Rank& r, size_t bytes) {
    if (r.tmp_bytes >= bytes) return;
    // The old block may still be read by queued copies.
    MR_CUDA_CALL(cudaStreamSynchronize(r.stream), r.ordinal);
    if (r.tmp) MR_CUDA_CALL(cudaFree(r.tmp), r.ordinal);
    r.tmp = nullptr;
    r.tmp_bytes = 0;
    MR_CUDA_CALL(cudaMalloc(&r.tmp, bytes), r.ordinal);
    r.tmp_bytes = bytes;
  }

  ThreadCommunicator host_;
  std::vector<Rank> ranks_;
};

}  // namespace

std::unique_ptr<Communicator> make_peer_communicator(const std::vector<int>& ordinals,
                                                     double timeout_seconds) {
  MR_CHECK(!ordinals.empty(), value, "a peer-copy communicator needs at least one GPU");
  return std::make_unique<PeerCommunicator>(ordinals, timeout_seconds);
}

}  // namespace mr
