#include "train/step.h"

#include <algorithm>

#include "core/error.h"
#include "core/op_kinds.h"
#include "dist/batch_split.h"
#include "dist/communicator.h"
#include "nn/regularization.h"

namespace mr {

namespace {

// Collectives a layer asks for (synchronized batch normalization), on the
// replica set's communicator.
class CommContext final : public ReplicaContext {
 public:
  CommContext(ReplicaSet& rs, int rank, StepClock* clock) : rs_(rs), rank_(rank), clock_(clock) {}
  // i16: every replica of the job (synchronized batch norm sums over all).
  int replicas() const override { return rs_.global_size(); }
  int rank() const override { return rank_; }
  void all_reduce_sum(float* data, int64_t n) override {
    ScopedPhase wait(clock_, rank_, StepPhase::allreduce);  // i14-monitor
    if (rs_.global_size() > 1) rs_.comm().all_reduce_sum(rank_, rs_.backend(rank_), data, n);
  }

 private:
  ReplicaSet& rs_;
  int rank_;
  StepClock* clock_;
};

}  // namespace

namespace {
// Doubles of output o's part of the metric-sum block.
size_t output_doubles(const OutputConfig& o) {
  size_t n = 1;
  for (const MetricConfig& m : o.metrics) n += static_cast<size_t>(metric_state_size(m, o.cols));
  return n;
}
}  // namespace

std::vector<size_t> metric_offsets(const CompileConfig& c) {
  std::vector<size_t> off;
  size_t at = 0;
  for (const OutputConfig& o : c.outputs) {
    off.push_back(at);
    at += output_doubles(o);
  }
  return off;
}

size_t metric_doubles(const CompileConfig& c) {
  return regularization_sum_offset(c) + 1;  // the outputs' sums, then the regularization sum
}

size_t regularization_sum_offset(const CompileConfig& c) {
  size_t n = 0;
  for (const OutputConfig& o : c.outputs) n += output_doubles(o);
  return n;
}

int weight_part(size_t parts, size_t n_in, size_t n_out, size_t k) {
  if (parts == n_in + 2 * n_out) return static_cast<int>(n_in + n_out + k);
  if (parts == n_in + n_out + 1) return static_cast<int>(n_in + n_out);
  return -1;
}

struct Step::Replica {
  // The selected graph's executor (Step::select); every graph's executor of
  // this replica lays its buffers out in `ws`.
  Executor* exec = nullptr;
  std::shared_ptr<Workspace> ws;
  // One target buffer per model output, sized by reserve().
  std::vector<DeviceBuffer> targets;
  std::vector<int64_t> target_capacity;  // floats
  // Sample weights of this replica's slice, one buffer per output (sized by
  // reserve()); sw[k] points at output k's weights for the step staged last,
  // null when its batch has none.
  std::vector<DeviceBuffer> weights;
  int64_t weight_capacity = 0;         // rows per buffer
  std::vector<int64_t> weight_floats;  // floats per buffer of weights / wide (rows x positions)
  std::vector<const float*> sw;
  // Output k of positions P > 1 (nn/loss.h output_positions): wide[k] holds
  // its per-sample weights repeated over the P positions, as its built-in
  // loss and metrics read them (one per row of the last axis); wide_sw[k]
  // points there, or at sw[k] when the batch gave one weight per position
  // (then sw[k] is null for the traced ones, which take whole samples), or
  // is sw[k] when P is 1.
  std::vector<DeviceBuffer> wide;
  std::vector<const float*> wide_sw;
  int64_t rows_last = 0;
  std::unique_ptr<CommContext> ctx;
  std::unique_ptr<Regularization> reg;  // weight regularizers and constraints (i13-reg)
};

struct Step::Variant {
  std::shared_ptr<const Graph> owned;  // null for the model's own graph
  const Graph* graph = nullptr;
  std::vector<std::unique_ptr<Executor>> execs;  // one per replica
  std::vector<int64_t> positions;                // per output (output_positions)
};

Step::Variant& Step::make_variant(const std::vector<int64_t>& lengths,
                                  std::shared_ptr<const Graph> owned) {
  auto v = std::make_unique<Variant>();
  v->owned = std::move(owned);
  v->graph = v->owned ? v->owned.get() : &graph_;
  for (int r = 0; r < replicas_.size(); ++r)
    v->execs.push_back(std::make_unique<Executor>(*v->graph, replicas_.backend(r),
                                                  reps_[static_cast<size_t>(r)]->ws));
  for (int o : v->graph->outputs())
    v->positions.push_back(output_positions(v->graph->out_shape(o)));
  // The logits settings of configure_logits(), as every graph's.
  for (size_t k = 0; k < loss_logits_.size(); ++k)
    for (auto& e : v->execs) e->set_logits_grad(static_cast<int>(k), loss_logits_[k] != 0);
  Variant& ref = *v;
  variants_[lengths] = std::move(v);
  return ref;
}

void Step::select(const std::vector<int64_t>& lengths) {
  auto it = variants_.find(lengths);
  Variant& v = it != variants_.end() ? *it->second : make_variant(lengths, graph_.bind(lengths));
  if (&v == active_) return;
  active_ = &v;
  for (size_t r = 0; r < reps_.size(); ++r) reps_[r]->exec = v.execs[r].get();
}

const Graph& Step::active_graph() const { return *active_->graph; }

int64_t Step::positions(size_t k) const { return active_->positions.at(k); }

Step::Step(const Graph& graph, ReplicaSet& replicas, TrainingState& state)
    : graph_(graph),
      replicas_(replicas),
      state_(state),
      update_(graph, replicas, state),
      clock_(replicas.size()) {
  update_.set_clock(&clock_);                               // i14-monitor
  graphs_ = std::make_unique<StepGraphs>(replicas.size());  // i14-gpu
  input_ = std::make_unique<DeviceInput>(replicas);         // i14-devinput
  resident_ = std::make_unique<ResidentInput>(replicas);    // i14-devinput
  traced_ = std::make_unique<TracedObjectives>(replicas);   // i15-users
  for (int r = 0; r < replicas.size(); ++r) {
    auto rep = std::make_unique<Replica>();
    rep->ws = std::make_shared<Workspace>(replicas.backend(r));
    rep->ctx = std::make_unique<CommContext>(replicas, r, &clock_);
    rep->reg = std::make_unique<Regularization>(graph, replicas.backend(r));
    reps_.push_back(std::move(rep));
  }
  active_ = &make_variant(graph.lengths(), nullptr);
  for (size_t r = 0; r < reps_.size(); ++r) reps_[r]->exec = active_->execs[r].get();
  // regularization gradients (i13-reg): every replica adds the same penalty
  // gradient to the same reduced gradient (nn/regularization.h); the value
  // is logged by post_train.
  update_.set_regularization_hook([this](int r, Backend&, float* params, float* grads) {
    reps_[static_cast<size_t>(r)]->reg->add_weight_penalties(params, grads, nullptr, 0.0);
  });
  // constraints (i13-reg): on the updated weights.
  update_.set_constraint_hook([this](int r, Backend&, float* params, float*) {
    reps_[static_cast<size_t>(r)]->reg->apply_constraints(params);
  });
}

Step::~Step() = default;

void Step::set_trainable(const std::vector<char>& trainable) {
  graphs_->invalidate();  // compile(): a new configuration (i14-gpu)
  for (auto& rep : reps_) rep->reg->set_trainable(trainable);
}

namespace {
bool metric_takes_logits(const MetricConfig& m) {
  return m.graph == nullptr && !m.from_logits &&
         (m.kind == MetricKind::binary_crossentropy ||
          m.kind == MetricKind::categorical_crossentropy ||
          m.kind == MetricKind::sparse_categorical_crossentropy);
}
}  // namespace

void Step::configure_logits(const CompileConfig& c) {
  const size_t n = c.outputs.size();
  logits_act_.assign(n, Activation::linear);
  loss_logits_.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    const int kk = static_cast<int>(k);
    const Activation act = reps_[0]->exec->output_logits_activation(kk);
    const LossConfig& l = c.outputs[k].loss;
    bool loss = false;
    if (act != Activation::linear && l.graph == nullptr && !l.from_logits) {
      // TensorFlow takes the logits whichever of the two activations made
      // them (a sigmoid's for a categorical loss too); the binary focal
      // loss's focusing factor reads the probabilities, which equal the
      // logits' sigmoid only for a sigmoid output.
      loss = l.kind == LossKind::categorical_crossentropy ||
             l.kind == LossKind::sparse_categorical_crossentropy ||
             l.kind == LossKind::binary_crossentropy ||
             (l.kind == LossKind::binary_focal_crossentropy && act == Activation::sigmoid);
    }
    logits_act_[k] = act;
    loss_logits_[k] = loss ? 1 : 0;
    for (auto& v : variants_)
      for (auto& e : v.second->execs) e->set_logits_grad(kk, loss);
  }
  graphs_->invalidate();  // i14-gpu: the steps' ops change
}

void Step::reserve(int64_t global_rows, const std::vector<int64_t>& target_widths, bool weights) {
  const int n = replicas_.size();
  const int64_t rows = largest_slice(global_rows, n);
  // Host staging for the largest upload of a slice (pinned memory on a GPU).
  int64_t widest = 0;
  for (int64_t w : target_widths) widest = std::max(widest, w);
  const Graph& g = active_graph();
  for (int k : g.inputs()) widest = std::max(widest, g.out_shape(k).numel());
  for (int r = 0; r < n; ++r) {
    Replica& rep = *reps_[static_cast<size_t>(r)];
    // Growth moves buffers a captured graph points at (i14-gpu).
    if (rows > rep.exec->capacity()) graphs_->invalidate();
    rep.exec->reserve(rows);
    replicas_.backend(r).reserve_staging(static_cast<size_t>(rows * widest) * sizeof(float));
    if (rep.targets.size() < target_widths.size()) {
      while (rep.targets.size() < target_widths.size())
        rep.targets.emplace_back(nullptr, DeviceFree{});
      rep.target_capacity.resize(target_widths.size(), 0);
    }
    for (size_t k = 0; k < target_widths.size(); ++k) {
      const int64_t need = rows * target_widths[k];
      if (need > rep.target_capacity[k]) {
        graphs_->invalidate();
        rep.targets[k] = replicas_.backend(r).allocate(static_cast<size_t>(need) * sizeof(float));
        rep.target_capacity[k] = need;
      }
    }
    if (rep.sw.size() < target_widths.size()) {
      rep.sw.resize(target_widths.size(), nullptr);
      rep.wide_sw.resize(target_widths.size(), nullptr);
    }
    // Sample weights: rows x positions floats per output (per-position
    // weights, or per-sample ones repeated over the positions).
    bool grow = weights && rep.weights.size() < target_widths.size();
    for (size_t k = 0; weights && !grow && k < target_widths.size(); ++k)
      grow = rows * active_->positions[k] > rep.weight_floats[k];
    if (grow) {
      graphs_->invalidate();
      rep.weights.clear();
      rep.wide.clear();
      rep.weight_floats.clear();
      for (size_t k = 0; k < target_widths.size(); ++k) {
        const int64_t p = active_->positions[k];
        const int64_t floats = std::max(rows, rep.weight_capacity) * p;
        const size_t bytes = static_cast<size_t>(floats) * sizeof(float);
        rep.weights.push_back(replicas_.backend(r).allocate(bytes));
        rep.wide.push_back(p > 1 ? replicas_.backend(r).allocate(bytes)
                                 : DeviceBuffer(nullptr, DeviceFree{}));
        rep.weight_floats.push_back(floats);
      }
      rep.weight_capacity = std::max(rows, rep.weight_capacity);
    }
  }
  traced_->reserve(rows);  // i15-users: traced losses' and metrics' buffers
}

std::pair<int64_t, int64_t> Step::stage(int rank, const HostBatch& batch, bool targets) {
  if (slot_ >= 0) return take_slot(rank, batch, targets);        // i14-devinput
  if (resident_on_) return take_resident(rank, batch, targets);  // i14-devinput
  Backend& be = replicas_.backend(rank);
  return place(rank, batch, targets, [&](size_t part, void* dst, int64_t offset, size_t bytes) {
    be.upload(dst, batch.parts[part].data + offset, bytes);
  });
}

// Where each part of replica `rank`'s slice goes: put(part, dst, offset,
// bytes) moves `bytes` of batch part `part` from float `offset` of the global
// batch (the slice's first row) to `dst`. One mapping for direct uploads and
// for copies out of a device input slot (i14-devinput).
template <class Put>
std::pair<int64_t, int64_t> Step::place(int rank, const HostBatch& batch, bool targets, Put&& put) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  int64_t begin = 0, count = 0;
  // Prediction (no targets) splits over this worker's replicas only: every
  // worker predicts all rows (i16).
  replicas_.slice(batch.rows, rank, !targets, begin, count);
  rep.rows_last = count;
  MR_CHECK(count <= rep.exec->capacity(), internal, "a slice of ", count,
           " rows exceeds the reserved workspace of ", rep.exec->capacity());
  const size_t n_in = graph_.inputs().size();
  for (size_t k = 0; k < n_in; ++k) {
    const HostComponent& c = batch.parts[k];
    put(k, rep.exec->input(static_cast<int>(k)), begin * c.width,
        static_cast<size_t>(count * c.width) * sizeof(float));
  }
  if (targets) {
    const size_t n_out = graph_.outputs().size();
    MR_CHECK(rep.targets.size() >= n_out, internal, "target buffers not reserved");
    for (size_t k = 0; k < n_out; ++k) {
      const HostComponent& c = batch.parts[n_in + k];
      MR_CHECK(count * c.width <= rep.target_capacity[k], internal, "targets exceed their buffer");
      put(n_in + k, rep.targets[k].get(), begin * c.width,
          static_cast<size_t>(count * c.width) * sizeof(float));
    }
    // Sample weights: one float per sample, or one per position of the
    // output (Model::check_batch); a part shared by all outputs is uploaded
    // once. Outputs of several positions given per-sample weights read them
    // repeated over the positions (Replica::wide).
    int staged = -1;
    const float* staged_at = nullptr;
    for (size_t k = 0; k < n_out; ++k) {
      const int part = weight_part(batch.parts.size(), n_in, n_out, k);
      if (part < 0) {
        rep.sw[k] = rep.wide_sw[k] = nullptr;
        continue;
      }
      MR_CHECK(k < rep.weights.size() && count * active_->positions[k] <= rep.weight_floats[k],
               internal, "sample weight buffers not reserved");
      const int64_t width = batch.parts[static_cast<size_t>(part)].width;
      if (part != staged) {
        put(static_cast<size_t>(part), rep.weights[k].get(), begin * width,
            static_cast<size_t>(count * width) * sizeof(float));
        staged_at = static_cast<const float*>(rep.weights[k].get());
        staged = part;
      }
      rep.sw[k] = width > 1 ? nullptr : staged_at;
      const int64_t positions = active_->positions[k];
      if (positions == 1 || width > 1) {
        rep.wide_sw[k] = staged_at;
        continue;
      }
      if (count > 0) {
        // wide[r * P + p] = sw[r]: the sample's weight on each position.
        StridedCopy c;
        c.rank = 2;
        c.dims[0] = positions;
        c.dims[1] = count;
        c.src_stride[0] = 0;
        c.src_stride[1] = 1;
        c.dst_stride[0] = 1;
        c.dst_stride[1] = positions;
        replicas_.backend(rank).strided_copy(c, staged_at, static_cast<float*>(rep.wide[k].get()));
      }
      rep.wide_sw[k] = static_cast<const float*>(rep.wide[k].get());
    }
  }
  return {begin, count};
}

std::pair<int64_t, int64_t> Step::timed_stage(int rank, const HostBatch& batch) {
  ScopedPhase staging(&clock_, rank, StepPhase::input);  // i14-monitor
  return stage(rank, batch, true);
}

Executor::Pass Step::pass(int rank, int64_t begin, int64_t count, int64_t global_rows,
                          const StepScalars* scalars) {
  Executor::Pass p;
  p.rows = count;
  p.global_rows = global_rows;
  p.row_offset = replicas_.global_row(begin);  // i16: a worker's shard starts later
  p.training = scalars != nullptr;
  p.scalars = scalars;
  p.params = state_.params(rank);
  p.state = state_.state(rank);
  p.ctx = reps_[static_cast<size_t>(rank)]->ctx.get();
  return p;
}

namespace {
// Each output's loss arguments for a global batch of `rows` rows (the one
// loop behind set_batch_params, Step::prepare_slot and Step::use_resident):
// width(k) is output k's floats per target row; targets(k) gives its
// targets for the whole batch, called only for a loss that reads them
// (loss_reads_targets).
template <class Width, class Targets>
void fill_loss_params(std::vector<LossParams>& out, const CompileConfig& c,
                      const std::vector<int64_t>& positions, int64_t rows, Width&& width,
                      Targets&& targets) {
  out.resize(c.outputs.size());  // allocates once, at the first step
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    // A built-in loss reads rows x positions target rows (OutputConfig).
    const LossConfig& loss = c.outputs[k].loss;
    const float* t = loss_reads_targets(loss) ? targets(k) : nullptr;
    const int64_t p = loss.graph != nullptr ? 1 : positions[k];
    out[k] = batch_loss_params(loss, t, rows * p, width(k) / p);
    // A variable-length output's loss: each batch's mean weighs its samples.
    if (c.outputs[k].variable) out[k].position_weight = 1.0f / static_cast<float>(p);
  }
}
}  // namespace

void Step::set_batch_params(const HostBatch& batch, const CompileConfig& c) {
  if (slot_ >= 0) {  // i14-devinput: computed when the slot's batch was staged
    batch_params_ = slot_params_[static_cast<size_t>(slot_)];
    return;
  }
  if (resident_on_) {  // i14-devinput: computed by use_resident()
    batch_params_ = resident_params_;
    return;
  }
  const size_t n_in = graph_.inputs().size();
  fill_loss_params(
      batch_params_, c, active_->positions, batch.rows,
      [&](size_t k) { return batch.parts[n_in + k].width; },
      [&](size_t k) { return batch.parts[n_in + k].data; });
}

void Step::losses(int rank, const CompileConfig& c, int64_t count, float grad_scale) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  Backend& be = replicas_.backend(rank);
  // Output k's sums follow output k - 1's (metric_offsets()), computed in
  // place so that the step allocates nothing.
  double* sums = state_.metric_sums(rank);
  size_t at = 0;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const OutputConfig& o = c.outputs[k];
    const int kk = static_cast<int>(k);
    const float* out = rep.exec->output(kk);
    // Keras-TF's logits (configure_logits): the cross-entropies that take
    // them read them where the output's layer keeps them.
    const float* logits =
        logits_act_[k] != Activation::linear ? rep.exec->output_logits(kk, count) : nullptr;
    const auto* tgt = static_cast<const float*>(rep.targets[k].get());
    // This replica's slice of output k's sample weights (null: every sample
    // weighs 1): per sample (sw) for the traced losses and metrics, per row
    // of the last axis (wide_sw) for the built-in ones; the loss and the
    // weighted metrics read the same pointers. The built-in ones see
    // count x positions rows of o.cols values (OutputConfig).
    const float* sw = rep.sw[k];
    const float* wide_sw = rep.wide_sw[k];
    const int64_t rows = count * active_->positions[k];
    // Output k's part of the total loss is weight_k * (its sum / (global
    // rows x positions)), Keras' "sum_over_batch_size" over every loss
    // value: its gradient is scaled by weight_k / (global rows x positions).
    // A traced loss averages each sample's values itself. A weight of 0
    // still writes the (zero) gradient the backward pass reads.
    float* grad = grad_scale > 0.0f ? rep.exec->output_grad(kk) : nullptr;
    // The loss's per-batch arguments come from the whole global batch.
    // A variable-length output's rows carry 1 / its positions in their loss
    // arguments (fill_loss_params).
    const float loss_scale =
        grad_scale * o.weight / (o.variable ? 1.0f : static_cast<float>(o.positions));
    if (o.loss.graph != nullptr) {  // i15-users: a traced loss
      traced_->loss(rank, o.loss, count, out, tgt, sw, grad_scale * o.weight, grad, sums + at);
    } else if (loss_logits_[k]) {
      LossParams p = batch_params_[k];
      p.from_logits = true;
      be.loss(o.loss.kind, p, rows, o.cols, logits, tgt, wide_sw, loss_scale, grad, sums + at);
    } else {
      be.loss(o.loss.kind, batch_params_[k], rows, o.cols, out, tgt, wide_sw, loss_scale, grad,
              sums + at);
    }
    // Only weighted_metrics read the sample weights.
    size_t state_at = at + 1;
    for (const MetricConfig& m : o.metrics) {
      if (m.kind == MetricKind::state_metric)  // a Metric() class
        traced_->state_metric(rank, m, count, out, tgt, sums + state_at);
      else if (m.graph != nullptr)  // i15-users: a traced metric
        traced_->metric(rank, m, count, out, tgt, m.weighted ? sw : nullptr, sums + state_at);
      else if (logits != nullptr && metric_takes_logits(m)) {
        MetricSpec on_logits = m;
        on_logits.from_logits = true;
        be.metric(on_logits, rows, o.cols, logits, tgt, m.weighted ? wide_sw : nullptr,
                  sums + state_at);
      } else
        be.metric(m, rows, o.cols, out, tgt, m.weighted ? wide_sw : nullptr, sums + state_at);
      state_at += static_cast<size_t>(metric_state_size(m, o.cols));
    }
    at = state_at;
  }
}

void Step::post_train(const HostBatch& batch, const CompileConfig& config, int64_t iteration) {
  const int64_t global_rows = replicas_.global_rows(batch.rows);  // i16: sharded steps
  // This step's values, written once to each replica's device block; every
  // op of the step reads them there. Under dynamic loss scaling the step
  // before wrote the block on the device (core/step_scalars.h), and this
  // step writes the next one.
  const bool dynamic = config.loss_scale.dynamic;
  const StepScalars scalars = dynamic ? StepScalars{} : step_scalars(config.optimizer, iteration);
  set_batch_params(batch, config);
  // Eager, captured or replayed (i14-gpu, train/step_graphs.h): the same for
  // every replica.
  graph_key_.global_rows = global_rows;
  graph_key_.parts = batch.parts.size();
  graph_key_.frozen = config.frozen.empty() ? nullptr : config.frozen.data();
  graph_key_.variant = active_;
  graph_key_.loss = batch_params_;
  const StepMode mode = graphs_->decide(graph_key_, graph_eligible(config));
  replicas_.post([this, &batch, &config, global_rows, iteration, scalars, mode, dynamic](int r) {
    ScopedReplica busy(&clock_, r);  // i14-monitor
    replicas_.check_fault(r, iteration + 1);
    Replica& rep = *reps_[static_cast<size_t>(r)];
    Backend& be = replicas_.backend(r);
    // Uploads stay outside a captured graph: the step's values and its slice
    // land in the same device buffers every step, where the graph reads them.
    if (!dynamic) be.upload(state_.scalars(r), &scalars, sizeof(scalars));
    const auto [begin, count] = timed_stage(r, batch);
    Executor::Pass ps = pass(r, begin, count, global_rows, state_.scalars(r));
    ps.frozen = config.frozen.empty() ? nullptr : config.frozen.data();
    graphs_->run(r, be, mode, [&] {
      rep.exec->forward(ps);
      // Loss = sum of per-sample losses / global batch size, so the summed
      // gradients of all replicas equal the single-device gradient. Dynamic
      // loss scaling then multiplies in the scale (a power of two: exact) on
      // the device, read from the step's block: a captured step replays
      // with each step's scale.
      const float scale = 1.0f / static_cast<float>(global_rows);
      if (count > 0) {
        losses(r, config, count, scale);
        if (dynamic) scale_loss_gradients(r, count, &state_.scalars(r)->loss_scale);
      }
      double* reg_sum = state_.metric_sums(r) + regularization_sum_offset(config);
      rep.exec->activity_penalties(ps, reg_sum);
      // i14-overlap: gradient buckets all-reduced as backward finishes them.
      ps.grad_ready = update_.arm_buckets(r, config.optimizer, iteration);
      rep.exec->backward(ps, state_.grads(r));
      // Weight penalties enter the logged loss on every step, accumulating
      // ones too (replica 0 alone: every replica's is the same); their
      // gradient is added by the update pipeline's hook (Step::Step) on the
      // steps that apply, after the all-reduce.
      if (replicas_.global_rank(r) == 0)  // i16: once per job
        rep.reg->weight_penalty(state_.params(r), reg_sum, static_cast<double>(global_rows));
      // Accumulation, all-reduce, regularization gradients, clipping, the
      // update, constraints, EMA (train/update.h).
      update_.run(r, config.optimizer, iteration, state_.scalars(r));
      if (dynamic)
        be.advance_loss_scale(LossScaleAdvance{state_.scalars(r), state_.loss_scale_word(r),
                                               state_.loss_scale_table(r), state_.loss_scale_rows(),
                                               config.loss_scale.dynamic_growth_steps});
    });
    stage_ahead(r, &clock_);  // i14-devinput: once the step's work is queued
  });
}

void Step::scale_loss_gradients(int rank, int64_t count, const float* loss_scale) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  Backend& be = replicas_.backend(rank);
  const Graph& g = active_graph();
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    const int64_t n = count * g.out_shape(g.outputs()[k]).numel();
    if (n <= 0) continue;
    // grad (n floats) times the one float at loss_scale, in place. A power
    // of two: the same bits as a loss gradient computed with the scale in
    // its factor (barring over- and underflow).
    Broadcast g;
    g.rank = 1;
    g.operands = 2;
    g.size = n;
    g.dims[0] = n;
    g.stride[0][0] = 1;
    g.stride[1][0] = 0;
    float* grad = rep.exec->output_grad(static_cast<int>(k));
    be.binary(BinaryOp::multiply, g, grad, loss_scale, grad);
  }
}

void Step::post_eval(const HostBatch& batch, const CompileConfig& config) {
  const int64_t global_rows = replicas_.global_rows(batch.rows);
  set_batch_params(batch, config);
  replicas_.post([this, &batch, &config, global_rows](int r) {
    Replica& rep = *reps_[static_cast<size_t>(r)];
    const auto [begin, count] = stage(r, batch, true);
    double* reg_sum = state_.metric_sums(r) + regularization_sum_offset(config);
    // Keras' evaluation loss includes the regularization losses too.
    if (replicas_.global_rank(r) == 0)  // i16: once per job
      rep.reg->weight_penalty(state_.params(r), reg_sum, static_cast<double>(global_rows));
    if (count > 0) {
      const Executor::Pass ps = pass(r, begin, count, global_rows, nullptr);
      rep.exec->forward(ps);
      losses(r, config, count, 0.0f);
      rep.exec->activity_penalties(ps, reg_sum);
    }
    stage_ahead(r, nullptr);  // i14-devinput: once the step's work is queued
  });
}

void Step::predict(const HostBatch& batch, const std::vector<float*>& outs) {
  replicas_.run("prediction", state_.iterations + 1, [&](int r) {
    Replica& rep = *reps_[static_cast<size_t>(r)];
    const auto [begin, count] = stage(r, batch, false);
    if (count == 0) return;
    rep.exec->forward(pass(r, begin, count, batch.rows, nullptr));
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k] == nullptr) continue;
      const int64_t width = active_graph().out_shape(graph_.outputs()[k]).numel();
      replicas_.backend(r).download(outs[k] + begin * width, rep.exec->output(static_cast<int>(k)),
                                    static_cast<size_t>(count * width) * sizeof(float));
    }
  });
}

std::vector<int64_t> Step::rows_last() const {
  std::vector<int64_t> rows;
  for (const auto& r : reps_) rows.push_back(r->rows_last);
  return rows;
}

// ---- i14-gpu: CUDA graphs of the training step ----------------------------------
bool Step::graph_eligible(const CompileConfig& c) const {
  // The backend: CUDA captures, the CPU backend says no (graph_capture_begin).
  if (replicas_.backend(0).kind() != DeviceKind::cuda) return false;
  // The peer-copy and host-staged all-reduces meet on the host (barriers,
  // downloads): only NCCL's collectives are stream work a graph can hold.
  if (replicas_.size() > 1 && replicas_.comm().name() != comm_kind_name(CommKind::nccl))
    return false;
  // Host choices that change from step to step inside UpdatePipeline::run.
  if (c.optimizer.gradient_accumulation_steps > 0) return false;
  if (c.optimizer.use_ema && c.optimizer.ema_overwrite_frequency > 0) return false;
  // Dynamic loss scaling captures too: the scale is read from the step's
  // block (the loss gradients' factor: scale_loss_gradients; the unscale and
  // the updates' skip word), and the step's last op moves the scale and
  // writes the next step's block on the device (advance_loss_scale). The
  // test hook UpdatePipeline::inject_nonfinite is a host choice made when a
  // step records its ops: with graphs on it fires only if its step is eager
  // or captured (Model::end_train_step drops the graphs after it fired), so
  // GPU tests that inject turn graphs off.
  // i15-users: traced graphs (layers, losses, metrics) run eagerly until
  // their ops are checked under capture on a GPU.
  if (traced_->present()) return false;
  return true;
}

// ---- i14-devinput: input staged ahead in device slots ---------------------------
std::pair<int64_t, int64_t> Step::take_slot(int rank, const HostBatch& desc, bool targets) {
  const int slot = slot_;
  input_->begin_take(rank, slot);
  const auto range = place(rank, desc, targets, [&](size_t part, void* dst, int64_t, size_t bytes) {
    input_->copy_part(rank, slot, part, dst, bytes);
  });
  input_->end_take(rank, slot);
  return range;
}

void Step::stage_ahead(int rank, StepClock* clock) {
  if (slot_ < 0 || ahead_ == nullptr) return;
  // The slot is free once the step's copies out of it ran: the batch after
  // next goes into it on the copy lane while this step computes. Issued
  // after the step's own work, so that the host's copy into pinned memory
  // does not delay the launches of the step's kernels.
  ScopedPhase staging(clock, rank, StepPhase::input);
  input_->stage(rank, slot_, *ahead_);
}

void Step::prepare_slot(int slot, const HostBatch& batch, const CompileConfig& c) {
  input_->describe(slot, batch);
  const size_t n_in = graph_.inputs().size();
  fill_loss_params(
      slot_params_[static_cast<size_t>(slot)], c, active_->positions, batch.rows,
      [&](size_t k) { return batch.parts[n_in + k].width; },
      [&](size_t k) { return batch.parts[n_in + k].data; });
}

void Step::stage_slot_now(int slot, const HostBatch& batch) {
  replicas_.run("input staging", state_.iterations + 1,
                [&](int r) { input_->stage(r, slot, batch); });
}

std::pair<int64_t, int64_t> Step::take_resident(int rank, const HostBatch& desc, bool targets) {
  int64_t begin = 0, count = 0;
  replicas_.slice(desc.rows, rank, !targets, begin, count);
  resident_->load_index(rank, begin, count);
  // Every part of the slice has the slice's `count` rows (place() puts
  // count * width floats of each).
  return place(rank, desc, targets, [&](size_t part, void* dst, int64_t, size_t) {
    resident_->gather(rank, part, count, static_cast<float*>(dst));
  });
}

void Step::use_resident(const ArrayData& data, const int64_t* order, int64_t rows,
                        const CompileConfig& c) {
  resident_->set_batch(&data, order, rows);
  // A loss whose per-batch arguments read the whole batch's targets
  // (loss_reads_targets) gets them gathered on the host (one output's, a few
  // floats per row) as the source would; the others need no gather.
  const size_t n_in = graph_.inputs().size();
  auto width = [&](size_t k) { return data.widths[n_in + k]; };
  fill_loss_params(resident_params_, c, active_->positions, rows, width, [&](size_t k) {
    const int64_t w = width(k);
    const float* src = data.parts[n_in + k].data();
    resident_targets_.resize(static_cast<size_t>(rows * w));
    for (int64_t r = 0; r < rows; ++r)
      std::copy(src + order[r] * w, src + (order[r] + 1) * w, resident_targets_.begin() + r * w);
    return static_cast<const float*>(resident_targets_.data());
  });
  resident_on_ = true;
}

}  // namespace mr
