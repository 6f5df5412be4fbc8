#include "train/model_weights.h"

#include <algorithm>

#include "core/error.h"
#include "io/keras_weights.h"

namespace mr {

std::vector<std::pair<int, int>> keras_slot_order(const OptimizerConfig& c, int n_params,
                                                  const std::vector<char>& trainable) {
  const int rule = rule_slot_count(c);
  using K = OptimizerConfig::Kind;
  std::vector<std::vector<int>> blocks;
  // BaseOptimizer.build makes the EMA averages, then the gradient
  // accumulators, before the rule's own slots (slot_names() puts them last).
  int extra = rule;
  if (c.use_ema) blocks.push_back({extra++});
  if (c.gradient_accumulation_steps > 0) blocks.push_back({extra++});
  if (c.kind == K::adam || c.kind == K::adamw) {
    blocks.push_back({0, 1});
    if (rule > 2) blocks.push_back({2});
  } else if (c.kind == K::sgd || c.kind == K::rmsprop) {
    for (int k = 0; k < rule; ++k) blocks.push_back({k});
  } else {
    // add_optimizer_variables(vars, [names]) interleaves them per variable.
    std::vector<int> all;
    for (int k = 0; k < rule; ++k) all.push_back(k);
    blocks.push_back(all);
  }
  std::vector<std::pair<int, int>> out;
  for (const auto& block : blocks)
    for (int p = 0; p < n_params; ++p) {
      if (!trainable.empty() && trainable[static_cast<size_t>(p)] == 0) continue;
      for (int k : block) out.emplace_back(k, p);
    }
  // Nadam's u_product scalar comes last (created after its slots).
  if (c.kind == K::nadam) out.emplace_back(kNadamUProduct, -1);
  return out;
}

namespace {

void check_node(const Graph& g, int node) {
  MR_CHECK(node < g.size(), internal, "layout names node ", node, " of ", g.size());
}

HostTensor slice(const std::vector<float>& flat, const Graph::Param& p) {
  return {p.shape, std::vector<float>(flat.begin() + p.offset, flat.begin() + p.offset + p.size)};
}

}  // namespace

Bytes write_keras_weights(Model& model, const KerasWeightsLayout& layout,
                          const std::vector<std::pair<std::string, std::string>>& root_attrs,
                          const std::string& what) {
  const Graph& g = model.graph();
  const std::vector<float> flat = model.get_params(0), state = model.get_state(0);
  KerasWeightsFile file;
  file.model_name = layout.model_name;
  for (const auto& l : layout.layers) {
    KerasWeightsFile::Layer layer{l.group, l.name, {}};
    if (l.node >= 0) {
      check_node(g, l.node);
      for (const auto& w : g.node_weights(l.node))
        layer.vars.push_back(slice(w.trainable ? flat : state, g.weight(w)));
    }
    file.layers.push_back(std::move(layer));
  }
  if (layout.optimizer && model.compiled()) {
    const OptimizerConfig& oc = model.config().optimizer;
    file.has_optimizer = true;
    file.optimizer_name = layout.optimizer_name;
    file.iterations = model.iterations();
    file.learning_rate = oc.learning_rate;
    file.has_learning_rate = oc.schedule.kind == LrSchedule::Kind::constant;
    if (model.config().loss_scale.dynamic) {  // i14-mpapi: Keras' LossScaleOptimizer
      file.loss_scale = true;
      file.inner_optimizer_name = layout.inner_optimizer_name;
      file.step_counter = model.loss_scale_state().step_counter;
      file.dynamic_scale = model.loss_scale_state().scale;
    }
    std::vector<std::vector<float>> slots;
    for (int k = 0; k < slot_count(oc); ++k)
      slots.push_back(k == model.accumulator_slot() ? model.get_accumulator()
                                                    : model.get_slot(k, 0));
    for (const auto& kp :
         keras_slot_order(oc, static_cast<int>(g.params().size()), model.config().trainable)) {
      if (kp.first == kNadamUProduct) {
        // u_product after the updates done so far (iterations - 1 is the last).
        const float u = model.iterations() > 0 ? nadam_u_product(oc, model.iterations() - 1) : 1.0f;
        file.optimizer_vars.push_back({Shape(std::vector<int64_t>{}), {u}});
        continue;
      }
      file.optimizer_vars.push_back(
          slice(slots[static_cast<size_t>(kp.first)], g.params()[static_cast<size_t>(kp.second)]));
    }
  }
  return write_weights_h5(file, root_attrs, what);
}

KerasWeightsResult read_keras_weights(Model& model, const KerasWeightsLayout& layout,
                                      const Bytes& image, const std::string& what,
                                      bool load_optimizer) {
  const Graph& g = model.graph();
  const auto& params = g.params();
  KerasWeightsExpect expect;
  for (const auto& l : layout.layers) {
    KerasWeightsExpect::Layer e{l.group, l.name, {}};
    if (l.node >= 0) {
      check_node(g, l.node);
      for (const auto& w : g.node_weights(l.node)) e.shapes.push_back(g.weight(w).shape);
    }
    expect.layers.push_back(std::move(e));
  }
  std::vector<std::pair<int, int>> order;
  if (load_optimizer && model.compiled()) {
    expect.optimizer = true;
    order = keras_slot_order(model.config().optimizer, static_cast<int>(params.size()),
                             model.config().trainable);
    expect.learning_rate_var = model.config().optimizer.schedule.kind == LrSchedule::Kind::constant;
    expect.loss_scale = model.config().loss_scale.dynamic;  // i14-mpapi
    for (const auto& kp : order)
      expect.optimizer_shapes.push_back(kp.first == kNadamUProduct
                                            ? Shape(std::vector<int64_t>{})
                                            : params[static_cast<size_t>(kp.second)].shape);
  }
  const KerasWeightsRead read = read_weights_h5(image, what, expect);

  std::vector<float> flat = model.get_params(0), state = model.get_state(0);
  for (size_t k = 0; k < layout.layers.size(); ++k) {
    const auto& l = layout.layers[k];
    if (l.node < 0) continue;
    const auto it =
        std::find_if(read.file.layers.begin(), read.file.layers.end(),
                     [&](const KerasWeightsFile::Layer& f) { return f.group == l.group; });
    if (it == read.file.layers.end()) continue;  // a layer without variables
    const auto& refs = g.node_weights(l.node);
    for (size_t i = 0; i < refs.size(); ++i) {
      const Graph::Param& p = g.weight(refs[i]);
      std::copy(it->vars[i].values.begin(), it->vars[i].values.end(),
                (refs[i].trainable ? flat : state).begin() + p.offset);
    }
  }
  KerasWeightsResult res;
  res.optimizer = read.optimizer;
  std::vector<std::vector<float>> slots;
  if (read.file.has_optimizer) {
    res.iterations = read.file.iterations;
    res.learning_rate = read.file.has_learning_rate ? read.file.learning_rate
                                                    : model.config().optimizer.learning_rate;
    const OptimizerConfig& oc = model.config().optimizer;
    for (int k = 0; k < slot_count(oc); ++k)
      slots.emplace_back(flat.size(), slot_initial_value(oc, k));  // what compile() starts from
    for (size_t i = 0; i < read.file.optimizer_vars.size(); ++i) {
      const auto& kp = order[i];
      if (kp.first == kNadamUProduct) continue;  // a function of the iterations
      const auto& v = read.file.optimizer_vars[i].values;
      std::copy(v.begin(), v.end(),
                slots[static_cast<size_t>(kp.first)].begin() + params[kp.second].offset);
    }
  }
  // Everything was read and checked: only now change the model.
  model.set_params(flat);
  model.set_state(state);
  if (res.optimizer == "loaded" || res.optimizer == "partial") {
    for (size_t k = 0; k < slots.size(); ++k) {
      if (static_cast<int>(k) == model.accumulator_slot())
        model.set_accumulator(slots[k]);
      else
        model.set_slot(static_cast<int>(k), slots[k]);
    }
    model.set_iterations(res.iterations);
    if (read.file.loss_scale)  // i14-mpapi
      model.set_loss_scale_state(read.file.dynamic_scale, read.file.step_counter);
  }
  return res;
}

}  // namespace mr
