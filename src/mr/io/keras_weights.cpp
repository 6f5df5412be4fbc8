#include "io/keras_weights.h"

#include <cmath>
#include <set>

#include "core/error.h"
#include "io/h5_file.h"

namespace mr {

Bytes write_weights_h5(const KerasWeightsFile& file,
                       const std::vector<std::pair<std::string, std::string>>& root_attrs,
                       const std::string& what) {
  H5Writer w(what);
  for (const auto& a : root_attrs) w.attr_string("", a.first, a.second);
  for (const auto& l : file.layers) {
    const std::string vars = l.group + "/vars";
    w.group(vars);
    w.attr_string(vars, "name", l.name);
    int i = 0;
    for (const HostTensor& t : l.vars)
      w.dataset_f32(vars + "/" + std::to_string(i++), t.shape.dims(), t.values.data());
  }
  // The inner optimizer's variables from index `i` of group `vars`.
  const auto optimizer_vars = [&](const std::string& vars, int i) {
    w.scalar_i64(vars + "/" + std::to_string(i++), file.iterations);
    if (file.has_learning_rate)
      w.scalar_f32(vars + "/" + std::to_string(i++), static_cast<float>(file.learning_rate));
    for (const HostTensor& t : file.optimizer_vars)
      w.dataset_f32(vars + "/" + std::to_string(i++), t.shape.dims(), t.values.data());
  };
  if (file.has_optimizer) {
    w.group("optimizer/vars");
    w.attr_string("optimizer/vars", "name", file.optimizer_name);
    if (file.loss_scale) {
      w.scalar_i64("optimizer/vars/0", 0);
      w.scalar_f32("optimizer/vars/1", 0.0f);
      w.scalar_i64("optimizer/vars/2", file.step_counter);
      w.scalar_f32("optimizer/vars/3", file.dynamic_scale);
      optimizer_vars("optimizer/vars", 4);
      w.group("optimizer/inner_optimizer/vars");
      w.attr_string("optimizer/inner_optimizer/vars", "name", file.inner_optimizer_name);
      optimizer_vars("optimizer/inner_optimizer/vars", 0);
    } else {
      optimizer_vars("optimizer/vars", 0);
    }
  }
  w.group("vars");
  w.attr_string("vars", "name", file.model_name);
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

// Every group under `layers` (a path ending in "layers") must be one the
// model expects, or hold a nested model's groups (an ancestor of an expected
// group: checked in turn), or hold no variables.
void check_groups(const H5Reader& r, const std::string& layers,
                  const std::set<std::string>& expected, const std::set<std::string>& ancestors,
                  const std::string& what) {
  for (const auto& child : r.children(layers)) {
    const std::string path = layers + "/" + child;
    if (ancestors.count(path)) {
      if (r.is_group(path + "/layers"))
        check_groups(r, path + "/layers", expected, ancestors, what);
      continue;
    }
    if (expected.count(path)) continue;
    // Groups without variables (Keras writes them for InputLayer, Dropout,
    // ...) do not change the model; extra ones with variables do.
    if (r.is_group(path + "/vars") && count_vars(r, path + "/vars") == 0 &&
        !r.is_group(path + "/layers"))
      continue;
    fail(ErrorKind::io, what, ": holds weights for layer group '", path,
         "', which this model does not have (a weights file from another architecture?)");
  }
}

}  // namespace

KerasWeightsRead read_weights_h5(const Bytes& image, const std::string& what,
                                 const KerasWeightsExpect& expect) {
  H5Reader r(image, what);
  if (!r.is_group("layers"))
    fail(ErrorKind::io, what, ": no 'layers' group: not a Keras 3 weights file");

  // Every group under layers/ must be one the model expects, and back.
  // Nested models' groups (layers/functional/layers/dense) are checked at
  // each level.
  std::set<std::string> expected, ancestors;
  for (const auto& l : expect.layers) {
    expected.insert(l.group);
    for (size_t at = l.group.find("/layers/"); at != std::string::npos;
         at = l.group.find("/layers/", at + 1))
      ancestors.insert(l.group.substr(0, at));
  }
  check_groups(r, "layers", expected, ancestors, what);
  KerasWeightsRead out;
  for (const auto& l : expect.layers) {
    KerasWeightsFile::Layer layer{l.group, l.name, {}};
    const std::string vars = l.group + "/vars";
    const int want = static_cast<int>(l.shapes.size());
    if (!r.is_group(vars)) {
      if (want == 0) continue;
      fail(ErrorKind::io, what, ": has no group '", vars, "' for layer '", l.name,
           "' (a weights file from another architecture?)");
    }
    const int have = count_vars(r, vars);
    if (have != want)
      fail(ErrorKind::io, what, ": layer '", l.name, "' expects ", want, " variables, group '",
           vars, "' has ", have, " (a weights file from another architecture?)");
    for (int i = 0; i < want; ++i) {
      const Shape& s = l.shapes[static_cast<size_t>(i)];
      layer.vars.push_back({s, r.read_f32(vars + "/" + std::to_string(i), s.dims())});
    }
    out.file.layers.push_back(std::move(layer));
  }
  if (expect.optimizer && r.is_group("optimizer/vars")) {
    const int have = count_vars(r, "optimizer/vars");
    // A LossScaleOptimizer's own 4 variables, then the inner optimizer's:
    // the iteration, the learning rate unless it is a schedule, the slots.
    const int own = expect.loss_scale ? 4 : 0;
    const int base = own + (expect.learning_rate_var ? 2 : 1);
    const int full = static_cast<int>(expect.optimizer_shapes.size()) + base;
    const auto var = [](int i) { return "optimizer/vars/" + std::to_string(i); };
    if (have == full || have == base) {
      out.file.has_optimizer = true;
      out.file.iterations = r.read_scalar_i64(var(own));
      if (out.file.iterations < 0)
        fail(ErrorKind::io, what, ": negative optimizer iteration count");
      out.file.has_learning_rate = expect.learning_rate_var;
      if (expect.learning_rate_var) out.file.learning_rate = r.read_scalar(var(own + 1));
      if (expect.loss_scale) {
        out.file.loss_scale = true;
        out.file.step_counter = r.read_scalar_i64(var(2));
        out.file.dynamic_scale = static_cast<float>(r.read_scalar(var(3)));
        if (out.file.step_counter < 0 || !(out.file.dynamic_scale > 0) ||
            !std::isfinite(out.file.dynamic_scale))
          fail(ErrorKind::io, what, ": the loss scale optimizer's step_counter ",
               out.file.step_counter, " or dynamic_scale ", out.file.dynamic_scale,
               " is out of range");
      }
      for (int i = base; have > base && i < have; ++i) {
        const Shape& s = expect.optimizer_shapes[static_cast<size_t>(i - base)];
        out.file.optimizer_vars.push_back({s, r.read_f32(var(i), s.dims())});
      }
      out.optimizer = have == base ? "partial" : "loaded";
    } else {
      out.optimizer = "mismatch";
    }
  }
  return out;
}

std::string read_keras_root_attr(const Bytes& image, const std::string& what,
                                 const std::string& name, bool* found) {
  H5Reader r(image, what);
  return r.attr_string("", name, found);
}

}  // namespace mr
