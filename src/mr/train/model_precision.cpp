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
    // What mirrored's skip does not cover yet: steps that only accumulate
    // (no all-reduce, no flag), the EMA overwrite's copy, constraints and
    // activity regularizers (their gradient is not scaled).
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
    for (int i = 0; i < graph_->size(); ++i)
      MR_CHECK(!graph_->node(i).layer || graph_->node(i).layer->activity_regularizer().is_null(),
               value, "compile(): loss scaling with activity regularizers is not supported yet");
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

bool Model::finish_loss_scale() {
  if (!config_.loss_scale.dynamic) return false;
  // Outside the step, after its ReplicaSet::wait. On a CPU the step is done
  // and this is a copy; on a GPU the wait only means the step was queued, so
  // this download waits (polled, with the model's deadline) for the step to
  // finish: the host must know whether it was skipped before the next step,
  // whose scalars it computes from the iterations a skipped step does not
  // advance (Keras). The scale itself lives in the step block on the device
  // (the loss gradients and the unscale read it there), so dynamic loss
  // scaling no longer keeps the step from a CUDA graph.
  StepScalars s;
  replicas_.backend(0).download(&s, state_.scalars(0), sizeof s);
  LossScaleState& st = loss_scale_;
  st.last_skipped = s.skip != 0.0f;
  if (st.last_skipped) {
    // Keras' _stateless_handle_non_finite_grads.
    st.step_counter = 0;
    st.scale *= 0.5f;
    ++st.skipped;
    // A skipped step keeps its iteration: a test's injected overflow fires
    // once (the retried iteration would hit it again).
    step_.update().inject_nonfinite(-1, 0);
    // The injection is a host choice recorded with the step's ops: a graph
    // captured with it must never replay. Dropping the graphs after any
    // skipped step covers that case (the next steps warm up and capture
    // again, a cost only while the scale settles).
    step_.graphs().invalidate();
  } else if (st.step_counter == config_.loss_scale.dynamic_growth_steps - 1) {
    // Keras' upscale(): after dynamic_growth_steps finite steps.
    st.step_counter = 0;
    st.scale *= 2.0f;
  } else {
    ++st.step_counter;
  }
  return st.last_skipped;
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
