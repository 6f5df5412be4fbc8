#include "train/update.h"

#include <algorithm>

#include "core/error.h"

namespace mr {

struct UpdatePipeline::Replica {
  DeviceBuffer seg{nullptr, DeviceFree{}};   // 2 * nseg int64: (offset, size)
  DeviceBuffer sums{nullptr, DeviceFree{}};  // 3 * nseg doubles: g (or r), w, spare
  std::vector<float*> slots;                 // the rule's slots at a range's offset
  const int64_t* seg_ptr() const { return static_cast<const int64_t*>(seg.get()); }
  double* sums_ptr() const { return static_cast<double*>(sums.get()); }
};

UpdatePipeline::UpdatePipeline(const Graph& graph, ReplicaSet& replicas, TrainingState& state)
    : graph_(graph), replicas_(replicas), state_(state), buckets_(graph, replicas) {
  for (int r = 0; r < replicas.size(); ++r) reps_.push_back(std::make_unique<Replica>());
}

UpdatePipeline::~UpdatePipeline() = default;

void UpdatePipeline::prepare(const OptimizerConfig& c, const std::vector<ParamRange>& trainable) {
  ranges_.clear();
  for (const ParamRange& r : trainable)
    if (r.size > 0) ranges_.push_back(r);
  segments_.clear();
  for (const Graph::Param& p : graph_.params()) {
    if (p.size <= 0) continue;
    const bool inside = std::any_of(ranges_.begin(), ranges_.end(), [&](const ParamRange& r) {
      return p.offset >= r.offset && p.offset + p.size <= r.offset + r.size;
    });
    if (inside) segments_.push_back({p.offset, p.size});
  }
  std::vector<int64_t> table;
  for (const ParamRange& s : segments_) {
    table.push_back(s.offset);
    table.push_back(s.size);
  }
  const size_t nseg = std::max<size_t>(segments_.size(), 1);
  for (int r = 0; r < replicas_.size(); ++r) {
    Replica& rep = *reps_[static_cast<size_t>(r)];
    Backend& be = replicas_.backend(r);
    rep.seg = be.allocate(2 * nseg * sizeof(int64_t));
    rep.sums = be.allocate(3 * nseg * sizeof(double));
    if (!table.empty()) be.upload(rep.seg.get(), table.data(), table.size() * sizeof(int64_t));
    rep.slots.assign(static_cast<size_t>(rule_slot_count(c)), nullptr);
    be.synchronize();  // the table's host copy dies here
  }
  buckets_.prepare(ranges_, bytes_per_pack_);  // i14-overlap
  prepared_ = true;
}

// ---- i14-overlap ----
void UpdatePipeline::set_bytes_per_pack(int64_t bytes) {
  MR_CHECK(bytes >= 0, value, "bytes_per_pack must be >= 0 (0: automatic), got ", bytes);
  bytes_per_pack_ = bytes;
  if (prepared_) buckets_.prepare(ranges_, bytes_per_pack_);
}

namespace {
// EMA's "average" follows the rule's slots; the gradient accumulator is
// always the last slot (slot_names()), as Model::accumulator_slot() reads it.
float* ema_slot(TrainingState& st, int rank, const OptimizerConfig& c) {
  return c.use_ema ? st.slot_ptr(rank, rule_slot_count(c)) : nullptr;
}
float* accumulator_slot(TrainingState& st, int rank, const OptimizerConfig& c) {
  return c.gradient_accumulation_steps > 0 ? st.slot_ptr(rank, slot_count(c) - 1) : nullptr;
}
}  // namespace

GradReadyListener* UpdatePipeline::arm_buckets(int rank, const OptimizerConfig& c,
                                               int64_t iteration) {
  if (!overlap_ || !applies_update(c, iteration)) {
    buckets_.disarm(rank);  // accumulating: no all-reduce at all (step (a)); or fused
    return nullptr;
  }
  return buckets_.arm(rank, state_.grads(rank), accumulator_slot(state_, rank, c),
                      static_cast<float>(c.gradient_accumulation_steps));
}

void UpdatePipeline::apply_rule(int rank, const OptimizerConfig& c, const StepScalars* s) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  Backend& be = replicas_.backend(rank);
  float* w = state_.params(rank);
  float* g = state_.grads(rank);
  const int64_t nseg = static_cast<int64_t>(segments_.size());
  if (c.kind == OptimizerConfig::Kind::lamb) {
    // The update r replaces the gradient (it is not read again this step),
    // then the per-variable norms of w (after decay) and of r give the
    // trust ratios.
    const UpdateHyper h = update_hyper(c);
    for (const ParamRange& r : ranges_)
      be.lamb_moments(r.size, w + r.offset, g + r.offset, state_.slot_ptr(rank, 0) + r.offset,
                      state_.slot_ptr(rank, 1) + r.offset, g + r.offset, s, h);
    double* sums = rep.sums_ptr();
    be.segment_sumsq(nseg, rep.seg_ptr(), w, sums + nseg);
    be.segment_sumsq(nseg, rep.seg_ptr(), g, sums);
    be.lamb_apply(nseg, rep.seg_ptr(), w, g, sums + nseg, sums, s);
    return;
  }
  for (const ParamRange& r : ranges_) {
    for (size_t k = 0; k < rep.slots.size(); ++k)
      rep.slots[k] = state_.slot_ptr(rank, static_cast<int>(k)) + r.offset;
    apply_update(be, c, s, r.size, w + r.offset, g + r.offset, rep.slots);
  }
}

void UpdatePipeline::run(int rank, const OptimizerConfig& c, int64_t iteration,
                         const StepScalars* s) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  Backend& be = replicas_.backend(rank);
  float* w = state_.params(rank);
  float* g = state_.grads(rank);
  float* average = ema_slot(state_, rank, c);
  float* acc = accumulator_slot(state_, rank, c);
  // i14-overlap: armed buckets did the accumulation's mean and launched the
  // all-reduce during backward (train/grad_buckets.h).
  const bool bucketed = buckets_.armed(rank);

  // (a) Gradient accumulation: a step that does not apply only adds the
  // local gradients (Keras' _backend_increment_gradient_accumulators).
  const bool applies = applies_update(c, iteration);
  if (acc != nullptr) {
    if (!applies) {
      for (const ParamRange& r : ranges_) be.axpy(r.size, 1.0f, g + r.offset, acc + r.offset);
    } else if (!bucketed) {
      const float steps = static_cast<float>(c.gradient_accumulation_steps);
      for (const ParamRange& r : ranges_)
        be.accumulate_apply(r.size, g + r.offset, acc + r.offset, steps);
    }
  }
  if (applies) {
    // (b) The all-reduce of the trainable ranges: the buckets' launches
    // finished and joined, else one fused pass.
    if (bucketed) {
      buckets_.finish(rank);
    } else if (replicas_.global_size() > 1) {                // i16: other workers too
      ScopedPhase wait(clock_, rank, StepPhase::allreduce);  // i14-monitor
      for (const ParamRange& r : ranges_)
        replicas_.comm().all_reduce_sum(rank, be, g + r.offset, r.size);
    }
    // ---- i14-mpcore: dynamic loss scaling: the non-finite flag (all-reduced
    // into the step block's skip word, which the update ops read), then the
    // gradients divided by the scale (update_loss_scale.cpp).
    if (loss_scaling_) check_finite_and_unscale(rank, iteration);
    // ---- end i14-mpcore
    // (c) regularization gradients (i13-reg): added to the all-reduced
    // gradients, before clipping (Keras' regularization losses are part of
    // the loss whose gradient is clipped).
    if (regularization_) regularization_(rank, be, w, g);
    // (d) Clipping (Keras' _clip_gradients: clipnorm, else global_clipnorm,
    // else clipvalue).
    const int64_t nseg = static_cast<int64_t>(segments_.size());
    if (c.clipnorm > 0 || c.global_clipnorm > 0) {
      be.segment_sumsq(nseg, rep.seg_ptr(), g, rep.sums_ptr());
      if (c.clipnorm > 0)
        be.clip_gradients(GradientClip::norm, static_cast<float>(c.clipnorm), nseg, rep.seg_ptr(),
                          g, rep.sums_ptr());
      else
        be.clip_gradients(GradientClip::global_norm, static_cast<float>(c.global_clipnorm), nseg,
                          rep.seg_ptr(), g, rep.sums_ptr());
    } else if (c.clipvalue > 0) {
      be.clip_gradients(GradientClip::value, static_cast<float>(c.clipvalue), nseg, rep.seg_ptr(),
                        g, rep.sums_ptr());
    }
    // (e) The update (weight decay first, inside the rule's op).
    apply_rule(rank, c, s);
    // (f) constraints (i13-reg): on the updated weights (Keras applies each
    // variable's constraint after the optimizer's update).
    if (constraints_) constraints_(rank, be, w, g);
  }
  // (g) EMA, on every step (Keras updates it outside the accumulation's
  // condition), then the overwrite.
  if (average != nullptr) {
    for (const ParamRange& r : ranges_) be.ema_update(r.size, average + r.offset, w + r.offset, s);
    // Keras tests (iterations + 1) % frequency with its iterations (applied
    // updates under accumulation), so it may overwrite on several steps in a row.
    if (c.ema_overwrite_frequency > 0 &&
        (keras_iterations(c, iteration) + 1) % c.ema_overwrite_frequency == 0)
      for (const ParamRange& r : ranges_)
        be.copy(w + r.offset, average + r.offset, static_cast<size_t>(r.size) * sizeof(float));
  }
}

void UpdatePipeline::finalize(const OptimizerConfig& c) {
  if (!c.use_ema) return;
  replicas_.run("finalize", state_.iterations + 1, [&](int rank) {
    Backend& be = replicas_.backend(rank);
    float* w = state_.params(rank);
    const float* average = ema_slot(state_, rank, c);
    for (const ParamRange& r : ranges_)
      be.copy(w + r.offset, average + r.offset, static_cast<size_t>(r.size) * sizeof(float));
  });
}

}  // namespace mr
