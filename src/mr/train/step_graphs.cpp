#include "train/step_graphs.h"

#include <algorithm>

namespace mr {

namespace {
bool same_loss(const LossParams& a, const LossParams& b) {
  return a.from_logits == b.from_logits && a.label_smoothing == b.label_smoothing &&
         a.has_ignore == b.has_ignore && a.ignore_class == b.ignore_class &&
         a.valid_weight == b.valid_weight && a.position_weight == b.position_weight &&
         a.delta == b.delta && a.alpha == b.alpha && a.gamma == b.gamma &&
         a.apply_class_balancing == b.apply_class_balancing && a.binary_labels == b.binary_labels;
}
}  // namespace

bool same_key(const StepGraphKey& a, const StepGraphKey& b) {
  if (a.global_rows != b.global_rows || a.parts != b.parts || a.frozen != b.frozen ||
      a.variant != b.variant || a.loss.size() != b.loss.size())
    return false;
  for (size_t k = 0; k < a.loss.size(); ++k)
    if (!same_loss(a.loss[k], b.loss[k])) return false;
  return true;
}

StepGraphs::StepGraphs(int replicas)
    : failed_(static_cast<size_t>(replicas), 0), lost_(static_cast<size_t>(replicas), 0) {}

void StepGraphs::set_enabled(bool on) {
  if (on != enabled_) invalidate();
  enabled_ = on;
}

void StepGraphs::invalidate() {
  have_graph_ = false;
  have_warm_ = false;
  stats_.failed = false;
  std::fill(failed_.begin(), failed_.end(), 0);
  std::fill(lost_.begin(), lost_.end(), 0);
}

StepMode StepGraphs::decide(const StepGraphKey& key, bool eligible) {
  if (std::any_of(failed_.begin(), failed_.end(), [](char f) { return f != 0; })) {
    stats_.failed = true;
    have_graph_ = false;
    std::fill(failed_.begin(), failed_.end(), 0);
  }
  if (std::any_of(lost_.begin(), lost_.end(), [](char f) { return f != 0; })) {
    have_graph_ = false;
    std::fill(lost_.begin(), lost_.end(), 0);
  }
  if (!enabled_ || !eligible || stats_.failed) {
    ++stats_.eager_steps;
    return StepMode::eager;
  }
  if (have_graph_ && same_key(key, captured_)) {
    ++stats_.replays;
    return StepMode::replay;
  }
  if (have_warm_ && same_key(key, warm_)) {
    captured_ = key;  // vector assignment: reuses the capacity after the first
    have_graph_ = true;
    ++stats_.captures;
    return StepMode::capture;
  }
  warm_ = key;
  have_warm_ = true;
  ++stats_.eager_steps;
  return StepMode::eager;
}

}  // namespace mr
