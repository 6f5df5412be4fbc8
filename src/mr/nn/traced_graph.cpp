// TracedGraph: parsing, per-sample shape inference and the buffer plan.
// The forward and the VJPs of the ops: traced_ops.cpp.
#include "nn/traced_graph.h"

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "nn/traced_kinds.h"
#include "nn/traced_util.h"

namespace mr {
namespace {

using traced::attr;
using traced::dims_str;
using traced::node_fail;
using traced::NodeCtx;
using traced::norm_axis;
using traced::prod;

TracedGraph::ValueShape parse_shape(const Json& j, bool batched, const std::string& what) {
  MR_CHECK(j.is_array(), value, what, ": \"shape\" must be a list, got ", j.dump());
  TracedGraph::ValueShape s;
  s.batched = batched;
  for (size_t i = 0; i < j.size(); ++i) {
    if (batched && i == 0) {
      MR_CHECK(j[i].is_null(), value, what,
               ": the shape must start with null (the batch axis), got ", j.dump());
      s.dims.push_back(-1);
      continue;
    }
    MR_CHECK(j[i].is_number_integer() && j[i].get<int64_t>() >= 0, value, what,
             ": dims must be integers >= 0, got ", j.dump());
    s.dims.push_back(j[i].get<int64_t>());
  }
  MR_CHECK(!batched || !s.dims.empty(), value, what, ": the shape must start with null, got ",
           j.dump());
  return s;
}

// The "shape" of an input / weight / constant entry: an object with only
// the keys in `allowed`.
const Json& entry_shape(const Json& e, std::initializer_list<const char*> allowed,
                        const std::string& what) {
  MR_CHECK(e.is_object() && e.contains("shape"), value, what,
           ": expected an object with a \"shape\", got ", e.dump());
  for (auto it = e.begin(); it != e.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    MR_CHECK(ok, value, what, ": unknown key \"", it.key(), "\"");
  }
  return e["shape"];
}

}  // namespace

TracedGraph::TracedGraph(const Json& g, bool fuse_unary_chains) {
  MR_CHECK(g.is_object(), value, "traced graph: expected a JSON object, got ", g.type_name());
  for (const char* key : {"inputs", "nodes", "outputs"})
    MR_CHECK(g.contains(key) && g[key].is_array(), value, "traced graph: \"", key,
             "\" must be a list");
  for (auto it = g.begin(); it != g.end(); ++it) {
    const std::string& key = it.key();
    MR_CHECK(key == "inputs" || key == "weights" || key == "constants" || key == "nodes" ||
                 key == "outputs",
             value, "traced graph: unknown key \"", key, "\"");
  }
  // An input is batched when its shape starts with null; any other shape is
  // a fixed-shape value (eager op_* on R arrays), whatever the rows.
  for (size_t i = 0; i < g["inputs"].size(); ++i) {
    const std::string what = "traced graph input " + std::to_string(i);
    const Json& sh = entry_shape(g["inputs"][i], {"shape"}, what);
    inputs_.push_back(parse_shape(sh, sh.is_array() && !sh.empty() && sh[0].is_null(), what));
  }
  if (g.contains("weights"))
    for (size_t i = 0; i < g["weights"].size(); ++i)
      weights_.push_back(parse_shape(
          entry_shape(g["weights"][i],
                      {"name", "shape", "initializer", "trainable", "regularizer", "constraint"},
                      "traced graph weight " + std::to_string(i)),
          false, "traced graph weight " + std::to_string(i)));
  if (g.contains("constants"))
    for (size_t i = 0; i < g["constants"].size(); ++i) {
      const Json& c = g["constants"][i];
      const std::string what = "traced graph constant " + std::to_string(i);
      constants_.push_back(parse_shape(entry_shape(c, {"shape", "values"}, what), false, what));
      const Json vals = c.value("values", Json());
      MR_CHECK(vals.is_array() && static_cast<int64_t>(vals.size()) ==
                                      prod(constants_.back(), 0, constants_.back().dims.size()),
               value, what, ": \"values\" must be a list of ",
               prod(constants_.back(), 0, constants_.back().dims.size()), " numbers");
      constant_offsets_.push_back(static_cast<int64_t>(constant_values_.size()));
      for (const Json& v : vals) {
        MR_CHECK(v.is_number(), value, what, ": values must be numbers, got ", v.dump());
        constant_values_.push_back(v.get<float>());
      }
    }
  const Json& nodes = g["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node nd;
    const Json& j = nodes[i];
    MR_CHECK(j.is_object() && j.contains("op") && j["op"].is_string(), value, "traced graph node ",
             i, ": expected an object with a string \"op\"");
    nd.op = j["op"].get<std::string>();
    if (j.contains("line") && j["line"].is_string()) nd.line = j["line"].get<std::string>();
    const NodeCtx c{static_cast<int>(i), nd};
    if (!j.contains("in") || !j["in"].is_array())
      node_fail(ErrorKind::value, c, "\"in\" must be a list");
    for (const Json& r : j["in"]) {
      if (!r.is_array() || r.size() != 2 || !r[0].is_string() || !r[1].is_number_integer())
        node_fail(ErrorKind::value, c, "operand references are [kind, index], got ", r.dump());
      const std::string kind = r[0].get<std::string>();
      const int64_t idx = r[1].get<int64_t>();
      Ref ref;
      int64_t limit = 0;
      if (kind == "input") {
        ref.kind = RefKind::input;
        limit = num_inputs();
      } else if (kind == "weight") {
        ref.kind = RefKind::weight;
        limit = num_weights();
      } else if (kind == "constant") {
        ref.kind = RefKind::constant;
        limit = static_cast<int64_t>(constants_.size());
      } else if (kind == "node") {
        ref.kind = RefKind::node;
        limit = static_cast<int64_t>(i);
      } else {
        node_fail(ErrorKind::value, c, "unknown reference kind \"", kind, "\"");
      }
      if (idx < 0 || idx >= limit)
        node_fail(ErrorKind::value, c, "reference ", r.dump(), " names no ",
                  kind == "node" ? "earlier node" : kind.c_str(), " (", limit, " available)");
      ref.index = static_cast<int>(idx);
      nd.in.push_back(ref);
    }
    std::vector<ValueShape> ops;
    for (const Ref& r : nd.in) ops.push_back(shape_of(r));
    infer_node(c.index, nd, ops, j);
    nodes_.push_back(std::move(nd));
  }
  for (const Json& r : g["outputs"]) {
    MR_CHECK(r.is_array() && r.size() == 2 && r[0].is_string() && r[1].is_number_integer(), value,
             "traced graph output: expected [kind, index], got ", r.dump());
    const std::string kind = r[0].get<std::string>();
    const int64_t idx = r[1].get<int64_t>();
    Ref ref;
    int64_t limit = 0;
    if (kind == "node") {
      limit = static_cast<int64_t>(nodes_.size());
    } else if (kind == "input") {
      ref.kind = RefKind::input;
      limit = num_inputs();
    } else {
      fail(ErrorKind::value, "traced graph output ", r.dump(), ": outputs are nodes or inputs");
    }
    MR_CHECK(idx >= 0 && idx < limit, value, "traced graph output ", r.dump(), " names no ", kind);
    ref.index = static_cast<int>(idx);
    outputs_.push_back(ref);
  }
  MR_CHECK(!outputs_.empty(), value, "traced graph: no outputs");
  plan();
  if (fuse_unary_chains) plan_unary_chains();
}

void TracedGraph::infer_node(int index, Node& nd, const std::vector<ValueShape>& ops,
                             const Json& j) {
  const NodeCtx c{index, nd};
  auto arity = [&](size_t n) {
    if (ops.size() != n) node_fail(ErrorKind::value, c, "takes ", n, " operands, got ", ops.size());
  };
  const TracedOpInfo info = traced_op_info(nd.op);
  if (info.kind < 0) node_fail(ErrorKind::value, c, "unknown op");
  nd.kind = info.kind;
  nd.sub = info.sub;
  const auto kind = static_cast<TracedKind>(info.kind);
  // Unknown keys and attributes are errors (a misspelt "keepdims" must not
  // silently become the default).
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "op" && it.key() != "in" && it.key() != "attrs" && it.key() != "line")
      node_fail(ErrorKind::value, c, "unknown key \"", it.key(), "\"");
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) node_fail(ErrorKind::value, c, "\"attrs\" must be an object");
    const std::vector<std::string> allowed = traced_op_attrs(kind, nd.op);
    for (auto it = j["attrs"].begin(); it != j["attrs"].end(); ++it)
      if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
        node_fail(ErrorKind::value, c, "unknown attribute \"", it.key(), "\"");
  }
  switch (kind) {
    case TracedKind::unary:
      arity(1);
      if (nd.op == "gelu") {
        const Json* a = attr(j, "approximate");
        if (a && !a->is_boolean())
          node_fail(ErrorKind::value, c, "\"approximate\" must be true or false");
        nd.sub = static_cast<int>((a == nullptr || a->get<bool>()) ? UnaryOp::gelu_tanh
                                                                   : UnaryOp::gelu_erf);
      }
      nd.shape = ops[0];
      break;
    case TracedKind::stop_gradient:
      arity(1);
      nd.shape = ops[0];
      break;
    case TracedKind::binary:
    case TracedKind::where: {
      arity(kind == TracedKind::binary ? 2 : 3);
      // The batch axis: every batched operand has it first at the same rank;
      // an operand without it must not reach that far (or be 1 there).
      int brank = -1;
      for (const ValueShape& s : ops)
        if (s.batched) {
          if (brank >= 0 && static_cast<int>(s.dims.size()) != brank)
            node_fail(ErrorKind::shape, c, "batched operands of different ranks do not broadcast");
          brank = static_cast<int>(s.dims.size());
        }
      std::vector<Shape> shapes;
      for (const ValueShape& s : ops) {
        std::vector<int64_t> d = s.dims;
        if (s.batched) d[0] = 2;
        if (brank >= 0 && !s.batched &&
            (static_cast<int>(d.size()) > brank ||
             (static_cast<int>(d.size()) == brank && d[0] != 1)))
          node_fail(ErrorKind::shape, c, "operand of shape ", dims_str(s),
                    " would broadcast along the batch axis");
        shapes.emplace_back(d);
      }
      try {
        nd.bc = make_broadcast(shapes);
        const Shape out = broadcast_shape(shapes);
        nd.shape.dims = out.dims();
      } catch (const Error& e) {
        node_fail(e.kind(), c, e.what());
      }
      nd.shape.batched = nd.bc_batched = brank >= 0;
      if (nd.bc_batched) nd.shape.dims[0] = -1;
      break;
    }
    case TracedKind::reduce:
    case TracedKind::mean:
    case TracedKind::softmax: {
      arity(1);
      const ValueShape& s = ops[0];
      const int rank = static_cast<int>(s.dims.size());
      std::vector<int> axes;
      const Json* ax = attr(j, "axis");
      const bool lse =
          kind == TracedKind::softmax && nd.sub == static_cast<int>(SoftmaxOp::logsumexp);
      if (kind == TracedKind::softmax && !lse && (ax == nullptr || ax->is_null())) {
        axes.push_back(rank - 1);  // Keras' softmax / log_softmax default axis = -1
      } else if (ax == nullptr || ax->is_null()) {
        for (int a = 0; a < rank; ++a) axes.push_back(a);
      } else if (ax->is_number_integer()) {
        axes.push_back(norm_axis(c, ax->get<int64_t>(), rank));
      } else if (ax->is_array() && kind != TracedKind::softmax) {
        for (const Json& a : *ax) {
          if (!a.is_number_integer()) node_fail(ErrorKind::value, c, "\"axis\" must hold integers");
          axes.push_back(norm_axis(c, a.get<int64_t>(), rank));
        }
      } else {
        node_fail(ErrorKind::value, c, "\"axis\" must be an integer",
                  kind == TracedKind::softmax ? "" : ", a list of integers or null", ", got ",
                  ax->dump());
      }
      std::sort(axes.begin(), axes.end());
      if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
        node_fail(ErrorKind::value, c, "\"axis\" repeats an axis");
      const Json* kd = attr(j, "keepdims");
      if (kd && !kd->is_boolean())
        node_fail(ErrorKind::value, c, "\"keepdims\" must be true or false");
      const bool keep = kd && kd->get<bool>();
      const size_t a0 =
          axes.empty() ? static_cast<size_t>(rank) : static_cast<size_t>(axes.front());
      const size_t a1 =
          axes.empty() ? static_cast<size_t>(rank) : static_cast<size_t>(axes.back()) + 1;
      const bool adjacent =
          axes.empty() || axes.back() - axes.front() + 1 == static_cast<int>(axes.size());
      std::vector<bool> reduced(s.dims.size(), false);
      for (int a : axes) reduced[static_cast<size_t>(a)] = true;
      if (adjacent) {
        nd.outer = prod(s, 0, a0);
        nd.extent = prod(s, a0, a1);
        nd.inner = prod(s, a1, s.dims.size());
        nd.rows_in = !s.batched ? 0 : (a0 > 0 ? 1 : 2);
      } else {
        // Axes apart (e.g. 1 and 3): a strided_copy moves the kept axes first
        // and the reduced ones last, then one reduction over the tail.
        if (s.dims.size() > static_cast<size_t>(kMaxStridedRank))
          node_fail(ErrorKind::value, c, "rank ", s.dims.size(), " is above ", kMaxStridedRank);
        for (int pass = 0; pass < 2; ++pass)
          for (size_t a = 0; a < s.dims.size(); ++a)
            if (reduced[a] == (pass == 1)) nd.perm.push_back(static_cast<int64_t>(a));
        nd.outer = nd.extent = 1;
        for (size_t a = 0; a < s.dims.size(); ++a)
          (reduced[a] ? nd.extent : nd.outer) *= (s.batched && a == 0) ? 1 : s.dims[a];
        nd.inner = 1;
        nd.rows_in = !s.batched ? 0 : (reduced[0] ? 2 : 1);
      }
      if (kind == TracedKind::softmax && !lse) {
        nd.shape = s;
        break;
      }
      nd.shape.batched = s.batched && !reduced[0];
      for (size_t a = 0; a < s.dims.size(); ++a) {
        if (reduced[a]) {
          if (keep) nd.shape.dims.push_back(1);
        } else {
          nd.shape.dims.push_back(s.dims[a]);
        }
      }
      break;
    }
    case TracedKind::reshape: {
      arity(1);
      const ValueShape& s = ops[0];
      const Json* sh = attr(j, "shape");
      if (!sh || !sh->is_array()) node_fail(ErrorKind::value, c, "\"shape\" must be a list");
      nd.shape.batched = s.batched;
      if (s.batched) nd.shape.dims.push_back(-1);
      int unknown = -1;
      int64_t known = 1;
      for (const Json& d : *sh) {
        if (!d.is_number_integer() || d.get<int64_t>() < -1)
          node_fail(ErrorKind::value, c, "\"shape\" entries must be integers >= -1, got ",
                    sh->dump());
        const int64_t v = d.get<int64_t>();
        if (v == -1) {
          if (unknown >= 0) node_fail(ErrorKind::value, c, "\"shape\" has more than one -1");
          unknown = static_cast<int>(nd.shape.dims.size());
        } else {
          known *= v;
        }
        nd.shape.dims.push_back(v);
      }
      const int64_t total = prod(s, 0, s.dims.size());
      if (unknown >= 0) {
        if (known == 0 || total % known != 0)
          node_fail(ErrorKind::shape, c, "cannot reshape ", dims_str(s), " to ", sh->dump());
        nd.shape.dims[static_cast<size_t>(unknown)] = total / known;
      } else if (known != total) {
        node_fail(ErrorKind::shape, c, "cannot reshape ", dims_str(s), " (", total,
                  " elements per sample) to ", sh->dump());
      }
      nd.view = true;
      break;
    }
    case TracedKind::expand_dims: {
      arity(1);
      const ValueShape& s = ops[0];
      const Json* ax = attr(j, "axis");
      if (!ax || !ax->is_number_integer())
        node_fail(ErrorKind::value, c, "\"axis\" must be an integer");
      const int a = norm_axis(c, ax->get<int64_t>(), static_cast<int>(s.dims.size()) + 1);
      if (s.batched && a == 0)
        node_fail(ErrorKind::value, c, "cannot insert an axis before the batch axis");
      nd.shape = s;
      nd.shape.dims.insert(nd.shape.dims.begin() + a, 1);
      nd.view = true;
      break;
    }
    case TracedKind::squeeze: {
      arity(1);
      const ValueShape& s = ops[0];
      const Json* ax = attr(j, "axis");
      nd.shape.batched = s.batched;
      std::vector<bool> drop(s.dims.size(), false);
      if (!ax || ax->is_null()) {
        for (size_t a = s.batched ? 1 : 0; a < s.dims.size(); ++a) drop[a] = s.dims[a] == 1;
      } else if (ax->is_number_integer()) {
        const int a = norm_axis(c, ax->get<int64_t>(), static_cast<int>(s.dims.size()));
        if (s.batched && a == 0) node_fail(ErrorKind::value, c, "cannot squeeze the batch axis");
        if (s.dims[static_cast<size_t>(a)] != 1)
          node_fail(ErrorKind::shape, c, "axis ", a, " of ", dims_str(s), " is not of size 1");
        drop[static_cast<size_t>(a)] = true;
      } else {
        node_fail(ErrorKind::value, c, "\"axis\" must be an integer or null");
      }
      for (size_t a = 0; a < s.dims.size(); ++a)
        if (!drop[a]) nd.shape.dims.push_back(s.dims[a]);
      nd.view = true;
      break;
    }
    case TracedKind::transpose: {
      arity(1);
      const ValueShape& s = ops[0];
      const int rank = static_cast<int>(s.dims.size());
      const Json* ax = attr(j, "axes");
      if (!ax || !ax->is_array() || static_cast<int>(ax->size()) != rank)
        node_fail(ErrorKind::value, c, "\"axes\" must list all ", rank, " axes");
      if (rank > kMaxStridedRank)
        node_fail(ErrorKind::value, c, "rank ", rank, " is above ", kMaxStridedRank);
      std::vector<bool> seen(static_cast<size_t>(rank), false);
      for (const Json& a : *ax) {
        if (!a.is_number_integer()) node_fail(ErrorKind::value, c, "\"axes\" must hold integers");
        const int p = norm_axis(c, a.get<int64_t>(), rank);
        if (seen[static_cast<size_t>(p)])
          node_fail(ErrorKind::value, c, "\"axes\" repeats axis ", p);
        seen[static_cast<size_t>(p)] = true;
        nd.perm.push_back(p);
      }
      if (s.batched && nd.perm[0] != 0)
        node_fail(ErrorKind::value, c, "the batch axis 0 must stay first, got axes ", ax->dump());
      nd.shape.batched = s.batched;
      for (int p : nd.perm) nd.shape.dims.push_back(s.dims[static_cast<size_t>(p)]);
      break;
    }
    case TracedKind::one_hot:
    case TracedKind::argmax:
    case TracedKind::take_along_axis:
    case TracedKind::concatenate:
    case TracedKind::cast:
    case TracedKind::slice:
    case TracedKind::take:
      infer_index_node(index, nd, ops, j);
      break;
    case TracedKind::dropout: {
      arity(1);
      const Json* r = attr(j, "rate");
      if (!r || !r->is_number() || !(r->get<double>() >= 0.0 && r->get<double>() < 1.0))
        node_fail(ErrorKind::value, c, "\"rate\" must be a number in [0, 1)");
      const Json* sd = attr(j, "seed");
      if (!sd || !sd->is_number_integer() || sd->get<int64_t>() < 0)
        node_fail(ErrorKind::value, c, "\"seed\" must be a non-negative integer");
      nd.rate = static_cast<float>(r->get<double>());
      nd.seed = static_cast<uint64_t>(sd->get<int64_t>());
      nd.shape = ops[0];
      break;
    }
    case TracedKind::matmul: {
      arity(2);
      const ValueShape& a = ops[0];
      const ValueShape& b = ops[1];
      const size_t ra = a.dims.size(), rb = b.dims.size();
      if (!b.batched && rb == 2 && ra >= 1 && !(a.batched && ra < 2)) {
        if (a.dims.back() != b.dims[0])
          node_fail(ErrorKind::shape, c, "shapes ", dims_str(a), " and ", dims_str(b),
                    " do not multiply");
        nd.k = b.dims[0];
        nd.n = b.dims[1];
        nd.m = prod(a, 0, ra - 1);  // times rows when batched
        nd.loops = 0;
        nd.shape.batched = a.batched;
        nd.shape.dims.assign(a.dims.begin(), a.dims.end() - 1);
        nd.shape.dims.push_back(nd.n);
      } else if (a.batched && b.batched && ra == rb && ra >= 3) {
        for (size_t d = 1; d + 2 < ra; ++d)
          if (a.dims[d] != b.dims[d])
            node_fail(ErrorKind::shape, c, "leading axes of ", dims_str(a), " and ", dims_str(b),
                      " differ");
        if (a.dims[ra - 1] != b.dims[ra - 2])
          node_fail(ErrorKind::shape, c, "shapes ", dims_str(a), " and ", dims_str(b),
                    " do not multiply");
        nd.m = a.dims[ra - 2];
        nd.k = a.dims[ra - 1];
        nd.n = b.dims[rb - 1];
        nd.loops = prod(a, 0, ra - 2);  // per row
        nd.shape.batched = true;
        nd.shape.dims.assign(a.dims.begin(), a.dims.end() - 1);
        nd.shape.dims.push_back(nd.n);
      } else {
        node_fail(ErrorKind::value, c, "matmul of ", dims_str(a), " and ", dims_str(b),
                  " is not supported yet (supported: x times a [k, n] weight or constant, or two "
                  "batched tensors with the same leading axes)");
      }
      break;
    }
  }
}

const TracedGraph::ValueShape& TracedGraph::shape_of(Ref r) const {
  switch (r.kind) {
    case RefKind::input:
      return inputs_[static_cast<size_t>(r.index)];
    case RefKind::weight:
      return weights_[static_cast<size_t>(r.index)];
    case RefKind::constant:
      return constants_[static_cast<size_t>(r.index)];
    case RefKind::node:
    default:
      return nodes_[static_cast<size_t>(r.index)].shape;
  }
}

int64_t TracedGraph::floats(const ValueShape& s, int64_t rows) const {
  const int64_t p = prod(s, 0, s.dims.size());
  return s.batched ? p * rows : p;
}

std::vector<TracedGraph::ValueShape> TracedGraph::output_shapes() const {
  std::vector<ValueShape> out;
  for (const Ref& r : outputs_) out.push_back(shape_of(r));
  return out;
}

int64_t TracedGraph::output_floats(int i, int64_t rows) const {
  return floats(shape_of(outputs_.at(static_cast<size_t>(i))), rows);
}

void TracedGraph::upload_constants(Backend& be, float* dst) const {
  if (!constant_values_.empty())
    be.upload(dst, constant_values_.data(), constant_values_.size() * sizeof(float));
}

bool TracedGraph::ref_needs_grad(Ref r) const {
  switch (r.kind) {
    case RefKind::input:
    case RefKind::weight:
      return true;
    case RefKind::constant:
      return false;
    case RefKind::node:
    default:
      return nodes_[static_cast<size_t>(r.index)].needs_grad;
  }
}

bool TracedGraph::grad_flows(const Node& nd, size_t k) const {
  switch (static_cast<TracedKind>(nd.kind)) {
    case TracedKind::stop_gradient:
    case TracedKind::one_hot:
    case TracedKind::argmax:
      return false;
    case TracedKind::binary:
      return !is_comparison(static_cast<BinaryOp>(nd.sub));
    case TracedKind::where:
      return k >= 1;
    case TracedKind::take_along_axis:
    case TracedKind::take:
      return k == 0;
    case TracedKind::cast:  // straight through for float16 / bfloat16 (TF)
      return nd.sub == static_cast<int>(CastOp::float16) ||
             nd.sub == static_cast<int>(CastOp::bfloat16);
    default:
      return true;
  }
}

int64_t TracedGraph::scratch_floats(int64_t rows) const {
  return scratch_per_row() * rows + scratch_fixed();
}

// Roots, needs_grad, buffer offsets, and which VJP contribution to each
// gradient buffer comes first in backward's order (it writes; later ones
// accumulate): backward seeds the outputs, then walks the nodes in reverse.
void TracedGraph::plan() {
  auto grow_tmp = [&](const ValueShape& s) {
    const int64_t p = prod(s, 0, s.dims.size());
    if (s.batched)
      tmp_pr_ = std::max(tmp_pr_, p);
    else
      tmp_fixed_ = std::max(tmp_fixed_, p);
  };
  for (const auto* group : {&inputs_, &weights_, &constants_})
    for (const ValueShape& s : *group) grow_tmp(s);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& nd = nodes_[i];
    grow_tmp(nd.shape);
    const auto kind = static_cast<TracedKind>(nd.kind);
    const Ref self{RefKind::node, static_cast<int>(i)};
    if (nd.view) {
      const Ref src = nd.in[0];
      nd.value_root =
          src.kind == RefKind::node ? nodes_[static_cast<size_t>(src.index)].value_root : src;
      nd.grad_root =
          src.kind == RefKind::node ? nodes_[static_cast<size_t>(src.index)].grad_root : src;
      nd.needs_grad = ref_needs_grad(src);
      continue;
    }
    nd.value_root = nd.grad_root = self;
    for (size_t k = 0; k < nd.in.size(); ++k)
      nd.needs_grad = nd.needs_grad || (grad_flows(nd, k) && ref_needs_grad(nd.in[k]));
    if (kind == TracedKind::take_along_axis) {
      // x broadcast (forward's temporary; its gradient in backward's), and
      // the broadcast indices kept in aux for backward.
      const int64_t bx = nd.bx_floats;
      (nd.shape.batched ? tmp_pr_ : tmp_fixed_) =
          std::max(nd.shape.batched ? tmp_pr_ : tmp_fixed_, bx);
      if (nd.bcast_i) {
        int64_t& pa = nd.shape.batched ? aux_pr_ : aux_fixed_;
        nd.idx_off = pa;
        pa += prod(nd.shape, 0, nd.shape.dims.size());
      }
    }
    if (kind == TracedKind::dropout) {
      // The mask, kept in aux for backward.
      int64_t& pa = nd.shape.batched ? aux_pr_ : aux_fixed_;
      nd.mask_off = pa;
      pa += prod(nd.shape, 0, nd.shape.dims.size());
    }
    if (!nd.perm.empty() && kind != TracedKind::transpose) {
      // The operand of a reduction over axes apart, permuted (kept for max / min's VJP).
      const ValueShape& src = shape_of(nd.in[0]);
      int64_t& pa = src.batched ? aux_pr_ : aux_fixed_;
      nd.perm_off = pa;
      pa += prod(src, 0, src.dims.size());
    }
    const int64_t p = prod(nd.shape, 0, nd.shape.dims.size());
    int64_t& aux = nd.shape.batched ? aux_pr_ : aux_fixed_;
    nd.value_off = aux;
    aux += p;
    if (nd.needs_grad) {
      int64_t& gr = nd.shape.batched ? grad_pr_ : grad_fixed_;
      nd.grad_off = gr;
      gr += p;
    }
  }
  for (const ValueShape& s : inputs_) {
    int64_t& sk = s.batched ? sink_pr_ : sink_fixed_;
    sink_off_.push_back(sk);
    sk += prod(s, 0, s.dims.size());
  }
  for (const ValueShape& s : weights_) {
    wsink_off_.push_back(sink_fixed_);
    sink_fixed_ += prod(s, 0, s.dims.size());
  }
  // First writes. Keys: inputs, then weights, then nodes.
  std::vector<bool> written(inputs_.size() + weights_.size() + nodes_.size(), false);
  auto key = [&](Ref r) {
    if (r.kind == RefKind::input) return static_cast<size_t>(r.index);
    if (r.kind == RefKind::weight) return inputs_.size() + static_cast<size_t>(r.index);
    return inputs_.size() + weights_.size() + static_cast<size_t>(r.index);
  };
  auto root = [&](Ref r) {
    return r.kind == RefKind::node ? nodes_[static_cast<size_t>(r.index)].grad_root : r;
  };
  for (const Ref& r : outputs_) {
    const bool g = ref_needs_grad(r);
    output_grad_.push_back(g);
    output_first_.push_back(g && !written[key(root(r))]);
    if (g) written[key(root(r))] = true;
  }
  for (size_t i = nodes_.size(); i-- > 0;) {
    Node& nd = nodes_[i];
    if (nd.view || !nd.needs_grad) continue;
    nd.runs_vjp = written[key(Ref{RefKind::node, static_cast<int>(i)})];
    if (!nd.runs_vjp) continue;
    for (size_t k = 0; k < nd.in.size(); ++k) {
      if (!grad_flows(nd, k) || !ref_needs_grad(nd.in[k])) continue;
      const size_t w = key(root(nd.in[k]));
      nd.first_write[k] = !written[w];
      written[w] = true;
    }
  }
  for (size_t i = 0; i < inputs_.size(); ++i) input_written_.push_back(written[i]);
  for (size_t i = 0; i < weights_.size(); ++i)
    weight_written_.push_back(written[inputs_.size() + i]);
}

}  // namespace mr
