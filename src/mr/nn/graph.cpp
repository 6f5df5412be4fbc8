#include "nn/graph.h"

#include <algorithm>

#include "core/error.h"

namespace mr {

namespace {
// The one -1 axis of an input's declared shape, or -1 when it has none.
int find_variable_axis(const Shape& s, const std::string& name) {
  int axis = -1;
  for (int d = 0; d < s.rank(); ++d) {
    if (s[d] >= 0) continue;
    if (axis >= 0)
      fail(ErrorKind::value, "input '", name, "' has more than one variable-length axis ",
           s.str_with_batch(), "; one per input is supported (give the other axes a size)");
    axis = d;
  }
  return axis;
}
Shape with_dim(const Shape& s, int axis, int64_t value) {
  std::vector<int64_t> d = s.dims();
  d.at(static_cast<size_t>(axis)) = value;
  return Shape(d);
}
// Marks -1 the dims of `a` that differ in `b` (two probes of one shape).
Shape mark_variable(const Shape& a, const Shape& b) {
  std::vector<int64_t> d = a.dims();
  for (size_t i = 0; i < d.size() && i < b.dims().size(); ++i)
    if (d[i] != b.dims()[i]) d[i] = -1;
  return Shape(d);
}
}  // namespace

Graph::Graph(std::vector<GraphNode> nodes, std::vector<int> inputs, std::vector<int> outputs,
             std::vector<int64_t> lengths)
    : nodes_(std::move(nodes)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  const int n = size();
  MR_CHECK(n > 0, value, "a model needs at least one layer");
  MR_CHECK(!inputs_.empty(), value, "a model needs at least one input");
  MR_CHECK(!outputs_.empty(), value, "a model needs at least one output");
  MR_CHECK(lengths.empty() || lengths.size() == inputs_.size(), internal, "graph bound to ",
           lengths.size(), " lengths for ", inputs_.size(), " inputs");
  std::vector<int> input_of(static_cast<size_t>(n), -1);  // node -> model input
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const int i = inputs_[k];
    MR_CHECK(i >= 0 && i < n && nodes_[static_cast<size_t>(i)].inputs.empty(), value,
             "model input ", i, " is not an input node");
    input_of[static_cast<size_t>(i)] = static_cast<int>(k);
  }
  variable_axis_.assign(inputs_.size(), -1);
  lengths_.assign(inputs_.size(), -1);
  out_shapes_.resize(static_cast<size_t>(n));
  node_params_.resize(static_cast<size_t>(n));
  node_states_.resize(static_cast<size_t>(n));
  node_weights_.resize(static_cast<size_t>(n));
  aux_per_row_.assign(static_cast<size_t>(n), 0);
  work_floats_.assign(static_cast<size_t>(n), 0);
  needs_grad_.assign(static_cast<size_t>(n), 0);
  consumers_.assign(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    const GraphNode& nd = nodes_[static_cast<size_t>(i)];
    if (nd.shares >= 0) {
      MR_CHECK(nd.shares < i && nodes_[static_cast<size_t>(nd.shares)].shares < 0 &&
                   nodes_[static_cast<size_t>(nd.shares)].layer != nullptr && nd.layer == nullptr,
               internal, "node ", i, " shares node ", nd.shares,
               ", which is not an earlier node owning a layer");
    } else {
      MR_CHECK(nd.layer != nullptr, internal, "node ", i, " has no layer");
    }
    for (int j : nd.inputs) {
      MR_CHECK(j >= 0 && j < i, value, "node '", nd.name, "' takes input ", j,
               ", which is not an earlier node (the graph must be acyclic and in order)");
      consumers_[static_cast<size_t>(j)]++;
    }
    const Layer& layer = this->layer(i);
    const std::vector<Shape> in = in_shapes(i);
    out_shapes_[static_cast<size_t>(i)] = layer.output_shape(in);
    if (const int k = input_of[static_cast<size_t>(i)]; k >= 0) {
      // A variable-length input takes its bound length (or the probe's).
      const Shape& declared = out_shapes_[static_cast<size_t>(i)];
      const int axis = find_variable_axis(declared, nd.name);
      variable_axis_[static_cast<size_t>(k)] = axis;
      if (axis >= 0) {
        const int64_t len = lengths.empty() ? kProbeLength : lengths[static_cast<size_t>(k)];
        MR_CHECK(len >= 1, shape, "input '", nd.name, "' of shape ", declared.str_with_batch(),
                 " needs a length of at least 1 on its variable axis, got ", len);
        out_shapes_[static_cast<size_t>(i)] = with_dim(declared, axis, len);
        lengths_[static_cast<size_t>(k)] = len;
        variable_ = true;
      }
    }
    aux_per_row_[static_cast<size_t>(i)] = layer.aux_per_row(in);
    work_floats_[static_cast<size_t>(i)] = layer.work_floats(in);
    bool upstream = false;
    for (int j : nd.inputs) upstream = upstream || needs_grad_[static_cast<size_t>(j)];
    if (nd.shares >= 0) {
      // One set of variables: this call's must be the owner's, shape for shape.
      const int o = nd.shares;
      const std::vector<WeightSpec> mine = layer.weights(in);
      const std::vector<WeightRef>& theirs = node_weights_[static_cast<size_t>(o)];
      bool same = mine.size() == theirs.size();
      for (size_t k = 0; same && k < mine.size(); ++k)
        same = mine[k].shape.dims() == weight(theirs[k]).shape.dims();
      if (!same) {
        std::string got, want;
        for (const Shape& s : in) got += (got.empty() ? "" : ", ") + s.str_with_batch();
        for (const Shape& s : in_shapes(o)) want += (want.empty() ? "" : ", ") + s.str_with_batch();
        fail(ErrorKind::shape, "layer '", nodes_[static_cast<size_t>(o)].name,
             "' is shared: it was first called on ", want, " and is called again on ", got,
             ", which needs other weights (a shared layer has one set of weights)");
      }
      node_params_[static_cast<size_t>(i)] = node_params_[static_cast<size_t>(o)];
      node_states_[static_cast<size_t>(i)] = node_states_[static_cast<size_t>(o)];
      if (!node_params_[static_cast<size_t>(i)].empty()) upstream = true;
      needs_grad_[static_cast<size_t>(i)] = upstream ? 1 : 0;
      continue;
    }
    for (WeightSpec& w : layer.weights(in)) {
      const int64_t numel = w.shape.numel();
      auto& list = w.trainable ? params_ : states_;
      auto& floats = w.trainable ? param_floats_ : state_floats_;
      const int index = static_cast<int>(list.size());
      (w.trainable ? node_params_ : node_states_)[static_cast<size_t>(i)].push_back(index);
      node_weights_[static_cast<size_t>(i)].push_back({w.trainable, index});
      list.push_back({i, w.name, w.shape, w.init, floats, numel, w.trainable, w.options});
      floats += align_floats(numel);
      if (w.trainable) upstream = true;
    }
    needs_grad_[static_cast<size_t>(i)] = upstream ? 1 : 0;
  }
  for (int o : outputs_) MR_CHECK(o >= 0 && o < n, value, "model output ", o, " is not a node");
  if (variable_ && lengths.empty()) {
    // The graph of the declared shapes: a second probe says which dims
    // follow the lengths and that no variable does.
    std::vector<int64_t> second(inputs_.size(), -1);
    for (size_t k = 0; k < second.size(); ++k)
      if (variable_axis_[k] >= 0) second[k] = kProbeLength2;
    const Graph probe(nodes_, inputs_, outputs_, second);
    check_same_variables(probe);
    symbolic_.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      symbolic_[static_cast<size_t>(i)] =
          mark_variable(out_shapes_[static_cast<size_t>(i)], probe.out_shape(i));
  }
}

void Graph::check_same_variables(const Graph& other) const {
  auto same = [&](const std::vector<Param>& a, const std::vector<Param>& b, const char* what) {
    MR_CHECK(a.size() == b.size(), shape, "the model's ", what,
             " depend on the length of its variable-length input");
    for (size_t j = 0; j < a.size(); ++j) {
      if (a[j].shape == b[j].shape && a[j].offset == b[j].offset) continue;
      fail(ErrorKind::shape, "layer '", nodes_[static_cast<size_t>(a[j].node)].name,
           "' needs a weight '", a[j].name, "' whose shape depends on the length of the ",
           "variable-length input (", a[j].shape.str(), " at one length, ", b[j].shape.str(),
           " at another): a layer after a variable-length axis must not take that axis as ",
           "features (e.g. Flatten then Dense); pool over it (layer_global_average_pooling_1d) ",
           "or give the input a fixed length");
    }
  };
  same(params_, other.params_, "weights");
  same(states_, other.states_, "non-trainable variables");
}

std::shared_ptr<const Graph> Graph::bind(const std::vector<int64_t>& lengths) const {
  auto g = std::make_shared<const Graph>(nodes_, inputs_, outputs_, lengths);
  check_same_variables(*g);
  return g;
}

Shape symbolic_output_shape(const Layer& layer, const std::vector<Shape>& in,
                            const std::string& name, std::vector<WeightSpec>* weights) {
  bool variable = false;
  for (const Shape& s : in)
    for (int64_t d : s.dims()) variable = variable || d < 0;
  if (!variable) {
    if (weights != nullptr) *weights = layer.weights(in);
    return layer.output_shape(in);
  }
  auto probe = [&](int64_t len) {
    std::vector<Shape> bound;
    for (const Shape& s : in) {
      std::vector<int64_t> d = s.dims();
      for (int64_t& v : d)
        if (v < 0) v = len;
      bound.emplace_back(d);
    }
    return bound;
  };
  const std::vector<Shape> a = probe(Graph::kProbeLength), b = probe(Graph::kProbeLength2);
  const Shape out_a = layer.output_shape(a), out_b = layer.output_shape(b);
  std::vector<WeightSpec> wa = layer.weights(a);
  const std::vector<WeightSpec> wb = layer.weights(b);
  for (size_t j = 0; j < wa.size() && j < wb.size(); ++j)
    if (wa[j].shape != wb[j].shape)
      fail(ErrorKind::shape, "layer '", name, "' needs a weight '", wa[j].name,
           "' whose shape depends on the length of a variable-length axis: a layer after a ",
           "variable-length axis must not take that axis as features (e.g. Flatten then ",
           "Dense); pool over it (layer_global_average_pooling_1d) or give the input a fixed "
           "length");
  if (weights != nullptr) *weights = std::move(wa);
  return mark_variable(out_a, out_b);
}

std::vector<Shape> Graph::in_shapes(int i) const {
  std::vector<Shape> s;
  for (int j : node(i).inputs) s.push_back(out_shapes_.at(static_cast<size_t>(j)));
  return s;
}

int64_t Graph::param_floats(int i) const {
  int64_t n = 0;
  for (int k : node_params(i)) n += align_floats(params_.at(static_cast<size_t>(k)).size);
  return n;
}

int64_t Graph::param_count() const {
  int64_t n = 0;
  for (const Param& p : params_) n += p.size;
  return n;
}

int64_t Graph::state_count() const {
  int64_t n = 0;
  for (const Param& p : states_) n += p.size;
  return n;
}

namespace {
std::vector<float> initial_values(const std::vector<Graph::Param>& vars, int64_t floats) {
  std::vector<float> flat(static_cast<size_t>(floats), 0.0f), values;
  for (size_t k = 0; k < vars.size(); ++k) {
    const Graph::Param& p = vars[k];
    // The stream number separates the variables of one seed: node and position.
    initialize(p.init, p.shape, static_cast<uint32_t>(p.node * 8 + (k & 7)), values);
    std::copy(values.begin(), values.end(), flat.begin() + p.offset);
  }
  return flat;
}
}  // namespace

std::vector<float> Graph::initial_params() const { return initial_values(params_, param_floats_); }

std::vector<float> Graph::initial_state() const { return initial_values(states_, state_floats_); }

}  // namespace mr
