// A layer running a traced graph (nn/layers/traced_layer.h). The graph's
// inputs are the layer's inputs (batched; their per-sample shapes must be
// the layer's input shapes), its first output the layer's output
// (batched), any further outputs the terms of Keras' self$add_loss() (one
// number each; Layer::added_losses), its weights the layer's, in the graph's order: trainable ones
// are parameters (gradients, optimizer slots, all-reduce), the others state, which the graph only
// reads.
//
// Buffers: the node's work region, kept from forward to backward, holds
// the graph's constants (written once when the executor sizes the region,
// Layer::prepare_work, so no step uploads them), the add_loss() terms and
// their gradients, then its aux (the forward
// values backward reads) and its backward scratch. TracedGraph lays aux and
// scratch out as per-row floats times rows followed by fixed floats (the
// weight-sized temporaries and sinks), so they are sized for the
// executor's row capacity (Layer::work_floats_for_rows) rather than as a
// per-row aux, which would repeat the fixed part for every row.
#include "nn/layers/traced_layer.h"

#include <utility>
#include <vector>

#include "nn/graph.h"  // align_floats
#include "nn/layers/layer_util.h"
#include "nn/regularization.h"
#include "nn/traced_graph.h"

namespace mr {

namespace {

class TracedLayer final : public Layer {
 public:
  TracedLayer(const std::string& class_name, const Json& config, uint64_t seed)
      : class_name_(class_name) {
    ConfigReader r(class_name_.c_str(), config, seed);
    name_ = r.name();
    who_ = r.who();
    const Json* g = r.take("mirrored_graph");
    MR_CHECK(g != nullptr && g->is_object(), value, who_,
             ": 'mirrored_graph' must be a traced graph (a JSON object), got ",
             g == nullptr ? std::string("nothing") : g->dump());
    graph_json_ = *g;
    // An R list cannot tell {} from []: a config that went through R (the
    // layer's config kept and saved there) brings a node's empty "attrs"
    // back as [], read here as the empty object it was.
    if (graph_json_.contains("nodes") && graph_json_["nodes"].is_array())
      for (Json& nd : graph_json_["nodes"])
        if (nd.is_object() && nd.contains("attrs") && nd["attrs"].is_array() && nd["attrs"].empty())
          nd["attrs"] = Json::object();
    try {
      graph_ = std::make_unique<TracedGraph>(graph_json_);
    } catch (const Error& e) {
      throw Error(e.kind(), who_ + ": " + e.what());
    }
    // The user's get_config() entries, in their order; the base keys are
    // written by config() as every layer writes them.
    for (auto it = config.begin(); it != config.end(); ++it)
      if (it.key() != "name" && it.key() != "trainable" && it.key() != "dtype" &&
          it.key() != "mirrored_graph")
        user_[it.key()] = it.value();
    MR_CHECK(graph_->num_inputs() >= 1, value, who_, ": its graph has no inputs");
    MR_CHECK(graph_->num_outputs() >= 1, value, who_, ": its graph has no output");
    // Outputs after the first: its add_loss() terms, one number each.
    for (int k = 1; k < graph_->num_outputs(); ++k) {
      const TracedGraph::ValueShape s = graph_->output_shapes()[static_cast<size_t>(k)];
      MR_CHECK(!s.batched && graph_->output_floats(k, 1) == 1, shape, who_, ": output ", k + 1,
               " of its graph, an add_loss() term, must be one number, got shape ", shape_str(s));
    }
    added_ = graph_->num_outputs() - 1;
    const TracedGraph::ValueShape out = graph_->output_shapes()[0];
    MR_CHECK(out.batched, shape, who_,
             ": its output must keep the batch axis first (a layer's output has one row per "
             "sample), got an unbatched value of shape ",
             shape_str(out));
    out_ = Shape(std::vector<int64_t>(out.dims.begin() + 1, out.dims.end()));
    read_weights(seed);
  }

  const char* class_name() const override { return class_name_.c_str(); }

  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, static_cast<size_t>(graph_->num_inputs()));
    for (int i = 0; i < graph_->num_inputs(); ++i) {
      MR_CHECK(graph_->input_shape(i).batched, shape, who_, ": input ", i + 1,
               " of its traced graph has no batch axis; a layer's inputs have one");
      const Shape want = per_sample(graph_->input_shape(i));
      MR_CHECK(in[static_cast<size_t>(i)].dims() == want.dims(), shape, who_, ": input ", i + 1,
               " has samples of shape ", in[static_cast<size_t>(i)].str(),
               "; its traced graph was traced for ", want.str());
    }
    return out_;
  }

  std::vector<WeightSpec> weights(const std::vector<Shape>& /*in*/) const override {
    return weights_;
  }

  int64_t work_floats(const std::vector<Shape>& /*in*/) const override { return fixed_floats(); }
  int added_losses() const override { return added_; }
  int64_t added_losses_at() const override { return align_floats(graph_->constant_floats()); }
  int64_t work_floats_for_rows(const std::vector<Shape>& /*in*/, int64_t max_rows) const override {
    return align_floats(graph_->aux_floats(max_rows)) + graph_->scratch_floats(max_rows);
  }
  void prepare_work(Backend& be, const std::vector<Shape>& /*in*/, float* work) const override {
    graph_->upload_constants(be, work);
  }

  void forward(const ForwardArgs& a) const override {
    if (a.rows == 0) return;
    const std::vector<const float*> w = weight_ptrs(a.params, a.state);
    // The output, then the add_loss() terms into the work region.
    std::vector<float*> outs{a.out};
    for (int t = 0; t < added_; ++t) outs.push_back(a.work + added_losses_at() + t);
    const TracedRun run{a.training, a.scalars, a.stream, a.row_offset};
    graph_->forward(a.be, a.rows, a.in.data(), w.data(), a.work, outs.data(), aux(a.work), run);
  }

  void backward(const BackwardArgs& a) const override {
    if (a.rows == 0) {
      // No rows, no output: every gradient is zero (the all-reduce adds it).
      for (size_t k = 0; k < a.grads.size(); ++k) a.be.fill(params_numel_[k], a.grads[k], 0.0f);
      return;
    }
    const std::vector<const float*> w = weight_ptrs(a.params, a.state);
    // d_weights: the trainable weights' gradients, none for the state.
    std::vector<float*> dw(weights_.size(), nullptr);
    for (size_t k = 0, p = 0; k < weights_.size(); ++k)
      if (weights_[k].trainable) dw[k] = a.grads[p++];
    // The add_loss() terms' gradient: rows / global rows each (Layer::added_losses).
    std::vector<const float*> douts{a.d_out};
    if (added_ > 0) {
      float* d = a.work + added_losses_at() + align_floats(added_);
      a.be.fill(
          added_, d,
          static_cast<float>(static_cast<double>(a.rows) / static_cast<double>(a.global_rows)));
      for (int t = 0; t < added_; ++t) douts.push_back(d + t);
    }
    // For rows <= the capacity: the aligned aux of `rows` rows fits in that
    // of the capacity, so the scratch of `rows` rows fits after it.
    float* scratch = aux(a.work) + align_floats(graph_->aux_floats(a.rows));
    TracedRun run;  // backward reads the training flag only (the masks are in aux)
    run.training = a.training;
    graph_->backward(a.be, a.rows, a.in.data(), w.data(), a.work, aux(a.work), scratch,
                     douts.data(), a.d_in.data(), dw.data(), run);
  }

  Json config() const override {
    Json c = base_config(name_);
    for (auto it = user_.begin(); it != user_.end(); ++it) c[it.key()] = it.value();
    c["mirrored_graph"] = graph_json_;
    return c;
  }

 private:
  // The node's work region: the graph's constants, the add_loss() terms'
  // values and their gradients (added_ floats each, aligned), then the
  // graph's aux and backward scratch.
  int64_t fixed_floats() const {
    return align_floats(graph_->constant_floats()) + 2 * align_floats(added_);
  }
  float* aux(float* work) const { return work + fixed_floats(); }
  static Shape per_sample(const TracedGraph::ValueShape& s) {
    return Shape(std::vector<int64_t>(s.dims.begin() + (s.batched ? 1 : 0), s.dims.end()));
  }
  static std::string shape_str(const TracedGraph::ValueShape& s) {
    return s.batched ? per_sample(s).str_with_batch() : per_sample(s).str();
  }

  // The graph's "weights" entries: {"name", "shape", "initializer" (a Keras
  // initializer config or name; Keras' add_weight() default glorot_uniform),
  // "trainable" (default true), "regularizer" and "constraint" (Keras
  // configs, default none)}; the shapes are the graph's, checked there.
  void read_weights(uint64_t seed) {
    if (!graph_json_.contains("weights")) return;
    const Json& ws = graph_json_["weights"];
    for (int k = 0; k < graph_->num_weights(); ++k) {
      const Json& e = ws[static_cast<size_t>(k)];
      WeightSpec w;
      w.name = "weight_" + std::to_string(k);
      if (e.contains("name")) {
        MR_CHECK(e["name"].is_string() && !e["name"].get<std::string>().empty(), value, who_,
                 ": weight ", k + 1, "'s name must be a non-empty string, got ", e["name"].dump());
        w.name = e["name"].get<std::string>();
      }
      w.shape = per_sample(graph_->weight_shape(k));
      const Json init = e.contains("initializer") && !e["initializer"].is_null()
                            ? e["initializer"]
                            : Json("glorot_uniform");
      w.init =
          initializer_from_keras(init, derive_seed(seed, k), who_ + " weight '" + w.name + "'");
      if (e.contains("trainable")) {
        MR_CHECK(e["trainable"].is_boolean(), value, who_, ": weight '", w.name,
                 "' has 'trainable' ", e["trainable"].dump(), "; expected true or false");
        w.trainable = e["trainable"].get<bool>();
      }
      // add_weight(regularizer =, constraint =): Keras configs, applied by
      // the step as for a built-in layer's weights (nn/regularization.h).
      const std::string opt_who = who_ + " weight '" + w.name + "'";
      if (e.contains("regularizer"))
        w.options.regularizer = keras_regularizer(e["regularizer"], opt_who + " regularizer");
      if (e.contains("constraint"))
        w.options.constraint = keras_constraint(e["constraint"], opt_who + " constraint");
      if (w.trainable) params_numel_.push_back(w.shape.numel());
      weights_.push_back(std::move(w));
    }
  }

  // The graph's weights in graph order from the layer's trainable (params)
  // and non-trainable (state) lists, which keep that order within each.
  template <class P, class S>
  std::vector<const float*> weight_ptrs(const std::vector<P>& params,
                                        const std::vector<S>& state) const {
    std::vector<const float*> w(weights_.size(), nullptr);
    size_t p = 0, s = 0;
    for (size_t k = 0; k < weights_.size(); ++k)
      w[k] = weights_[k].trainable ? params[p++] : state[s++];
    return w;
  }

  std::string class_name_, name_, who_;
  Json graph_json_, user_ = Json::object();
  std::unique_ptr<TracedGraph> graph_;
  Shape out_;
  std::vector<WeightSpec> weights_;
  std::vector<int64_t> params_numel_;  // floats of each trainable weight
  int added_ = 0;                      // add_loss() terms: the graph's outputs after the first
};

}  // namespace

std::unique_ptr<Layer> make_traced_layer(const std::string& class_name, const Json& config,
                                         uint64_t seed) {
  return std::make_unique<TracedLayer>(class_name, config, seed);
}

bool is_traced_layer(const Layer& layer) {
  return dynamic_cast<const TracedLayer*>(&layer) != nullptr;
}

}  // namespace mr
