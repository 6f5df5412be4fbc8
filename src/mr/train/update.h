// What happens to a replica's gradients after backward, in Keras 3's order
// (BaseOptimizer.apply / _backend_apply_gradients):
//   (a) gradient accumulation: on a step that does not apply, the local
//       gradients are added to the accumulator and nothing else happens (no
//       all-reduce); the applying step (every n-th, counted by iterations)
//       uses (g + acc) / n and zeroes the accumulator;
//   (b) the all-reduce (SUM) of the trainable ranges only;
//   (c) regularization gradients (a hook, filled by the regularizers' code);
//   (d) clipping: clipvalue, clipnorm (per variable) or global_clipnorm (the
//       norm of the all-reduced gradient, so the same on any replica count);
//   (e) the update with the step's learning rate (a schedule's value at the
//       iteration, in the step's device block);
//   (f) constraints (a hook);
//   (g) EMA of the trainable weights (every step, as Keras), and the
//       overwrite of the weights with it every ema_overwrite_frequency steps.
// Frozen (non-trainable) ranges get no all-reduce and no update.
//
// Invariant: nothing here allocates or synchronises inside a step: the
// segment tables and sum buffers are sized by prepare() (compile()), and the
// per-step choices (apply or accumulate, overwrite or not) are host
// arithmetic on the iteration, the same on every replica.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "dist/replica_set.h"
#include "nn/graph.h"
#include "nn/optimizer.h"
#include "train/grad_buckets.h"
#include "train/param_ranges.h"
#include "train/step_clock.h"
#include "train/training_state.h"

namespace mr {

class UpdatePipeline {
 public:
  UpdatePipeline(const Graph& graph, ReplicaSet& replicas, TrainingState& state);
  ~UpdatePipeline();

  // At compile(): `trainable` lists the ranges of the flat parameter buffer
  // the optimizer updates (train/param_ranges.h: trainable_ranges()).
  // Variables (Graph::params()) inside them are the segments of the
  // per-variable norms. Allocates the per-replica device tables.
  void prepare(const OptimizerConfig& c, const std::vector<ParamRange>& trainable);

  // Replica `rank`'s part of training step `iteration` + 1, after backward
  // wrote its local gradients; `s` is the step's device block.
  void run(int rank, const OptimizerConfig& c, int64_t iteration, const StepScalars* s);

  // Keras' finalize_variable_values at the end of fit(): with use_ema, the
  // trainable weights take their moving averages (every replica).
  void finalize(const OptimizerConfig& c);

  // Hooks, called on replica threads with the replica's rank, backend and
  // its parameter and (all-reduced) gradient buffers. Empty: skipped.
  using Hook = std::function<void(int rank, Backend& be, float* params, float* grads)>;
  void set_regularization_hook(Hook h) { regularization_ = std::move(h); }
  void set_constraint_hook(Hook h) { constraints_ = std::move(h); }

  const std::vector<ParamRange>& ranges() const { return ranges_; }

  // ---- i14-mpcore: dynamic loss scaling (train/loss_scale.h) ----
  // On: after the all-reduce, the gradients' non-finite flag is computed into
  // the step block's skip word and all-reduced, and the gradients divided by
  // the step's loss scale (update_loss_scale.cpp); the update ops then skip
  // the step on every replica when the flag is set.
  void set_loss_scaling(bool on) { loss_scaling_ = on; }
  // For tests: +Inf into replica `rank`'s first trainable gradient float
  // right after the all-reduce of training step `step` (1-based), so that only
  // the flag's own all-reduce can tell the other replicas.
  void inject_nonfinite(int rank, int64_t step) {
    inject_rank_ = rank;
    inject_step_ = step;
  }
  // After training step `step` (1-based) was posted: clears the hook if it
  // was set for that step; returns whether it was.
  bool clear_nonfinite_at(int64_t step) {
    if (inject_rank_ < 0 || inject_step_ != step) return false;
    inject_rank_ = -1;
    inject_step_ = 0;
    return true;
  }
  // ---- i14-overlap ----
  // Gradient buckets (train/grad_buckets.h): step (b) launched during
  // backward. The bucket size (Keras/TF CommunicationOptions' bytes_per_pack,
  // 0: automatic) takes effect at the next prepare(), or now if prepared.
  void set_bytes_per_pack(int64_t bytes);
  int64_t bytes_per_pack() const { return bytes_per_pack_; }
  // Before replica `rank`'s backward of step `iteration` + 1: the listener
  // for Executor::Pass::grad_ready, or null when this step reduces nothing
  // during backward (one replica; a step that only accumulates).
  GradReadyListener* arm_buckets(int rank, const OptimizerConfig& c, int64_t iteration);
  // Off: no bucket is armed and step (b) is one fused pass after backward
  // (the reference the buckets are tested and timed against). On by default.
  void set_overlap(bool on) { overlap_ = on; }
  const GradBuckets& buckets() const { return buckets_; }

 private:
  void check_finite_and_unscale(int rank, int64_t iteration);
  bool loss_scaling_ = false;
  int inject_rank_ = -1;
  int64_t inject_step_ = 0;

  struct Replica;
  void apply_rule(int rank, const OptimizerConfig& c, const StepScalars* s);

  const Graph& graph_;
  ReplicaSet& replicas_;
  TrainingState& state_;
  std::vector<ParamRange> ranges_;    // trainable runs of floats
  std::vector<ParamRange> segments_;  // trainable variables
  std::vector<std::unique_ptr<Replica>> reps_;
  Hook regularization_, constraints_;

  // ---- i14-monitor: the all-reduce is timed on this clock (null: not) ----
 public:
  void set_clock(StepClock* clock) {
    clock_ = clock;
    buckets_.set_clock(clock);
  }

 private:
  StepClock* clock_ = nullptr;
  // ---- i14-overlap ----
  GradBuckets buckets_;
  int64_t bytes_per_pack_ = 0;
  bool prepared_ = false;
  bool overlap_ = true;
};

}  // namespace mr
