// Glue for traced graphs (issue 15, docs/traced-graphs.md §2): the R side
// records a graph's JSON while tracing; these functions ask the core for its
// shapes (every shape rule is the core's), and run it forward and backward on
// a CPU backend -- the eager op_* functions on R arrays and the gradient
// checks of the tests. Values cross as R arrays (column-major, any rank) and
// are walked into the core's row-major float32 buffers here.
#include <Rcpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/json.h"
#include "nn/traced_graph.h"
#include "r_glue.h"

using mr_glue::guarded;

namespace {

mr::Json parse_graph(const std::string& graph_json) {
  return mr::parse_json(graph_json, "traced graph");
}

// A value's shape for R: integer dims, NA for the batch axis.
Rcpp::List shape_to_r(const mr::TracedGraph::ValueShape& s) {
  Rcpp::IntegerVector dims(s.dims.size());
  for (size_t j = 0; j < s.dims.size(); ++j)
    dims[j] = (s.batched && j == 0) ? NA_INTEGER : static_cast<int>(s.dims[j]);
  return Rcpp::List::create(Rcpp::Named("shape") = dims, Rcpp::Named("batched") = s.batched);
}

// Full dims of a value at `rows` rows.
std::vector<int64_t> dims_at(const mr::TracedGraph::ValueShape& s, int64_t rows) {
  std::vector<int64_t> d = s.dims;
  if (s.batched) d[0] = rows;
  return d;
}

int64_t count(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t j = 0; j < d.size(); ++j) s += (j ? ", " : "") + std::to_string(d[j]);
  return s + ")";
}

// The R arrays of a graph's inputs and weights, checked against the graph's
// shapes and converted to row-major floats; rows from the batched inputs
// (all must agree; 0 when none is batched: then no value is batched).
struct Values {
  int64_t rows = 0;
  std::vector<std::vector<float>> inputs, weights;
  std::vector<const float*> input_ptrs, weight_ptrs;
};

// R's dims of x as the graph sees them: a vector without dim is 1-D, except
// that a length-1 vector also matches a scalar (shape ()).
bool dims_match(const std::vector<int64_t>& r, const std::vector<int64_t>& want) {
  if (r == want) return true;
  return want.empty() && r.size() == 1 && r[0] == 1;
}

Values read_values(const mr::TracedGraph& g, const Rcpp::List& inputs, const Rcpp::List& weights) {
  MR_CHECK(inputs.size() == g.num_inputs(), value, "traced graph: ", g.num_inputs(),
           " inputs expected, got ", inputs.size());
  MR_CHECK(weights.size() == g.num_weights(), value, "traced graph: ", g.num_weights(),
           " weights expected, got ", weights.size());
  Values v;
  bool have_rows = false;
  for (int i = 0; i < g.num_inputs(); ++i) {
    const auto& s = g.input_shape(i);
    if (!s.batched) continue;
    const std::vector<int64_t> d = mr_glue::r_dims(inputs[i]);
    if (have_rows)
      MR_CHECK(d[0] == v.rows, value, "traced graph: batched input ", i, " has ", d[0],
               " rows, input 0 has ", v.rows);
    v.rows = d[0];
    have_rows = true;
  }
  auto read = [&](SEXP x, const mr::TracedGraph::ValueShape& s, const std::string& what) {
    const std::vector<int64_t> want = dims_at(s, v.rows);
    MR_CHECK(dims_match(mr_glue::r_dims(x), want), value, what, ": expected an array of shape ",
             dims_text(want), ", got ", dims_text(mr_glue::r_dims(x)));
    return mr_glue::to_row_major(x, what, false);
  };
  for (int i = 0; i < g.num_inputs(); ++i)
    v.inputs.push_back(read(inputs[i], g.input_shape(i), "input " + std::to_string(i + 1)));
  for (int i = 0; i < g.num_weights(); ++i)
    v.weights.push_back(read(weights[i], g.weight_shape(i), "weight " + std::to_string(i + 1)));
  for (auto& x : v.inputs) v.input_ptrs.push_back(x.data());
  for (auto& x : v.weights) v.weight_ptrs.push_back(x.data());
  return v;
}

// One forward pass of g on a CPU backend: the outputs and the aux the
// backward pass needs.
struct Forward {
  std::vector<float> constants, aux;
  std::vector<std::vector<float>> outputs;
};

Forward run_forward(mr::Backend& be, const mr::TracedGraph& g, const Values& v) {
  Forward f;
  f.constants.resize(static_cast<size_t>(g.constant_floats()));
  if (!f.constants.empty()) g.upload_constants(be, f.constants.data());
  f.aux.resize(static_cast<size_t>(g.aux_floats(v.rows)));
  std::vector<float*> out_ptrs;
  for (int i = 0; i < g.num_outputs(); ++i)
    f.outputs.emplace_back(static_cast<size_t>(g.output_floats(i, v.rows)));
  for (auto& o : f.outputs) out_ptrs.push_back(o.data());
  g.forward(be, v.rows, v.input_ptrs.data(), v.weight_ptrs.data(),
            f.constants.empty() ? nullptr : f.constants.data(), out_ptrs.data(), f.aux.data());
  return f;
}

}  // namespace

// The per-sample shapes of every node and every output of `graph_json`
// (list(nodes = , outputs = ), each a list of list(shape, batched); the batch
// axis NA), or the core's mr::Error naming the node, its op and its line.
// [[Rcpp::export]]
Rcpp::List cpp_traced_shapes(std::string graph_json) {
  return guarded([&] {
    mr::Json j = parse_graph(graph_json);
    // Every node as an extra output, so that the core's output_shapes()
    // answers for all of them (the graph is otherwise unchanged).
    const size_t n_out = j.contains("outputs") && j["outputs"].is_array() ? j["outputs"].size() : 0;
    const size_t n_nodes = j.contains("nodes") && j["nodes"].is_array() ? j["nodes"].size() : 0;
    if (j.contains("outputs") && j["outputs"].is_array())
      for (size_t i = 0; i < n_nodes; ++i)
        j["outputs"].push_back(mr::Json::array({"node", static_cast<int64_t>(i)}));
    const mr::TracedGraph g(j);
    const auto shapes = g.output_shapes();
    Rcpp::List outputs(n_out), nodes(n_nodes);
    for (size_t i = 0; i < n_out; ++i) outputs[i] = shape_to_r(shapes[i]);
    for (size_t i = 0; i < n_nodes; ++i) nodes[i] = shape_to_r(shapes[n_out + i]);
    return Rcpp::List::create(Rcpp::Named("nodes") = nodes, Rcpp::Named("outputs") = outputs);
  });
}

// The outputs of `graph_json` run forward on the core's CPU backend in
// float32: `inputs` and `weights` R arrays of the graph's shapes (a batched
// input's first dim is its rows). Returns a list of double arrays.
// [[Rcpp::export]]
Rcpp::List cpp_traced_eval(std::string graph_json, Rcpp::List inputs, Rcpp::List weights) {
  return guarded([&] {
    const mr::TracedGraph g(parse_graph(graph_json));
    const Values v = read_values(g, inputs, weights);
    mr::CpuBackend be(0, 1);
    const Forward f = run_forward(be, g, v);
    const auto shapes = g.output_shapes();
    Rcpp::List out(g.num_outputs());
    for (int i = 0; i < g.num_outputs(); ++i)
      out[i] = mr_glue::from_row_major(f.outputs[static_cast<size_t>(i)].data(),
                                       dims_at(shapes[static_cast<size_t>(i)], v.rows));
    return out;
  });
}

// The gradients of sum_i <output_i, d_outputs[[i]]> with respect to every
// input and weight of `graph_json` (list(inputs = , weights = ) of double
// arrays of their shapes), after a forward pass on the same values.
// [[Rcpp::export]]
Rcpp::List cpp_traced_vjp(std::string graph_json, Rcpp::List inputs, Rcpp::List weights,
                          Rcpp::List d_outputs) {
  return guarded([&] {
    const mr::TracedGraph g(parse_graph(graph_json));
    const Values v = read_values(g, inputs, weights);
    MR_CHECK(d_outputs.size() == g.num_outputs(), value, "traced graph: ", g.num_outputs(),
             " output gradients expected, got ", d_outputs.size());
    const auto shapes = g.output_shapes();
    std::vector<std::vector<float>> dy;
    std::vector<const float*> dy_ptrs;
    for (int i = 0; i < g.num_outputs(); ++i) {
      const std::vector<int64_t> want = dims_at(shapes[static_cast<size_t>(i)], v.rows);
      MR_CHECK(dims_match(mr_glue::r_dims(d_outputs[i]), want), value, "output gradient ", i + 1,
               ": expected an array of shape ", dims_text(want), ", got ",
               dims_text(mr_glue::r_dims(d_outputs[i])));
      dy.push_back(mr_glue::to_row_major(d_outputs[i], "output gradient", false));
    }
    for (auto& d : dy) dy_ptrs.push_back(d.data());
    mr::CpuBackend be(0, 1);
    Forward f = run_forward(be, g, v);
    std::vector<float> scratch(static_cast<size_t>(g.scratch_floats(v.rows)));
    std::vector<std::vector<float>> dx, dw;
    std::vector<float*> dx_ptrs, dw_ptrs;
    for (int i = 0; i < g.num_inputs(); ++i)
      dx.emplace_back(static_cast<size_t>(count(dims_at(g.input_shape(i), v.rows))));
    for (int i = 0; i < g.num_weights(); ++i)
      dw.emplace_back(static_cast<size_t>(count(g.weight_shape(i).dims)));
    for (auto& d : dx) dx_ptrs.push_back(d.data());
    for (auto& d : dw) dw_ptrs.push_back(d.data());
    g.backward(be, v.rows, v.input_ptrs.data(), v.weight_ptrs.data(),
               f.constants.empty() ? nullptr : f.constants.data(), f.aux.data(), scratch.data(),
               dy_ptrs.data(), dx_ptrs.data(), dw_ptrs.data());
    Rcpp::List gx(g.num_inputs()), gw(g.num_weights());
    for (int i = 0; i < g.num_inputs(); ++i)
      gx[i] = mr_glue::from_row_major(dx[static_cast<size_t>(i)].data(),
                                      dims_at(g.input_shape(i), v.rows));
    for (int i = 0; i < g.num_weights(); ++i)
      gw[i] = mr_glue::from_row_major(dw[static_cast<size_t>(i)].data(), g.weight_shape(i).dims);
    return Rcpp::List::create(Rcpp::Named("inputs") = gx, Rcpp::Named("weights") = gw);
  });
}

// An R list (a graph as trace_graph() builds it) as JSON text (r_glue.h's
// R -> JSON rules; non-finite numbers are an error: strict JSON has none).
// [[Rcpp::export]]
std::string cpp_traced_json(SEXP graph) {
  return guarded([&] { return mr::to_json(mr_glue::json_from_r(graph)); });
}
