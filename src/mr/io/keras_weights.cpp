#include "io/keras_weights.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "io/h5_file.h"

namespace mr {

std::vector<std::pair<int, int>> keras_slot_order(const OptimizerConfig& c, int n_params) {
  const int slots = slot_count(c);
  std::vector<std::vector<int>> blocks;
  if (c.kind == OptimizerConfig::Kind::adam || c.kind == OptimizerConfig::Kind::adamw) {
    blocks.push_back({0, 1});
    if (slots > 2) blocks.push_back({2});
  } else {
    for (int k = 0; k < slots; ++k) blocks.push_back({k});
  }
  std::vector<std::pair<int, int>> out;
  for (const auto& block : blocks)
    for (int p = 0; p < n_params; ++p)
      for (int k : block) out.emplace_back(k, p);
  return out;
}

Bytes write_keras_weights(const Model& model, const KerasWeightsLayout& layout,
                          const std::vector<std::pair<std::string, std::string>>& root_attrs,
                          const std::string& what) {
  const Graph& g = model.graph();
  const auto& params = g.params();
  H5Writer w(what);
  for (const auto& a : root_attrs) w.attr_string("", a.first, a.second);
  const std::vector<float> flat = model.get_params(0);
  for (const auto& l : layout.layers) {
    const std::string vars = l.group + "/vars";
    w.group(vars);
    w.attr_string(vars, "name", l.name);
    if (l.node < 0) continue;
    MR_CHECK(l.node < g.size(), internal, "layout names node ", l.node, " of ", g.size());
    int i = 0;
    for (int p : g.node_params(l.node)) {
      const auto& prm = params[static_cast<size_t>(p)];
      w.dataset_f32(vars + "/" + std::to_string(i++), prm.shape.dims(), flat.data() + prm.offset);
    }
  }
  if (layout.optimizer && model.compiled()) {
    w.group("optimizer/vars");
    w.attr_string("optimizer/vars", "name", layout.optimizer_name);
    w.scalar_i64("optimizer/vars/0", model.iterations());
    w.scalar_f32("optimizer/vars/1", static_cast<float>(model.config().optimizer.learning_rate));
    const OptimizerConfig& oc = model.config().optimizer;
    std::vector<std::vector<float>> slots;
    for (int k = 0; k < slot_count(oc); ++k) slots.push_back(model.get_slot(k, 0));
    int i = 2;
    for (const auto& kp : keras_slot_order(oc, static_cast<int>(params.size()))) {
      const auto& prm = params[static_cast<size_t>(kp.second)];
      w.dataset_f32("optimizer/vars/" + std::to_string(i++), prm.shape.dims(),
                    slots[static_cast<size_t>(kp.first)].data() + prm.offset);
    }
  }
  w.group("vars");
  w.attr_string("vars", "name", layout.model_name);
  return w.finish();
}

namespace {

// Number of datasets "0", "1", ... in a vars group; any other member is an error.
int count_vars(const H5Reader& r, const std::string& vars) {
  const auto kids = r.children(vars);
  std::set<std::string> names(kids.begin(), kids.end());
  for (size_t i = 0; i < kids.size(); ++i)
    if (!names.count(std::to_string(i)))
      fail(ErrorKind::io, r.what(), ": group '", vars, "' holds unexpected members (", kids.size(),
           " members, not numbered 0..", kids.size() - 1, ")");
  return static_cast<int>(kids.size());
}

}  // namespace

KerasWeightsResult read_keras_weights(Model& model, const KerasWeightsLayout& layout,
                                      const Bytes& image, const std::string& what,
                                      bool load_optimizer) {
  H5Reader r(image, what);
  const Graph& g = model.graph();
  const auto& params = g.params();
  if (!r.is_group("layers"))
    fail(ErrorKind::io, what, ": no 'layers' group: not a Keras 3 weights file");

  // Every group under layers/ must be one the model expects, and back.
  std::set<std::string> expected;
  for (const auto& l : layout.layers) expected.insert(l.group);
  for (const auto& child : r.children("layers")) {
    const std::string path = "layers/" + child;
    if (!expected.count(path)) {
      // Groups without variables (Keras writes them for InputLayer, Dropout,
      // ...) do not change the model; extra ones with variables do.
      if (r.is_group(path + "/vars") && count_vars(r, path + "/vars") == 0) continue;
      fail(ErrorKind::io, what, ": holds weights for layer group '", path,
           "', which this model does not have (a weights file from another architecture?)");
    }
  }
  std::vector<float> flat = model.get_params(0);
  for (const auto& l : layout.layers) {
    const std::string vars = l.group + "/vars";
    const int want = l.node < 0 ? 0 : static_cast<int>(g.node_params(l.node).size());
    if (!r.is_group(vars)) {
      if (want == 0) continue;
      fail(ErrorKind::io, what, ": has no group '", vars, "' for layer '", l.name,
           "' (a weights file from another architecture?)");
    }
    const int have = count_vars(r, vars);
    if (have != want)
      fail(ErrorKind::io, what, ": layer '", l.name, "' expects ", want, " variables, group '",
           vars, "' has ", have, " (a weights file from another architecture?)");
    int i = 0;
    for (int p = 0; want > 0 && p < static_cast<int>(g.node_params(l.node).size()); ++p) {
      const auto& prm = params[static_cast<size_t>(g.node_params(l.node)[static_cast<size_t>(p)])];
      const std::vector<float> v = r.read_f32(vars + "/" + std::to_string(i++), prm.shape.dims());
      std::copy(v.begin(), v.end(), flat.begin() + prm.offset);
    }
  }

  KerasWeightsResult res;
  std::vector<std::vector<float>> slots;
  if (load_optimizer && model.compiled() && r.is_group("optimizer/vars")) {
    const OptimizerConfig& oc = model.config().optimizer;
    const auto order = keras_slot_order(oc, static_cast<int>(params.size()));
    const int have = count_vars(r, "optimizer/vars");
    if (have == static_cast<int>(order.size()) + 2 || have == 2) {
      res.iterations = r.read_scalar_i64("optimizer/vars/0");
      if (res.iterations < 0) fail(ErrorKind::io, what, ": negative optimizer iteration count");
      res.learning_rate = r.read_scalar("optimizer/vars/1");
      for (int k = 0; k < slot_count(oc); ++k) slots.emplace_back(flat.size(), 0.0f);
      int i = 2;
      for (int k = 0; have > 2 && k < static_cast<int>(order.size()); ++k) {
        const auto& prm = params[static_cast<size_t>(order[static_cast<size_t>(k)].second)];
        const std::vector<float> v =
            r.read_f32("optimizer/vars/" + std::to_string(i++), prm.shape.dims());
        std::copy(
            v.begin(), v.end(),
            slots[static_cast<size_t>(order[static_cast<size_t>(k)].first)].begin() + prm.offset);
      }
      res.optimizer = have == 2 ? "partial" : "loaded";
    } else {
      res.optimizer = "mismatch";
    }
  }

  // Everything was read and checked: only now change the model.
  model.set_params(flat);
  if (res.optimizer == "loaded" || res.optimizer == "partial") {
    for (size_t k = 0; k < slots.size(); ++k) model.set_slot(static_cast<int>(k), slots[k]);
    model.set_iterations(res.iterations);
  }
  return res;
}

std::string read_keras_root_attr(const Bytes& image, const std::string& what,
                                 const std::string& name, bool* found) {
  H5Reader r(image, what);
  return r.attr_string("", name, found);
}

}  // namespace mr
