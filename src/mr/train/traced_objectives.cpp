#include "train/traced_objectives.h"

#include <algorithm>
#include <string>

#include "core/backend_registry.h"
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

// Floats of an unbatched value.
int64_t value_floats(const TracedGraph::ValueShape& s) {
  int64_t n = 1;
  for (int64_t d : s.dims) n *= d;
  return n;
}

// A Metric() class's graphs (nn/metric.h): update_state()'s one output the
// unbatched increments of its state_floats, result()'s one unbatched input
// of the variables and one value out.
void check_state_metric(const MetricConfig& m, const std::string& who) {
  MR_CHECK(m.graph != nullptr && m.result_graph != nullptr, value, who,
           ": a Metric class needs the graphs of its update_state() and result()");
  MR_CHECK(m.state_floats >= 1, value, who, ": its variables hold no values");
  const TracedGraph::ValueShape inc = m.graph->output_shapes()[0];
  MR_CHECK(!inc.batched && value_floats(inc) == m.state_floats, shape, who,
           ": update_state() must give one increment per variable value (", m.state_floats,
           " in all), not a value of shape with batch axis ", inc.batched ? "kept" : "reduced",
           " and ", inc.batched ? m.graph->output_floats(0, 1) : value_floats(inc), " values");
  const TracedGraph& r = *m.result_graph;
  MR_CHECK(r.num_inputs() == 1 && r.num_weights() == 0 && r.num_outputs() == 1, value, who,
           ": result() must be a graph of the variables with one output");
  MR_CHECK(!r.input_shape(0).batched && value_floats(r.input_shape(0)) == m.state_floats, shape,
           who, ": result()'s graph must take the ", m.state_floats, " values of the variables");
  const TracedGraph::ValueShape out = r.output_shapes()[0];
  MR_CHECK(!out.batched && value_floats(out) == 1, shape, who,
           ": result() must return one number (a scalar), not ", value_floats(out), " values");
  MR_CHECK(static_cast<int64_t>(m.reset_values.size()) == m.state_floats, value, who,
           ": reset_state() gives ", m.reset_values.size(), " values for ", m.state_floats);
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
  std::vector<ResultRun> results;
  for (size_t k = 0; k < c.outputs.size() && k < graph.outputs().size(); ++k) {
    const OutputConfig& o = c.outputs[k];
    const Shape& pred = graph.out_shape(graph.outputs()[k]);
    add(o.loss.graph, pred, "loss '" + o.loss.name + "'", true);
    for (const MetricConfig& m : o.metrics) {
      const std::string who = "metric '" + m.name + "'";
      add(m.graph, pred, who, false);
      if (m.kind != MetricKind::state_metric) continue;
      check_state_metric(m, who);
      ResultRun run;
      run.graph = m.result_graph;
      results.push_back(std::move(run));
    }
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
  // The results' graphs on a host CPU backend of one thread, with buffers
  // for one run each.
  if (!results.empty() && host_ == nullptr) host_ = create_backend(DeviceKind::cpu, 0, -1, 1);
  for (ResultRun& r : results) {
    r.constants = allocate_floats(*host_, r.graph->constant_floats());
    r.graph->upload_constants(*host_, static_cast<float*>(r.constants.get()));
    r.in = allocate_floats(*host_, value_floats(r.graph->input_shape(0)));
    r.aux = allocate_floats(*host_, r.graph->aux_floats(1));
    r.out = allocate_floats(*host_, 1);
  }
  results_ = std::move(results);
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

void TracedObjectives::state_metric(int rank, const MetricConfig& m, int64_t rows,
                                    const float* pred, const float* target, double* state) {
  if (rows == 0) return;
  const Entry& e = entry(m.graph.get());
  const float* const ins[2] = {target, pred};
  const float* out = run_forward(rank, e, rows, ins);
  // Each increment into its double (traced_reduce of one value of one row
  // adds it as it is; the device's doubles, no download).
  Backend& be = replicas_.backend(rank);
  for (int64_t j = 0; j < m.state_floats; ++j)
    be.traced_reduce(false, 1, 1, out + j, nullptr, 0.0f, nullptr, state + j, nullptr);
}

double TracedObjectives::state_metric_result(const MetricConfig& m, const double* state) const {
  for (const ResultRun& r : results_) {
    if (r.graph != m.result_graph) continue;
    result_in_.resize(static_cast<size_t>(m.state_floats));
    for (size_t j = 0; j < result_in_.size(); ++j)
      result_in_[j] = static_cast<float>(static_cast<double>(m.reset_values[j]) + state[j]);
    host_->upload(r.in.get(), result_in_.data(), result_in_.size() * sizeof(float));
    const float* const ins[1] = {static_cast<const float*>(r.in.get())};
    float* const outs[1] = {static_cast<float*>(r.out.get())};
    r.graph->forward(*host_, 1, ins, nullptr, static_cast<const float*>(r.constants.get()), outs,
                     static_cast<float*>(r.aux.get()));
    float v = 0.0f;
    host_->download(&v, r.out.get(), sizeof v);
    return static_cast<double>(v);
  }
  fail(ErrorKind::internal, "metric '", m.name, "': a Metric class compile() did not configure");
}

}  // namespace mr
