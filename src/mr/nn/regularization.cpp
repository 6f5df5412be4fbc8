#include "nn/regularization.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace mr {

namespace {

Json wrap(const char* module, const std::string& class_name, Json config) {
  return Json{{"module", module},
              {"class_name", class_name},
              {"config", std::move(config)},
              {"registered_name", nullptr}};
}

// Keras' L1() and OrthogonalRegularizer() store their default 0.01 as a
// float32 and write it back as a double: 0.009999999776482582.
const double kFloat32Hundredth = static_cast<double>(0.01f);

// The "config" member of a serialized object, checked for known keys.
const Json& object_config(const Json& v, const char* module, const std::string& who,
                          const std::vector<const char*>& keys) {
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    // Keras writes shared_object_id for an object two configs share.
    MR_CHECK(k == "module" || k == "class_name" || k == "config" || k == "registered_name" ||
                 k == "shared_object_id",
             value, who, ": unknown member '", k, "' in ", v.dump());
  }
  if (v.contains("module") && !v["module"].is_null())
    MR_CHECK(v["module"].is_string() && v["module"].get<std::string>() == module, value, who,
             ": expected module '", module, "', got ", v["module"].dump());
  static const Json empty = Json::object();
  // An empty config may come as [] (R's unnamed empty list).
  const bool none = !v.contains("config") || v["config"].is_null() ||
                    (v["config"].is_array() && v["config"].empty());
  const Json& c = none ? empty : v["config"];
  MR_CHECK(c.is_object(), value, who, ": 'config' must be an object, got ", c.dump());
  for (auto it = c.begin(); it != c.end(); ++it)
    MR_CHECK(std::find_if(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }) !=
                 keys.end(),
             value, who, ": unknown option '", it.key(), "' of ", v["class_name"].dump());
  return c;
}

// Keras' validate_float_arg: a finite number >= 0.
double penalty(const Json& c, const char* key, double def, const std::string& who) {
  if (!c.contains(key) || c[key].is_null()) return def;
  const Json& v = c[key];
  MR_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0.0, value, who,
           ": '", key, "' must be a finite number >= 0, got ", v.dump());
  return v.get<double>();
}

double number(const Json& c, const char* key, double def, const std::string& who) {
  if (!c.contains(key) || c[key].is_null()) return def;
  MR_CHECK(c[key].is_number() && std::isfinite(c[key].get<double>()), value, who, ": '", key,
           "' must be a finite number, got ", c[key].dump());
  return c[key].get<double>();
}

// A number as Keras keeps it: an integer stays an integer (MaxNorm's
// max_value = 2 is written 2), a float a float.
Json as_written(const Json& c, const char* key, Json def) {
  if (!c.contains(key) || c[key].is_null()) return def;
  return c[key];
}

Json axis_of(const Json& c, const std::string& who) {
  if (!c.contains("axis") || c["axis"].is_null()) return 0;
  const Json& a = c["axis"];
  if (a.is_number_integer()) return a;
  bool ok = a.is_array() && !a.empty();
  if (ok)
    for (const Json& e : a) ok = ok && e.is_number_integer();
  MR_CHECK(ok, value, who, ": 'axis' must be an integer or a list of integers, got ", a.dump());
  return a;
}

}  // namespace

Json keras_regularizer(const Json& v, const std::string& who) {
  if (v.is_null()) return nullptr;
  std::string cls;
  Json c = Json::object();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "l1" || s == "L1")
      cls = "L1";
    else if (s == "l2" || s == "L2")
      cls = "L2";
    else if (s == "L1L2")
      cls = "L1L2";
    else if (s == "orthogonal_regularizer" || s == "OrthogonalRegularizer")
      cls = "OrthogonalRegularizer";
    else
      fail(ErrorKind::value, who, ": unknown regularizer '", s,
           "' (expected l1, l2, orthogonal_regularizer or L1, L2, L1L2, OrthogonalRegularizer)");
  } else {
    MR_CHECK(v.is_object() && v.contains("class_name") && v["class_name"].is_string(), value, who,
             ": a regularizer must be a name or a Keras config with a class_name, got ", v.dump());
    cls = v["class_name"].get<std::string>();
    if (cls == "L1")
      c = object_config(v, "keras.regularizers", who, {"l1"});
    else if (cls == "L2")
      c = object_config(v, "keras.regularizers", who, {"l2"});
    else if (cls == "L1L2")
      c = object_config(v, "keras.regularizers", who, {"l1", "l2"});
    else if (cls == "OrthogonalRegularizer")
      c = object_config(v, "keras.regularizers", who, {"factor", "mode"});
    else
      fail(ErrorKind::value, who, ": unknown regularizer class '", cls,
           "' (expected L1, L2, L1L2 or OrthogonalRegularizer)");
  }
  if (cls == "L1")
    return wrap("keras.regularizers", cls, {{"l1", penalty(c, "l1", kFloat32Hundredth, who)}});
  if (cls == "L2") return wrap("keras.regularizers", cls, {{"l2", penalty(c, "l2", 0.01, who)}});
  if (cls == "L1L2")
    return wrap("keras.regularizers", cls,
                {{"l1", penalty(c, "l1", 0.0, who)}, {"l2", penalty(c, "l2", 0.0, who)}});
  std::string mode = "rows";
  if (c.contains("mode") && !c["mode"].is_null()) {
    MR_CHECK(c["mode"].is_string(), value, who, ": 'mode' must be \"rows\" or \"columns\", got ",
             c["mode"].dump());
    mode = c["mode"].get<std::string>();
  }
  MR_CHECK(mode == "rows" || mode == "columns", value, who,
           ": 'mode' must be \"rows\" or \"columns\", got \"", mode, "\"");
  return wrap("keras.regularizers", cls,
              {{"factor", penalty(c, "factor", kFloat32Hundredth, who)}, {"mode", mode}});
}

Json keras_constraint(const Json& v, const std::string& who) {
  if (v.is_null()) return nullptr;
  std::string cls;
  Json c = Json::object();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "max_norm" || s == "MaxNorm")
      cls = "MaxNorm";
    else if (s == "non_neg" || s == "NonNeg")
      cls = "NonNeg";
    else if (s == "unit_norm" || s == "UnitNorm")
      cls = "UnitNorm";
    else if (s == "min_max_norm" || s == "MinMaxNorm")
      cls = "MinMaxNorm";
    else
      fail(ErrorKind::value, who, ": unknown constraint '", s,
           "' (expected max_norm, non_neg, unit_norm, min_max_norm or their class names)");
  } else {
    MR_CHECK(v.is_object() && v.contains("class_name") && v["class_name"].is_string(), value, who,
             ": a constraint must be a name or a Keras config with a class_name, got ", v.dump());
    cls = v["class_name"].get<std::string>();
    if (cls == "MaxNorm")
      c = object_config(v, "keras.constraints", who, {"max_value", "axis"});
    else if (cls == "NonNeg")
      c = object_config(v, "keras.constraints", who, {});
    else if (cls == "UnitNorm")
      c = object_config(v, "keras.constraints", who, {"axis"});
    else if (cls == "MinMaxNorm")
      c = object_config(v, "keras.constraints", who, {"min_value", "max_value", "rate", "axis"});
    else
      fail(ErrorKind::value, who, ": unknown constraint class '", cls,
           "' (expected MaxNorm, NonNeg, UnitNorm or MinMaxNorm)");
  }
  if (cls == "NonNeg") return wrap("keras.constraints", cls, Json::object());
  if (cls == "UnitNorm") return wrap("keras.constraints", cls, {{"axis", axis_of(c, who)}});
  if (cls == "MaxNorm") {
    const double mx = number(c, "max_value", 2.0, who);
    MR_CHECK(mx >= 0.0, value, who, ": 'max_value' must be >= 0, got ", mx);
    return wrap("keras.constraints", cls,
                {{"max_value", as_written(c, "max_value", 2)}, {"axis", axis_of(c, who)}});
  }
  const double lo = number(c, "min_value", 0.0, who), hi = number(c, "max_value", 1.0, who);
  MR_CHECK(lo >= 0.0 && lo <= hi, value, who,
           ": 'min_value' and 'max_value' must satisfy 0 <= min_value <= max_value, got ", lo,
           " and ", hi);
  number(c, "rate", 1.0, who);
  return wrap("keras.constraints", cls,
              {{"min_value", as_written(c, "min_value", 0.0)},
               {"max_value", as_written(c, "max_value", 1.0)},
               {"rate", as_written(c, "rate", 1.0)},
               {"axis", axis_of(c, who)}});
}

RegularizerSpec regularizer_spec(const Json& keras) {
  RegularizerSpec s;
  if (keras.is_null()) return s;
  const std::string cls = keras["class_name"].get<std::string>();
  const Json& c = keras["config"];
  if (cls == "OrthogonalRegularizer") {
    s.kind = RegularizerSpec::Kind::orthogonal;
    s.factor = static_cast<float>(c["factor"].get<double>());
    s.rows = c["mode"].get<std::string>() == "rows";
    return s;
  }
  s.kind = RegularizerSpec::Kind::l1_l2;
  if (c.contains("l1")) s.l1 = static_cast<float>(c["l1"].get<double>());
  if (c.contains("l2")) s.l2 = static_cast<float>(c["l2"].get<double>());
  return s;
}

ConstraintSpec constraint_spec(const Json& keras, const Shape& shape, const std::string& who) {
  ConstraintSpec s;
  if (keras.is_null()) return s;
  const std::string cls = keras["class_name"].get<std::string>();
  const Json& c = keras["config"];
  if (cls == "NonNeg") {
    s.kind = ConstraintSpec::Kind::non_neg;
    s.inner = shape.numel();
    return s;
  }
  s.kind = ConstraintSpec::Kind::norm;
  if (cls == "UnitNorm") {
    s.min_value = s.max_value = 1.0f;
  } else if (cls == "MaxNorm") {
    s.min_value = 0.0f;
    s.max_value = static_cast<float>(c["max_value"].get<double>());
  } else {
    s.min_value = static_cast<float>(c["min_value"].get<double>());
    s.max_value = static_cast<float>(c["max_value"].get<double>());
    s.rate = static_cast<float>(c["rate"].get<double>());
  }
  // The axes, made non-negative and sorted; they must form one block.
  const int rank = shape.rank();
  std::vector<int64_t> axes;
  const Json& a = c["axis"];
  if (a.is_array()) {
    for (const Json& e : a) axes.push_back(e.get<int64_t>());
  } else {
    axes.push_back(a.get<int64_t>());
  }
  for (int64_t& x : axes) {
    MR_CHECK(x >= -rank && x < rank, value, who, ": constraint axis ", x,
             " is out of range for a weight of shape ", shape.str());
    if (x < 0) x += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  MR_CHECK(axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size()), value, who,
           ": constraint axes ", a.dump(),
           " are not consecutive; mirrored supports norms over consecutive axes only");
  s.outer = s.reduce = s.inner = 1;
  for (int d = 0; d < rank; ++d) {
    const int64_t n = shape.dims()[static_cast<size_t>(d)];
    if (d < axes.front())
      s.outer *= n;
    else if (d <= axes.back())
      s.reduce *= n;
    else
      s.inner *= n;
  }
  return s;
}

Regularization::Regularization(const Graph& graph, Backend& be)
    : be_(be), work_(nullptr, DeviceFree{&be}) {
  int64_t numel = 0, square = 0;
  for (size_t pi = 0; pi < graph.params().size(); ++pi) {
    const Graph::Param& p = graph.params()[pi];
    const std::string who = "layer '" + graph.node(p.node).name + "' " + p.name;
    const RegularizerSpec r = regularizer_spec(p.options.regularizer);
    if (r.kind != RegularizerSpec::Kind::none) {
      Reg reg{p.offset, 1, p.size, r, static_cast<int>(pi)};
      if (r.kind == RegularizerSpec::Kind::orthogonal) {
        MR_CHECK(p.shape.rank() == 2, value, who,
                 ": OrthogonalRegularizer needs a weight of rank 2, got shape ", p.shape.str());
        reg.rows = p.shape.dims()[0];
        reg.cols = p.shape.dims()[1];
        const int64_t size = r.rows ? reg.rows : reg.cols;
        MR_CHECK(size >= 2, value, who, ": OrthogonalRegularizer (mode = \"",
                 r.rows ? "rows" : "columns", "\") needs at least 2 ", r.rows ? "rows" : "columns",
                 ", got shape ", p.shape.str());
        numel = std::max(numel, p.size);
        square = std::max(square, size * size);
      }
      regs_.push_back(reg);
    }
    const ConstraintSpec c = constraint_spec(p.options.constraint, p.shape, who);
    if (c.kind != ConstraintSpec::Kind::none) cons_.push_back({p.offset, c, static_cast<int>(pi)});
  }
  if (numel > 0) {
    const int64_t a = align_floats(numel), b = align_floats(square);
    work_ = be.allocate(static_cast<size_t>(4 * a + b) * sizeof(float));
    float* base = static_cast<float*>(work_.get());
    t_ = base;
    n_ = base + a;
    dn_ = base + 2 * a;
    dw_ = base + 3 * a;
    p_ = base + 4 * a;
  }
}

void Regularization::add_weight_penalties(const float* params, float* grads, double* acc,
                                          double loss_scale) {
  for (const Reg& r : regs_) {
    if (!r.active) continue;
    const float* w = params + r.offset;
    float* g = grads != nullptr ? grads + r.offset : nullptr;
    if (r.spec.kind == RegularizerSpec::Kind::orthogonal) {
      orthogonal(r, w, g, acc, loss_scale);
    } else {
      be_.l1_l2_penalty(r.cols, w, r.spec.l1, r.spec.l2, loss_scale, acc, 1.0f, g);
    }
  }
}

// Keras' OrthogonalRegularizer, rows mode on W (columns mode on W^T):
// N = rows of W normalized, P = N N^T, value = f/2 sum_{i != j} |P_ij| / pairs.
// Backward: dP from the op, dN = (dP + dP^T) N, dW from the normalization's
// backward; columns mode transposes dW back.
void Regularization::orthogonal(const Reg& r, const float* w, float* grad, double* acc,
                                double loss_scale) {
  const bool rows = r.spec.rows;
  const int64_t m = rows ? r.rows : r.cols, k = rows ? r.cols : r.rows;
  const float* x = w;
  if (!rows) {
    StridedCopy t;  // t[j, i] = w[i, j]
    t.rank = 2;
    t.dims[0] = r.cols;
    t.dims[1] = r.rows;
    t.src_stride[0] = 1;
    t.src_stride[1] = r.cols;
    t.dst_stride[0] = r.rows;
    t.dst_stride[1] = 1;
    be_.strided_copy(t, w, t_);
    x = t_;
  }
  be_.l2_normalize_rows(m, k, x, n_);
  be_.gemm(false, true, m, m, k, 1.0f, n_, k, n_, k, 0.0f, p_, m);
  be_.offdiag_abs_penalty(m, p_, r.spec.factor, loss_scale, acc, grad != nullptr ? p_ : nullptr);
  if (grad == nullptr) return;
  be_.gemm(false, false, m, k, m, 1.0f, p_, m, n_, k, 0.0f, dn_, k);
  be_.gemm(true, false, m, k, m, 1.0f, p_, m, n_, k, 1.0f, dn_, k);
  be_.l2_normalize_rows_backward(m, k, x, dn_, dw_);
  if (rows) {
    be_.axpy(r.rows * r.cols, 1.0f, dw_, grad);
    return;
  }
  StridedCopy t;  // back: t_[i, j] = dw_[j, i]
  t.rank = 2;
  t.dims[0] = r.rows;
  t.dims[1] = r.cols;
  t.src_stride[0] = 1;
  t.src_stride[1] = r.rows;
  t.dst_stride[0] = r.cols;
  t.dst_stride[1] = 1;
  be_.strided_copy(t, dw_, t_);
  be_.axpy(r.rows * r.cols, 1.0f, t_, grad);
}

void Regularization::apply_constraints(float* params) {
  for (const Con& c : cons_) {
    if (!c.active) continue;
    float* w = params + c.offset;
    if (c.spec.kind == ConstraintSpec::Kind::non_neg) {
      be_.non_neg_constraint(c.spec.inner, w);
    } else {
      be_.norm_constraint(c.spec.outer, c.spec.reduce, c.spec.inner, c.spec.min_value,
                          c.spec.max_value, c.spec.rate, w);
    }
  }
}

void Regularization::set_trainable(const std::vector<char>& trainable) {
  auto on = [&](int param) {
    return trainable.empty() || trainable.at(static_cast<size_t>(param)) != 0;
  };
  for (Reg& r : regs_) r.active = on(r.param);
  for (Con& c : cons_) c.active = on(c.param);
}

std::vector<RegularizerSpec> activity_specs(const Graph& graph) {
  std::vector<RegularizerSpec> s(static_cast<size_t>(graph.size()));
  for (int i = 0; i < graph.size(); ++i) {
    if (graph.node(i).inputs.empty()) continue;
    s[static_cast<size_t>(i)] = regularizer_spec(graph.layer(i).activity_regularizer());
  }
  return s;
}

}  // namespace mr
