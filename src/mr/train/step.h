// The step of a model on a replica set: per replica an executor (the
// activation workspace), a target buffer and the replica context layers use
// for collectives. Training, evaluation and prediction share one prologue:
// cut the global batch by the batch-split rule and stage this replica's
// slice on its device.
//
// Invariant: nothing a step needs is allocated inside it. reserve() sizes
// the buffers for a global batch on the caller's thread before the step is
// posted (a larger batch than any before grows them there, between steps).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/batch.h"
#include "dist/replica_set.h"
#include "nn/executor.h"
#include "nn/graph.h"
#include "nn/loss.h"
#include "nn/optimizer.h"
#include "train/training_state.h"

namespace mr {

struct CompileConfig {
  OptimizerConfig optimizer;
  LossConfig loss;
  std::vector<MetricConfig> metrics;
};

class Step {
 public:
  Step(const Graph& graph, ReplicaSet& replicas, TrainingState& state);
  ~Step();

  // Buffers for global batches of up to `global_rows` rows with targets of
  // `target_width` floats per sample (0: none).
  void reserve(int64_t global_rows, int64_t target_width);

  // Posts the step to every replica; the caller waits (ReplicaSet::wait).
  // The batch must stay valid until then.
  void post_train(const HostBatch& batch, const CompileConfig& config, int64_t iteration);
  void post_eval(const HostBatch& batch, const CompileConfig& config);
  // Forward only, waits; writes rows x width floats of output k to out.
  void predict(const HostBatch& batch, int k, int64_t width, float* out);

  std::vector<int64_t> rows_last() const;

 private:
  struct Replica;
  // Stages replica `rank`'s slice of `batch`; returns (begin, count).
  std::pair<int64_t, int64_t> stage(int rank, const HostBatch& batch, bool targets);
  // What replica `rank`'s executor needs for a pass over its slice: a
  // training pass with the step's device block, inference without (null).
  Executor::Pass pass(int rank, int64_t begin, int64_t count, int64_t global_rows,
                      const StepScalars* scalars);
  void metrics(int rank, const CompileConfig& c, int64_t count, const float* out, const float* tgt);

  const Graph& graph_;
  ReplicaSet& replicas_;
  TrainingState& state_;
  std::vector<std::unique_ptr<Replica>> reps_;
};

}  // namespace mr
