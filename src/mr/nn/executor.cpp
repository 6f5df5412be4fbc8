#include "nn/executor.h"

#include <algorithm>

#include "core/error.h"

namespace mr {

Executor::Executor(const Graph& graph, Backend& be, std::shared_ptr<Workspace> workspace)
    : graph_(graph),
      be_(be),
      work_(workspace ? std::move(workspace) : std::make_shared<Workspace>(be)) {
  buf_.resize(static_cast<size_t>(graph.size()));
  grad_written_.assign(static_cast<size_t>(graph.size()), 0);
  param_grad_written_.assign(static_cast<size_t>(graph.size()), 0);
  logits_grad_.assign(static_cast<size_t>(graph.size()), 0);
  logits_at_.resize(static_cast<size_t>(graph.size()));
  for (int i = 0; i < graph.size(); ++i)
    if (!graph.node(i).inputs.empty() && graph.layer(i).logits_activation() != Activation::linear)
      logits_at_[static_cast<size_t>(i)] = graph.layer(i).logits_at(graph.in_shapes(i));
  activity_ = activity_specs(graph);
  for (const RegularizerSpec& s : activity_)
    has_activity_ = has_activity_ || s.kind != RegularizerSpec::Kind::none;
  for (int i = 0; i < graph.size(); ++i)
    if (!graph.node(i).inputs.empty() && graph.layer(i).added_losses() > 0) has_activity_ = true;
}

void Executor::activity_penalties(const Pass& p, double* acc) {
  if (!has_activity_ || p.rows == 0) return;
  for (int i = 0; i < graph_.size(); ++i) {
    // add_loss() terms: v x rows (the logged loss divides the sum by the
    // global rows), from where the layer's forward left them.
    const int terms = graph_.node(i).inputs.empty() ? 0 : graph_.layer(i).added_losses();
    for (int t = 0; t < terms; ++t)
      be_.traced_reduce(
          false, p.rows, 1,
          at(buf_[static_cast<size_t>(i)].work) + graph_.layer(i).added_losses_at() + t, nullptr,
          0.0f, nullptr, acc, nullptr);
    const RegularizerSpec& s = activity_[static_cast<size_t>(i)];
    if (s.kind == RegularizerSpec::Kind::none) continue;
    be_.l1_l2_penalty(p.rows * graph_.out_shape(i).numel(), at(buf_[static_cast<size_t>(i)].out),
                      s.l1, s.l2, 1.0, acc, 0.0f, nullptr);
  }
}

void Executor::reserve(int64_t rows) {
  if (rows <= capacity_) {
    activate();
    return;
  }
  int64_t total = 0, widest = 0;
  auto take = [&](int64_t floats) {
    const int64_t off = total;
    total += align_floats(floats);
    return off;
  };
  for (int i = 0; i < graph_.size(); ++i) {
    NodeBuffers& b = buf_[static_cast<size_t>(i)];
    const int64_t width = graph_.out_shape(i).numel();
    b.out = take(rows * width);
    b.grad = graph_.needs_grad(i) ? take(rows * width) : -1;
    b.aux = graph_.aux_per_row(i) > 0 ? take(rows * graph_.aux_per_row(i)) : -1;
    int64_t wf = graph_.work_floats(i);
    if (!graph_.node(i).inputs.empty())  // i15-users: what the layer needs for these rows
      wf += graph_.layer(i).work_floats_for_rows(graph_.in_shapes(i), rows);
    b.work = wf > 0 ? take(wf) : -1;
    if (graph_.consumers(i) > 1 && graph_.needs_grad(i)) widest = std::max(widest, width);
  }
  // One scratch slot per input of the node with the most inputs: every input
  // of a node may need its gradient accumulated (merge layers whose inputs
  // feed other layers too, or one tensor fed twice).
  size_t max_inputs = 1;
  for (int i = 0; i < graph_.size(); ++i)
    max_inputs = std::max(max_inputs, graph_.node(i).inputs.size());
  scratch_slot_ = rows * widest;
  scratch_ = widest > 0 ? take(scratch_slot_ * static_cast<int64_t>(max_inputs)) : -1;
  int64_t shared = 0;
  for (int i = 0; i < graph_.size(); ++i)
    if (graph_.node(i).shares >= 0) shared = std::max(shared, graph_.param_floats(i));
  param_scratch_ = shared > 0 ? take(shared) : -1;
  work_->ensure(total);
  // Backend resources the layers' ops need (cuDNN plans and workspace), made
  // here so that no step allocates them.
  for (int i = 0; i < graph_.size(); ++i)
    if (!graph_.node(i).inputs.empty()) graph_.layer(i).prepare(be_, graph_.in_shapes(i), rows);
  capacity_ = rows;
  work_->holder = nullptr;  // the regions moved: activate() rewrites them
  activate();
}

void Executor::activate() {
  if (capacity_ == 0) return;
  if (work_->holder == this && prepared_generation_ == work_->generation()) return;
  // i15-users: values layers keep in their work regions (Layer::prepare_work).
  for (int i = 0; i < graph_.size(); ++i)
    if (!graph_.node(i).inputs.empty() && buf_[static_cast<size_t>(i)].work >= 0)
      graph_.layer(i).prepare_work(be_, graph_.in_shapes(i), at(buf_[static_cast<size_t>(i)].work));
  work_->holder = this;
  prepared_generation_ = work_->generation();
}

float* Executor::input(int k) {
  return at(buf_.at(static_cast<size_t>(graph_.inputs().at(k))).out);
}

const float* Executor::output(int k) const {
  return at(buf_.at(static_cast<size_t>(graph_.outputs().at(k))).out);
}

float* Executor::output_grad(int k) {
  const int node = graph_.outputs().at(static_cast<size_t>(k));
  MR_CHECK(graph_.needs_grad(node), value, "output '", graph_.node(node).name,
           "' does not depend on any trainable variable");
  return at(buf_[static_cast<size_t>(node)].grad);
}

Activation Executor::output_logits_activation(int k) const {
  const int node = graph_.outputs().at(static_cast<size_t>(k));
  const GraphNode& nd = graph_.node(node);
  if (nd.inputs.empty() || graph_.consumers(node) > 0) return Activation::linear;
  if (std::count(graph_.outputs().begin(), graph_.outputs().end(), node) != 1)
    return Activation::linear;
  if (activity_[static_cast<size_t>(node)].kind != RegularizerSpec::Kind::none)
    return Activation::linear;
  const Layer& layer = graph_.layer(node);
  if (layer.dtype_policy().compute != ComputeDtype::f32) return Activation::linear;
  return layer.logits_activation();
}

const float* Executor::output_logits(int k, int64_t rows) const {
  const int node = graph_.outputs().at(static_cast<size_t>(k));
  const Layer::LogitsAt& z = logits_at_[static_cast<size_t>(node)];
  const float* base = work_->data();
  if (z.first_input) return base + buf_[static_cast<size_t>(graph_.node(node).inputs[0])].out;
  return base + buf_[static_cast<size_t>(node)].aux + z.aux_floats_before * rows;
}

void Executor::set_logits_grad(int k, bool on) {
  MR_CHECK(!on || output_logits_activation(k) != Activation::linear, internal, "output ", k,
           " has no logits to take a gradient for");
  logits_grad_[static_cast<size_t>(graph_.outputs().at(static_cast<size_t>(k)))] = on ? 1 : 0;
}

void Executor::forward(const Pass& p) {
  MR_CHECK(p.rows <= capacity_, internal, "batch of ", p.rows, " rows exceeds workspace of ",
           capacity_);
  MR_CHECK(capacity_ == 0 || work_->holder == this, internal,
           "an executor ran on a workspace another one holds (activate() first)");
  SoloContext solo;
  ReplicaContext& ctx = p.ctx != nullptr ? *p.ctx : solo;
  const StepScalars* scalars = p.scalars;
  if (scalars == nullptr && p.training) {
    StepScalars s;
    s.step = p.step;
    scalars = be_.stage_scalars(s);
  }
  for (int i = 0; i < graph_.size(); ++i) {
    const GraphNode& nd = graph_.node(i);
    if (nd.inputs.empty()) continue;  // input nodes were filled by the caller
    const NodeBuffers& b = buf_[static_cast<size_t>(i)];
    ForwardArgs a{be_,
                  p.rows,
                  p.global_rows,
                  p.row_offset,
                  scalars,
                  static_cast<uint32_t>(i),
                  node_training(p, i),
                  {},
                  graph_.in_shapes(i),
                  at(b.out),
                  {},
                  {},
                  at(b.aux),
                  at(b.work),
                  ctx};
    for (int j : nd.inputs) a.in.push_back(at(buf_[static_cast<size_t>(j)].out));
    for (int k : graph_.node_params(i))
      a.params.push_back(const_cast<float*>(p.params) +
                         graph_.params()[static_cast<size_t>(k)].offset);
    for (int k : graph_.node_states(i))
      a.state.push_back(p.state + graph_.states()[static_cast<size_t>(k)].offset);
    graph_.layer(i).forward(a);
  }
}

bool Executor::node_training(const Pass& p, int i) const {
  if (graph_.node(i).training == 0) return false;  // called with training = FALSE
  if (!p.training || p.frozen == nullptr) return p.training;
  return !(p.frozen[graph_.owner(i)] != 0 && graph_.layer(i).frozen_runs_inference());
}

void Executor::backward(const Pass& p, float* grads) {
  const int64_t rows = p.rows;
  SoloContext solo;
  ReplicaContext& ctx = p.ctx != nullptr ? *p.ctx : solo;
  std::fill(grad_written_.begin(), grad_written_.end(), 0);
  std::fill(param_grad_written_.begin(), param_grad_written_.end(), 0);
  for (int o : graph_.outputs()) grad_written_[static_cast<size_t>(o)] = 1;
  for (int i = graph_.size() - 1; i >= 0; --i) {
    if (p.grad_ready != nullptr) p.grad_ready->nodes_done(i + 1);  // i14-overlap
    const GraphNode& nd = graph_.node(i);
    if (nd.inputs.empty() || !graph_.needs_grad(i)) continue;
    NodeBuffers& b = buf_[static_cast<size_t>(i)];
    const int owner = graph_.owner(i);
    // Whether this node's variables already hold another call's gradient.
    const bool accumulate_params =
        param_grad_written_[static_cast<size_t>(owner)] != 0 && !graph_.node_params(i).empty();
    if (!grad_written_[static_cast<size_t>(i)]) {
      // No consumer reached this node (it is dead code): its variables get
      // zero gradients, unless another call of its layer gave them some.
      if (!accumulate_params) {
        for (int k : graph_.node_params(i)) {
          const auto& prm = graph_.params()[static_cast<size_t>(k)];
          be_.fill(prm.size, grads + prm.offset, 0.0f);
        }
        param_grad_written_[static_cast<size_t>(owner)] = 1;
      }
      continue;
    }
    BackwardArgs a{be_,
                   rows,
                   p.global_rows,
                   node_training(p, i),
                   {},
                   graph_.in_shapes(i),
                   at(b.out),
                   at(b.grad),
                   {},
                   {},
                   {},
                   {},
                   at(b.aux),
                   at(b.work),
                   ctx,
                   logits_grad_[static_cast<size_t>(i)] != 0};
    // Inputs whose gradient already holds a consumer's part (or that an
    // earlier slot of this node writes): their layer writes into a scratch
    // slot of their own, added afterwards.
    std::vector<int> accumulate;
    std::vector<float*> slot_of(nd.inputs.size(), nullptr);
    for (size_t s = 0; s < nd.inputs.size(); ++s) {
      const int j = nd.inputs[s];
      a.in.push_back(at(buf_[static_cast<size_t>(j)].out));
      float* dst = nullptr;
      if (graph_.needs_grad(j)) {
        const bool earlier = std::find(nd.inputs.begin(), nd.inputs.begin() + static_cast<long>(s),
                                       j) != nd.inputs.begin() + static_cast<long>(s);
        if (grad_written_[static_cast<size_t>(j)] || earlier) {
          dst = at(scratch_) + static_cast<int64_t>(accumulate.size()) * scratch_slot_;
          slot_of[s] = dst;
          accumulate.push_back(static_cast<int>(s));
        } else {
          dst = at(buf_[static_cast<size_t>(j)].grad);
        }
      }
      a.d_in.push_back(dst);
    }
    // A later call of a shared layer writes its variables' gradients to the
    // scratch region (packed, aligned as in the flat buffer), added below.
    int64_t packed = 0;
    for (int k : graph_.node_params(i)) {
      const auto& prm = graph_.params()[static_cast<size_t>(k)];
      a.params.push_back(p.params + prm.offset);
      a.grads.push_back(accumulate_params ? at(param_scratch_) + packed : grads + prm.offset);
      packed += align_floats(prm.size);
    }
    for (int k : graph_.node_states(i))
      a.state.push_back(p.state + graph_.states()[static_cast<size_t>(k)].offset);
    const RegularizerSpec& act = activity_[static_cast<size_t>(i)];
    if (act.kind != RegularizerSpec::Kind::none && rows > 0)
      be_.l1_l2_penalty(rows * graph_.out_shape(i).numel(), at(b.out), act.l1, act.l2, 0.0, nullptr,
                        1.0f / static_cast<float>(p.global_rows), at(b.grad));
    graph_.layer(i).backward(a);
    if (accumulate_params) {
      packed = 0;
      for (int k : graph_.node_params(i)) {
        const auto& prm = graph_.params()[static_cast<size_t>(k)];
        be_.axpy(prm.size, 1.0f, at(param_scratch_) + packed, grads + prm.offset);
        packed += align_floats(prm.size);
      }
    }
    param_grad_written_[static_cast<size_t>(owner)] = 1;
    for (size_t s = 0; s < nd.inputs.size(); ++s) {
      const int j = nd.inputs[s];
      if (!graph_.needs_grad(j)) continue;
      if (slot_of[s] != nullptr)
        be_.axpy(rows * graph_.out_shape(j).numel(), 1.0f, slot_of[s],
                 at(buf_[static_cast<size_t>(j)].grad));
      grad_written_[static_cast<size_t>(j)] = 1;
    }
  }
  if (p.grad_ready != nullptr) p.grad_ready->nodes_done(0);  // i14-overlap
}

}  // namespace mr
