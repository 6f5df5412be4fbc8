// Model's mixed-precision settings (issue 14, i14-mpcore): compile()'s checks
// of the loss-scale settings, the loss scale's state between steps, and the
// one-time note on how this machine computes the layers' mixed policies.
//
// Dynamic loss scaling runs on the device (core/step_scalars.h): each step
// ends with an op that moves the scale by the step's skip word and writes
// the next step's block from a table of blocks indexed by the count of
// applied steps, which the host fills ahead (kScaleRows steps). The host
// never waits for a step's outcome before it queues the next one (on a GPU
// that wait was a full device sync per step and kept steps from running
// back to back); it reads the word where it needs exact values anyway: the
// training loop's logs, R's accessors, saving, and every kScaleRows steps
// to fill the table again.
#include <cmath>
#include <set>
#include <string>

#include "core/error.h"
#include "nn/optimizer.h"
#include "train/model.h"

namespace mr {

namespace {
// Rows of the table of blocks: the host writes it again after this many
// steps (a wait for the queued steps, once per kScaleRows - 1 steps).
constexpr int64_t kScaleRows = 256;
}  // namespace

void Model::compile_precision(const CompileConfig& c) {
  const LossScaleConfig& ls = c.loss_scale;
  if (ls.dynamic) {
    MR_CHECK(std::isfinite(ls.initial_scale) && ls.initial_scale > 0 && ls.initial_scale <= 3.4e38,
             value, "compile(): the loss scale's initial_scale must be a finite number > 0, got ",
             ls.initial_scale);
    MR_CHECK(ls.dynamic_growth_steps >= 1, value,
             "compile(): the loss scale's dynamic_growth_steps must be an integer >= 1, got ",
             ls.dynamic_growth_steps);
    // What mirrored's skip does not cover yet: steps that only accumulate
    // (no all-reduce, no flag), the EMA overwrite's copy, constraints,
    // activity regularizers and add_loss() terms (their gradient is not
    // scaled).
    const OptimizerConfig& o = c.optimizer;
    MR_CHECK(o.gradient_accumulation_steps == 0, value,
             "compile(): loss scaling with gradient_accumulation_steps is not supported yet");
    MR_CHECK(o.ema_overwrite_frequency == 0, value,
             "compile(): loss scaling with ema_overwrite_frequency is not supported yet");
    for (const Graph::Param& p : graph_->params())
      MR_CHECK(p.options.constraint.is_null(), value,
               "compile(): loss scaling with weight constraints is not supported yet (",
               graph_->node(p.node).layer ? graph_->node(p.node).layer->class_name() : "layer", " ",
               p.name, " has one)");
    for (int i = 0; i < graph_->size(); ++i) {
      MR_CHECK(!graph_->node(i).layer || graph_->node(i).layer->activity_regularizer().is_null(),
               value, "compile(): loss scaling with activity regularizers is not supported yet");
      // self$add_loss() terms: their gradient, like the activity
      // regularizers', is added in backward without the scale.
      MR_CHECK(!graph_->node(i).layer || graph_->node(i).layer->added_losses() == 0, value,
               "compile(): loss scaling with a custom layer's add_loss() is not supported yet (",
               graph_->node(i).name, " has one); use the float32 or mixed_bfloat16 policy");
    }
    loss_scale_ = LossScaleState{static_cast<float>(ls.initial_scale), 0, 0, false};
  } else {
    loss_scale_ = LossScaleState{1.0f, 0, 0, false};
  }
  device_scale_ = DeviceScale{};
  const int64_t rows = ls.dynamic ? kScaleRows : 0;
  state_.allocate_loss_scale(rows);
  scale_rows_.assign(static_cast<size_t>(rows), StepScalars{});
  // The note: mixed policies whose products this machine runs in f32.
  std::set<std::string> slow;
  for (int i = 0; i < graph_->size(); ++i) {
    const GraphNode& n = graph_->node(i);
    if (!n.layer || !n.layer->dtype_policy().mixed()) continue;
    const DTypePolicy& p = n.layer->dtype_policy();
    const DType t = p.compute == ComputeDtype::bf16 ? DType::bf16 : DType::f16;
    for (int r = 0; r < replicas_.size(); ++r)
      if (!replicas_.backend(r).native_lowp(t))
        slow.insert(p.name + " on " + replicas_.backend(r).name());
  }
  precision_note_.clear();
  for (const std::string& s : slow) precision_note_ += (precision_note_.empty() ? "" : "; ") + s;
  if (!precision_note_.empty())
    precision_note_ = "this device has no " + std::string("16-bit matrix units for ") +
                      precision_note_ + ": those layers compute in float32";
}

int64_t Model::begin_train_step() {
  if (config_.loss_scale.dynamic) {
    // Step `posted + 1` since the table was written ends by writing row
    // `applied` <= posted + 1: that row must exist.
    if (!device_scale_.armed || device_scale_.posted + 1 >= state_.loss_scale_rows())
      arm_loss_scale();
    ++device_scale_.posted;
  }
  device_scale_.posted_iteration = state_.iterations;
  return state_.iterations;
}

void Model::end_train_step(bool failed) {
  // The test hook fires once, at the step it names (a skipped step is
  // retried with the same iteration): a step posted with that iteration
  // clears it, and a graph that recorded it must never replay.
  if (step_.update().clear_nonfinite_at(device_scale_.posted_iteration + 1))
    step_.graphs().invalidate();
  if (!config_.loss_scale.dynamic) {
    if (!failed) ++state_.iterations;
    return;
  }
  if (failed) {
    // The word may have counted the step or not: read what it says if the
    // device still answers, and write it afresh before the next step.
    try {
      settle_loss_scale();
    } catch (...) {
    }
    device_scale_.armed = false;
    return;
  }
  // The host's count until the word is read: as if no step were skipped.
  ++state_.iterations;
}

void Model::arm_loss_scale() {
  settle_loss_scale();
  const int64_t rows = state_.loss_scale_rows();
  MR_CHECK(rows > 0 && static_cast<int64_t>(scale_rows_.size()) == rows, internal,
           "the loss scale's table is not allocated");
  // Row k: the block of the step after k applied ones. Its loss_scale and
  // skip are written by the device (loss_scale_math.h).
  for (int64_t k = 0; k < rows; ++k)
    scale_rows_[static_cast<size_t>(k)] = step_scalars(config_.optimizer, state_.iterations + k);
  StepScalars first = scale_rows_[0];
  first.loss_scale = loss_scale_.scale;
  first.skip = 0.0f;
  LossScaleWord word;
  word.scale = loss_scale_.scale;
  word.last_skipped = loss_scale_.last_skipped ? 1.0f : 0.0f;
  word.step_counter = loss_scale_.step_counter;
  for (int r = 0; r < replicas_.size(); ++r) {
    Backend& be = replicas_.backend(r);
    be.upload(state_.loss_scale_table(r), scale_rows_.data(),
              scale_rows_.size() * sizeof(StepScalars));
    be.upload(state_.loss_scale_word(r), &word, sizeof word);
    be.upload(state_.scalars(r), &first, sizeof first);
  }
  device_scale_.armed = true;
  device_scale_.at = state_.iterations;
  device_scale_.posted = 0;
  device_scale_.read_at = 0;
  device_scale_.skipped_before = loss_scale_.skipped;
}

void Model::settle_loss_scale() {
  // Nothing posted since the word was written or last read: the host's
  // values are the word's (every accessor calls this; one wait serves all).
  if (!config_.loss_scale.dynamic || !device_scale_.armed ||
      device_scale_.posted == device_scale_.read_at)
    return;
  MR_CHECK(!in_flight_, internal, "the loss scale is read while a step is in flight");
  // A download waits (polled, with the model's deadline) for the queued
  // steps: this is the one place the host learns which steps were skipped.
  LossScaleWord w;
  replicas_.backend(0).download(&w, state_.loss_scale_word(0), sizeof w);
  MR_CHECK(w.applied >= 0 && w.skipped >= 0 && w.applied + w.skipped <= device_scale_.posted,
           internal, "the loss scale's word counts ", w.applied, " applied and ", w.skipped,
           " skipped steps of ", device_scale_.posted, " posted");
  state_.iterations = device_scale_.at + w.applied;
  loss_scale_.scale = w.scale;
  loss_scale_.step_counter = w.step_counter;
  loss_scale_.skipped = device_scale_.skipped_before + w.skipped;
  loss_scale_.last_skipped = w.last_skipped != 0.0f;
  device_scale_.read_at = device_scale_.posted;
}

void Model::set_loss_scale_state(float scale, int64_t step_counter) {
  MR_CHECK(std::isfinite(scale) && scale > 0, value,
           "the loss scale must be a finite number > 0, got ", scale);
  MR_CHECK(step_counter >= 0, value, "the loss scale's step_counter must be >= 0, got ",
           step_counter);
  settle_loss_scale();
  loss_scale_.scale = scale;
  loss_scale_.step_counter = step_counter;
  device_scale_.armed = false;  // the next step starts from the loaded state
}

}  // namespace mr
