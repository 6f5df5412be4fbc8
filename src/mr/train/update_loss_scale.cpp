// The update pipeline's loss-scaling part (issue 14, i14-mpcore;
// train/loss_scale.h): right after the all-reduce of the gradients.
#include <limits>

#include "train/update.h"

namespace mr {

void UpdatePipeline::check_finite_and_unscale(int rank, int64_t iteration) {
  Backend& be = replicas_.backend(rank);
  float* g = state_.grads(rank);
  StepScalars* s = state_.scalars(rank);
  // The test hook: a host choice made when the step records its ops (with
  // CUDA graphs on, an eager or captured step; Model::end_train_step drops
  // the graphs after it fired, so a graph holding it never replays).
  if (rank == inject_rank_ && iteration + 1 == inject_step_ && !ranges_.empty())
    be.fill(1, g + ranges_.front().offset, std::numeric_limits<float>::infinity());
  // The host wrote skip = 0 with the block; each replica flags its own
  // (summed) gradients, and the SUM of the flags is the same on every
  // replica, so every replica skips the same steps.
  for (const ParamRange& r : ranges_) be.nonfinite_flag(r.size, g + r.offset, &s->skip);
  if (replicas_.global_size() > 1) {
    // Waiting for the peers' flags is all-reduce time on the step clock, as
    // the gradients' own collective is.
    ScopedPhase wait(clock_, rank, StepPhase::allreduce);
    replicas_.comm().all_reduce_sum(rank, be, &s->skip, 1);
  }
  for (const ParamRange& r : ranges_) be.unscale_gradients(r.size, g + r.offset, s);
}

}  // namespace mr
