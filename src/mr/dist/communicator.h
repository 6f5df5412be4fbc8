// Collectives between the replicas of one strategy. Every replica thread calls
// the same collective with its own rank; the call returns when the result is
// in that replica's buffer. Sums are done in a fixed order, so every replica
// ends with bit-identical values.
#pragma once

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
  // Wakes every rank blocked in a collective (they throw), after one replica
  // failed; reset() readies the communicator again once all ranks stopped.
  virtual void abort(const std::string& /*why*/) {}
  virtual void reset() {}
  // What reduces: "NCCL", "thread all-reduce", ... (printed for the user).
  virtual std::string name() const = 0;
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

}  // namespace mr
