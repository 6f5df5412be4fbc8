#include "train/traced_objectives.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "nn/layers/traced_layer.h"
#include "nn/traced_objective.h"
#include "train/step.h"

namespace mr {

namespace {
DeviceBuffer allocate_floats(Backend& be, int64_t floats) {
  // Never a zero-byte request: every buffer is a valid pointer.
  return be.allocate(static_cast<size_t>(std::max<int64_t>(floats, 1)) * sizeof(float));
}
}  // namespace

void TracedObjectives::configure(const CompileConfig& c, const Graph& graph) {
  // Checks first: a failing compile() leaves the previous configuration.
  std::vector<Entry> entries;
  auto add = [&](const std::shared_ptr<const TracedGraph>& g, const Shape& pred,
                 const std::string& who, bool backward) {
    if (g == nullptr) return;
    check_traced_objective(*g, pred, who);
    for (Entry& e : entries)
      if (e.graph == g) {
        e.backward = e.backward || backward;
        return;
      }
    Entry e;
    e.graph = g;
    e.batched = g->output_shapes()[0].batched;
    e.width = g->output_floats(0, 1);
    e.backward = backward;
    entries.push_back(std::move(e));
  };
  for (size_t k = 0; k < c.outputs.size() && k < graph.outputs().size(); ++k) {
    const OutputConfig& o = c.outputs[k];
    const Shape& pred = graph.out_shape(graph.outputs()[k]);
    add(o.loss.graph, pred, "loss '" + o.loss.name + "'", true);
    for (const MetricConfig& m : o.metrics) add(m.graph, pred, "metric '" + m.name + "'", false);
  }
  bool traced_layer = false;
  for (int i = 0; i < graph.size(); ++i)
    traced_layer = traced_layer || is_traced_layer(graph.layer(i));
  // The constants, once per replica, outside the steps.
  for (Entry& e : entries)
    for (int r = 0; r < replicas_.size(); ++r) {
      Backend& be = replicas_.backend(r);
      e.constants.push_back(allocate_floats(be, e.graph->constant_floats()));
      e.graph->upload_constants(be, static_cast<float*>(e.constants.back().get()));
    }
  entries_ = std::move(entries);
  present_ = traced_layer || !entries_.empty();
  bufs_.clear();
  capacity_ = 0;  // the next reserve() sizes the buffers for these graphs
}

void TracedObjectives::reserve(int64_t rows) {
  if (entries_.empty() || rows <= capacity_) return;
  int64_t aux = 0, scratch = 0, out = 0;
  for (const Entry& e : entries_) {
    aux = std::max(aux, e.graph->aux_floats(rows));
    if (e.backward) scratch = std::max(scratch, e.graph->scratch_floats(rows));
    out = std::max(out, e.graph->output_floats(0, rows));
  }
  bufs_.clear();
  for (int r = 0; r < replicas_.size(); ++r) {
    Backend& be = replicas_.backend(r);
    Buffers b;
    b.aux = allocate_floats(be, aux);
    b.scratch = allocate_floats(be, scratch);
    b.out = allocate_floats(be, out);
    b.dout = allocate_floats(be, out);
    bufs_.push_back(std::move(b));
  }
  capacity_ = rows;
}

const TracedObjectives::Entry& TracedObjectives::entry(const TracedGraph* g) const {
  for (const Entry& e : entries_)
    if (e.graph.get() == g) return e;
  fail(ErrorKind::internal, "a traced loss or metric that compile() did not configure");
}

float* TracedObjectives::run_forward(int rank, const Entry& e, int64_t rows,
                                     const float* const* ins) {
  MR_CHECK(rows <= capacity_, internal, "a slice of ", rows,
           " rows exceeds the traced objectives' buffers of ", capacity_);
  Buffers& b = bufs_[static_cast<size_t>(rank)];
  auto* out = static_cast<float*>(b.out.get());
  float* const outs[1] = {out};
  e.graph->forward(replicas_.backend(rank), rows, ins, nullptr,
                   static_cast<const float*>(e.constants[static_cast<size_t>(rank)].get()), outs,
                   static_cast<float*>(b.aux.get()));
  return out;
}

void TracedObjectives::loss(int rank, const LossConfig& l, int64_t rows, const float* pred,
                            const float* target, const float* sw, float grad_scale, float* dpred,
                            double* sum) {
  const Entry& e = entry(l.graph.get());
  Backend& be = replicas_.backend(rank);
  Buffers& b = bufs_[static_cast<size_t>(rank)];
  const float* const ins[2] = {target, pred};  // Keras' order: (y_true, y_pred)
  const float* out = run_forward(rank, e, rows, ins);
  auto* dout = dpred != nullptr ? static_cast<float*>(b.dout.get()) : nullptr;
  be.traced_reduce(e.batched, rows, e.width, out, sw, grad_scale, dout, sum, nullptr);
  if (dpred == nullptr) return;
  // The VJP with respect to y_pred only: y_true's gradient is not wanted.
  const float* const douts[1] = {dout};
  float* const dins[2] = {nullptr, dpred};
  e.graph->backward(be, rows, ins, nullptr,
                    static_cast<const float*>(e.constants[static_cast<size_t>(rank)].get()),
                    static_cast<const float*>(b.aux.get()), static_cast<float*>(b.scratch.get()),
                    douts, dins, nullptr);
}

void TracedObjectives::metric(int rank, const MetricConfig& m, int64_t rows, const float* pred,
                              const float* target, const float* sw, double* state) {
  const Entry& e = entry(m.graph.get());
  const float* const ins[2] = {target, pred};
  const float* out = run_forward(rank, e, rows, ins);
  replicas_.backend(rank).traced_reduce(e.batched, rows, e.width, out, sw, 0.0f, nullptr, state,
                                        state + 1);
}

}  // namespace mr
