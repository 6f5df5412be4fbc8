// Gradient buckets: the all-reduce of the trainable gradients cut into
// buckets in reverse layer order, each launched during the backward pass as
// soon as its gradients are final (PyTorch DDP's reducer), so that the
// reduction of the last layers overlaps the backward pass of the first.
//
// The plan (plan_grad_buckets) is decided once, at compile(): trainable
// variables in the order their gradients become final (the executor runs
// nodes in decreasing index order and a variable is written for the last
// time by its owner node, the lowest-index call of its layer; a dead node
// writes zeros there too), cut into buckets of about bytes_per_pack (0:
// DDP's default, a small first bucket of 1 MiB then 25 MiB). A bucket's
// variables that are neighbours in the flat buffer form one range, so a
// bucket is a few all-reduce calls (one in the common case).
//
// Invariants:
// - every replica launches the same buckets in the same order (bucket b only
//   after buckets 0..b-1), whatever its slice, so the collectives match;
// - the buckets cover exactly the floats of the trainable variables, so the
//   result of a thread all-reduce (per-element sums in rank order) is
//   bit-identical to one fused all-reduce of the trainable ranges;
// - nothing is allocated in a step: the per-replica launch logs are sized by
//   prepare().
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dist/replica_set.h"
#include "nn/executor.h"
#include "nn/graph.h"
#include "train/param_ranges.h"
#include "train/step_clock.h"

namespace mr {

struct GradBucket {
  // Runs of the flat gradient buffer, increasing offsets.
  std::vector<ParamRange> ranges;
  int64_t floats = 0;  // sum of the ranges' sizes
  // The bucket's gradients are final once backward has finished every node
  // with index >= ready_node (the lowest owner node of its variables).
  int ready_node = 0;
  std::vector<int> params;  // indices into Graph::params(), in readiness order
};

// DDP's defaults, used when bytes_per_pack is 0.
constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;
constexpr int64_t kBucketBytes = int64_t{25} << 20;

// The buckets of the variables inside `trainable` (ranges of the flat
// buffer, as trainable_ranges() gives them), in launch order. A bucket is
// closed once it holds at least its byte target: bytes_per_pack for every
// bucket, or with 0 DDP's 1 MiB for the first and 25 MiB for the others.
// A variable is never split.
// No trainable variable: no bucket. bytes_per_pack < 0 is an error.
std::vector<GradBucket> plan_grad_buckets(const Graph& g, const std::vector<ParamRange>& trainable,
                                          int64_t bytes_per_pack);

// Launches a replica's buckets during backward. One per UpdatePipeline.
class GradBuckets {
 public:
  GradBuckets(const Graph& graph, ReplicaSet& replicas);
  ~GradBuckets();

  // At compile(): the plan, and per replica the launch log. With one replica
  // there is nothing to reduce and no bucket is ever armed.
  void prepare(const std::vector<ParamRange>& trainable, int64_t bytes_per_pack);
  const std::vector<GradBucket>& plan() const { return plan_; }

  // Before replica `rank`'s backward on a step that applies the update:
  // returns the listener the executor tells (Executor::Pass::grad_ready),
  // or null when nothing is bucketed (one replica, no trainable variable).
  // With gradient accumulation, `acc` is the accumulator and `steps` its
  // count: a bucket's (g + acc) / steps is formed right before its
  // all-reduce (Keras' order), and the accumulator zeroed.
  GradReadyListener* arm(int rank, float* grads, float* acc, float steps);
  // This step reduces nothing during backward (it only accumulates).
  void disarm(int rank);
  // Whether replica `rank`'s buckets were armed for this step.
  bool armed(int rank) const;
  // After backward: launches what is left (every bucket is ready by now),
  // makes the replica's later work wait for every bucket's all-reduce and
  // disarms.
  void finish(int rank);

  // Bucket ids replica `rank` launched in its last armed step, in order.
  std::vector<int> last_order(int rank) const;
  // For each of them, the node threshold at which it launched: backward had
  // finished every node >= this index (0: after the whole backward pass).
  std::vector<int> last_launch_nodes(int rank) const;

 private:
  struct Replica;
  class Listener;
  // The executor finished every node >= `node` on replica `rank`: launch the
  // buckets that are ready, in plan order.
  void nodes_done(int rank, int node);
  // The one place where a bucket's gradients are reduced (the accumulation's
  // mean first, then the all-reduce of its ranges).
  void launch(int rank, size_t b, int node);

 public:
  // The all-reduce phases of the step clock (i14-monitor): each bucket's
  // collectives and the join are timed as all-reduce wait (null: untimed).
  void set_clock(StepClock* clock) { clock_ = clock; }

 private:
  StepClock* clock_ = nullptr;
  const Graph& graph_;
  ReplicaSet& replicas_;
  std::vector<GradBucket> plan_;
  std::vector<std::unique_ptr<Replica>> reps_;
};

}  // namespace mr
