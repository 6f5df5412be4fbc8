// The model graph: a DAG of layer applications (nodes) in topological order,
// with any number of input and output nodes. It is immutable once built and
// shared by all replicas; it also fixes the layout of the flat buffers, so
// every replica (and every saved file) agrees on where each variable lives:
// trainable variables in the parameter buffer (gradients and optimizer slots
// share its layout), non-trainable ones (moving statistics) in the state
// buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/shape.h"
#include "nn/layer.h"

namespace mr {

// A node applies a layer to the outputs of earlier nodes. A layer called at
// several places of a model (a shared layer) is one layer with one set of
// variables: its first node owns it (`layer` set, `shares` = -1); every later
// call is a node with `shares` = the owner's index and no layer of its own.
struct GraphNode {
  std::string name;
  // Immutable once the graph is built; the graphs a variable-length model
  // binds to each batch's lengths (Graph::bind) share it.
  std::shared_ptr<const Layer> layer;
  std::vector<int> inputs;  // indices of earlier nodes
  int shares = -1;          // index of the earlier node whose layer and variables it uses
  // keras3's `layer(x, training = FALSE)` / `model(x, training = FALSE)`:
  // 0 runs this node in inference mode in every pass (a fine-tuned base
  // model's BatchNormalization and Dropout); -1 follows the pass.
  int training = -1;
};

// Variables are aligned to 16 floats (64 bytes) inside the flat buffers so
// that every view starts on a vector boundary; the padding stays zero.
constexpr int64_t kParamAlign = 16;
inline int64_t align_floats(int64_t n) { return (n + kParamAlign - 1) / kParamAlign * kParamAlign; }

class Graph {
 public:
  // A variable, trainable (in params()) or not (in states()).
  struct Param {
    int node;
    std::string name;  // "kernel", "bias", "moving_mean"
    Shape shape;
    Initializer init;
    int64_t offset;  // in floats, into its flat buffer
    int64_t size;    // shape.numel()
    bool trainable;
    WeightOptions options;  // its regularizer and constraint (Keras configs)
  };
  // One of a node's variables in the layer's (Keras') order.
  struct WeightRef {
    bool trainable;
    int index;  // into params() or states()
  };

  // `lengths`: one per model input, the length its variable axis takes in
  // this graph (-1 for an input of fixed shape); empty binds every variable
  // axis to kProbeLength (the graph R builds: see variable()).
  Graph(std::vector<GraphNode> nodes, std::vector<int> inputs, std::vector<int> outputs,
        std::vector<int64_t> lengths = {});

  // ---- variable-length inputs (keras_input(shape = c(NA, ...))) ----
  // An input whose declared shape has a -1 axis takes batches of any length
  // there, each batch one length. The graph built from the declared shapes
  // binds those axes to kProbeLength: its variables and parameter layout are
  // every length's (checked against a second probe, kProbeLength2: a layer
  // whose weights would depend on the length is a shape error naming it),
  // and symbolic_out_shape() marks -1 the dims that follow the lengths. The
  // step runs each batch on bind(its lengths): the same layers and layout,
  // the shapes of that length.
  static constexpr int64_t kProbeLength = 1024;
  static constexpr int64_t kProbeLength2 = 1536;
  bool variable() const { return variable_; }
  // Input k's variable axis (in the per-sample shape), or -1 when it has none.
  int variable_axis(int k) const { return variable_axis_.at(static_cast<size_t>(k)); }
  // The lengths this graph was bound to (-1 for fixed inputs).
  const std::vector<int64_t>& lengths() const { return lengths_; }
  // Node i's output shape with -1 where it depends on a variable length
  // (out_shape(i) for a graph without variable inputs).
  const Shape& symbolic_out_shape(int i) const {
    return symbolic_.empty() ? out_shape(i) : symbolic_.at(static_cast<size_t>(i));
  }
  // This graph's layers and layout at `lengths` (one per model input, -1 for
  // fixed inputs); throws (shape) when a layer cannot take them.
  std::shared_ptr<const Graph> bind(const std::vector<int64_t>& lengths) const;

  int size() const { return static_cast<int>(nodes_.size()); }
  const GraphNode& node(int i) const { return nodes_.at(static_cast<size_t>(i)); }
  // The layer node i applies (its owner's, for a shared layer's later calls).
  const Layer& layer(int i) const { return *node(owner(i)).layer; }
  // The node that owns node i's layer and variables (i itself unless shared).
  int owner(int i) const { return node(i).shares >= 0 ? node(i).shares : i; }
  // Floats of the parameter gradients of node i's layer (padding included):
  // what the executor's scratch for a shared layer's later calls must hold.
  int64_t param_floats(int i) const;
  const Shape& out_shape(int i) const { return out_shapes_.at(static_cast<size_t>(i)); }
  std::vector<Shape> in_shapes(int i) const;
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const std::vector<Param>& params() const { return params_; }
  // Indices into params() of node i's variables, in the layer's order (a
  // shared layer's calls all list the owner's).
  const std::vector<int>& node_params(int i) const {
    return node_params_.at(static_cast<size_t>(i));
  }
  int64_t param_floats() const { return param_floats_; }  // flat buffer length, padding included
  int64_t param_count() const;                            // without padding
  const std::vector<Param>& states() const { return states_; }
  const std::vector<int>& node_states(int i) const {
    return node_states_.at(static_cast<size_t>(i));
  }
  // Node i's variables in the layer's order; empty for the later calls of a
  // shared layer, so that walking the nodes lists every variable once.
  const std::vector<WeightRef>& node_weights(int i) const {
    return node_weights_.at(static_cast<size_t>(i));
  }
  const Param& weight(const WeightRef& w) const {
    return (w.trainable ? params_ : states_).at(static_cast<size_t>(w.index));
  }
  int64_t state_floats() const { return state_floats_; }
  int64_t state_count() const;
  int64_t aux_per_row(int i) const { return aux_per_row_.at(static_cast<size_t>(i)); }
  int64_t work_floats(int i) const { return work_floats_.at(static_cast<size_t>(i)); }
  // True when some variable lies upstream of node i (or in it): only then
  // does backward need the gradient of its output.
  bool needs_grad(int i) const { return needs_grad_.at(static_cast<size_t>(i)) != 0; }
  int consumers(int i) const { return consumers_.at(static_cast<size_t>(i)); }
  // Initial values of all trainable / non-trainable variables in their flat layouts.
  std::vector<float> initial_params() const;
  std::vector<float> initial_state() const;

 private:
  std::vector<GraphNode> nodes_;
  std::vector<int> inputs_, outputs_;
  std::vector<Shape> out_shapes_;
  std::vector<Param> params_;
  std::vector<std::vector<int>> node_params_;
  std::vector<Param> states_;
  std::vector<std::vector<int>> node_states_;
  std::vector<std::vector<WeightRef>> node_weights_;
  std::vector<int64_t> aux_per_row_, work_floats_;
  std::vector<char> needs_grad_;
  std::vector<int> consumers_;
  // Throws (shape) unless `other` has this graph's variables, layout included.
  void check_same_variables(const Graph& other) const;
  int64_t param_floats_ = 0;
  int64_t state_floats_ = 0;
  bool variable_ = false;
  std::vector<int> variable_axis_;
  std::vector<int64_t> lengths_;
  std::vector<Shape> symbolic_;  // empty unless variable_ and unbound
};

// A layer's output shape and weights for inputs whose -1 dims are variable
// lengths (the R side's symbolic tensors): probed at Graph::kProbeLength and
// kProbeLength2, output dims that differ are -1; weights that differ are a
// shape error naming `name`. Inputs without -1 dims: the layer's own answer.
Shape symbolic_output_shape(const Layer& layer, const std::vector<Shape>& in,
                            const std::string& name, std::vector<WeightSpec>* weights = nullptr);

}  // namespace mr
