// All-reduce by peer copies (cross_device_ops "hierarchical_copy", and the
// fallback when NCCL cannot be used, e.g. several logical GPUs on one GPU):
// rank 0 pulls every other rank's buffer and adds it, in rank order, on its
// compute lane; every rank then copies the sum back on its copy lane. Host
// threads meet at barriers only to exchange pointers and events (with the
// communicator's deadline); the GPUs order the copies through Backend events,
// so no host waits for a GPU and this file never sees a backend's streams.
// Copies between GPUs are peer copies over NVLink / PCIe P2P where peer access
// is enabled (the constructor enables it where the topology allows) and go
// through the host otherwise; on one physical GPU they are device copies.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"  // use_device, MR_CUDA_CALL
#include "core/device_info.h"
#include "core/error.h"
#include "dist/comm_threads.h"
#include "dist/communicator.h"

namespace mr {

namespace {

class PeerCommunicator final : public Communicator {
 public:
  PeerCommunicator(std::vector<int> ordinals, double timeout)
      : host_(static_cast<int>(ordinals.size()), timeout), ranks_(ordinals.size()) {
    for (size_t i = 0; i < ranks_.size(); ++i) ranks_[i].ordinal = ordinals[i];
    // Rank 0 pulls from everyone and everyone pulls from the root: enable
    // peer access both ways wherever the topology allows (the link report of
    // print(strategy) reads the same state through cuda_link()).
    for (size_t i = 0; i < ranks_.size(); ++i)
      for (size_t j = 0; j < ranks_.size(); ++j)
        if (ranks_[i].ordinal != ranks_[j].ordinal)
          cuda_enable_peer_access(ranks_[i].ordinal, ranks_[j].ordinal);
  }
  ~PeerCommunicator() override {
    // Events belong to backends that may be gone already: their CUDA events
    // stay valid after the backend died (CudaEvent owns its cudaEvent_t).
    for (Rank& r : ranks_) {
      r.ready.reset();
      r.copied.reset();
    }
    for (Scratch& t : scratch_)
      if (t.p != nullptr && cudaSetDevice(t.ordinal) == cudaSuccess) cudaFree(t.p);
  }

  int size() const override { return static_cast<int>(ranks_.size()); }
  std::string name() const override { return comm_kind_name(CommKind::peer); }

  void reserve(int64_t floats) override {
    if (size() > 1) grow_tmp(static_cast<size_t>(floats) * sizeof(float));
  }

  void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) override {
    if (size() == 1) return;
    Rank& me = publish(rank, be, buf);
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    host_.barrier(rank);
    if (rank == 0) {
      // Sum into rank 0's buffer as ((g0 + g1) + g2) + ...: the same order
      // for every step, whatever the timing. One scratch buffer, reused in
      // stream order on rank 0's compute lane.
      float* tmp = grow_tmp(bytes);
      for (int k = 1; k < size(); ++k) {
        const Rank& src = ranks_[static_cast<size_t>(k)];
        be.wait_event(*src.ready, Lane::compute);
        be.copy_on(Lane::compute, tmp, src.buf, bytes);
        be.axpy(n, 1.0f, tmp, buf);
      }
      be.record_event(*me.ready, Lane::compute);
    }
    host_.barrier(rank);
    pull_from(rank, 0, be, bytes);
  }

  void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) override {
    MR_CHECK(root >= 0 && root < size(), value, "broadcast root ", root, " is not a rank");
    if (size() == 1) return;
    publish(rank, be, buf);
    host_.barrier(rank);
    pull_from(rank, root, be, static_cast<size_t>(n) * sizeof(float));
  }

  void barrier(int rank) override { host_.barrier(rank); }

 protected:
  void request_abort(const std::string& why) override { host_.abort(why); }
  void finish_abort(bool) override { host_.reset(); }

 private:
  struct Rank {
    int ordinal = 0;
    float* buf = nullptr;           // this collective's buffer
    std::unique_ptr<Event> ready;   // buf holds this rank's input (root: the result)
    std::unique_ptr<Event> copied;  // this rank has read the result
  };
  // Rank 0's scratch for one peer buffer; blocks outgrown by a larger
  // collective stay allocated until the end (freeing one would need the GPU
  // to be idle), which reserve() at compile time avoids.
  struct Scratch {
    int ordinal = 0;
    void* p = nullptr;
    size_t bytes = 0;
  };

  // Records (on the replica's compute lane) that `buf` is ready; each rank
  // writes only its own entry, read by others after the next barrier. Events
  // come from the replica's own backend the first time.
  Rank& publish(int rank, Backend& be, float* buf) {
    MR_CHECK(be.kind() == DeviceKind::cuda, device,
             "the peer-copy all-reduce needs GPU replicas, got ", be.name());
    Rank& me = ranks_.at(static_cast<size_t>(rank));
    if (!me.ready) {
      me.ready = be.create_event();
      me.copied = be.create_event();
    }
    me.buf = buf;
    be.record_event(*me.ready, Lane::compute);
    return me;
  }

  // Every rank but `root` copies root's buffer on its copy lane once root's
  // ready event fired (and its own buffer is no longer in use); its compute
  // lane waits for that copy. Root then waits (on its compute lane) for all
  // those copies before its buffer may change again.
  void pull_from(int rank, int root, Backend& be, size_t bytes) {
    Rank& me = ranks_[static_cast<size_t>(rank)];
    const Rank& src = ranks_[static_cast<size_t>(root)];
    if (rank != root) {
      be.wait_event(*me.ready, Lane::copy);
      be.wait_event(*src.ready, Lane::copy);
      be.copy_on(Lane::copy, me.buf, src.buf, bytes);
      be.record_event(*me.copied, Lane::copy);
      be.wait_event(*me.copied, Lane::compute);
    }
    host_.barrier(rank);
    if (rank == root)
      for (int k = 0; k < size(); ++k)
        if (k != root) be.wait_event(*ranks_[static_cast<size_t>(k)].copied, Lane::compute);
  }

  float* grow_tmp(size_t bytes) {
    if (scratch_.empty() || scratch_.back().bytes < bytes) {
      Scratch t{ranks_.front().ordinal, nullptr, bytes};
      use_device(t.ordinal);
      MR_CUDA_CALL(cudaMalloc(&t.p, bytes), t.ordinal);
      scratch_.push_back(t);
    }
    return static_cast<float*>(scratch_.back().p);
  }

  ThreadCommunicator host_;
  std::vector<Rank> ranks_;
  std::vector<Scratch> scratch_;  // the last one is in use
};

}  // namespace

std::unique_ptr<Communicator> make_peer_communicator(const std::vector<int>& ordinals,
                                                     double timeout_seconds) {
  MR_CHECK(!ordinals.empty(), value, "a peer-copy communicator needs at least one GPU");
  return std::make_unique<PeerCommunicator>(ordinals, timeout_seconds);
}

}  // namespace mr
