// Model's mixed-precision settings (issue 14, i14-mpcore): compile()'s checks
// of the loss-scale settings, the loss scale's state between steps, and the
// one-time note on how this machine computes the layers' mixed policies.
#include <cmath>
#include <set>
#include <string>

#include "core/error.h"
#include "train/model.h"

namespace mr {

void Model::compile_precision(const CompileConfig& c) {
  const LossScaleConfig& ls = c.loss_scale;
  if (ls.dynamic) {
    MR_CHECK(std::isfinite(ls.initial_scale) && ls.initial_scale > 0 && ls.initial_scale <= 3.4e38,
             value, "compile(): the loss scale's initial_scale must be a finite number > 0, got ",
             ls.initial_scale);
    MR_CHECK(ls.dynamic_growth_steps >= 1, value,
             "compile(): the loss scale's dynamic_growth_steps must be an integer >= 1, got ",
             ls.dynamic_growth_steps);
    loss_scale_ = LossScaleState{static_cast<float>(ls.initial_scale), 0, 0, false};
  } else {
    loss_scale_ = LossScaleState{1.0f, 0, 0, false};
  }
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

void Model::set_loss_scale_state(float scale, int64_t step_counter) {
  MR_CHECK(std::isfinite(scale) && scale > 0, value,
           "the loss scale must be a finite number > 0, got ", scale);
  MR_CHECK(step_counter >= 0, value, "the loss scale's step_counter must be >= 0, got ",
           step_counter);
  loss_scale_.scale = scale;
  loss_scale_.step_counter = step_counter;
}

}  // namespace mr
