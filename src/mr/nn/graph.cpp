#include "nn/graph.h"

#include <algorithm>

#include "core/error.h"

namespace mr {

Graph::Graph(std::vector<GraphNode> nodes, std::vector<int> inputs, std::vector<int> outputs)
    : nodes_(std::move(nodes)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  const int n = size();
  MR_CHECK(n > 0, value, "a model needs at least one layer");
  MR_CHECK(!inputs_.empty(), value, "a model needs at least one input");
  MR_CHECK(!outputs_.empty(), value, "a model needs at least one output");
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
  for (int i : inputs_) {
    MR_CHECK(i >= 0 && i < n && nodes_[static_cast<size_t>(i)].inputs.empty(), value,
             "model input ", i, " is not an input node");
  }
  for (int o : outputs_) MR_CHECK(o >= 0 && o < n, value, "model output ", o, " is not a node");
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
