// TracedGraph: shape inference of the index, copy and cast ops (issue 15,
// i15-ops): one_hot, argmax, take_along_axis, concatenate, stack, cast,
// slice. The JSON contract (Keras' names and semantics) is in
// docs/traced-graphs.md §3; their forward and VJP: traced_index_ops.cpp.
// Axes in JSON are axes of the whole tensor, the batch axis included; an op
// that would insert, remove, gather or concatenate along the batch axis of
// a batched value is an error (the rows are this replica's, not the batch).
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/traced_graph.h"
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

// The integer attribute `key`, or `dflt` when absent (required: absent is
// an error).
int64_t int_attr(const NodeCtx& c, const Json& j, const char* key, bool required, int64_t dflt) {
  const Json* a = attr(j, key);
  if (a == nullptr || (!required && a->is_null())) {
    if (required)
      node_fail(ErrorKind::value, c, "attribute \"", key, "\" (an integer) is required");
    return dflt;
  }
  if (!a->is_number_integer())
    node_fail(ErrorKind::value, c, "\"", key, "\" must be an integer, got ", a->dump());
  return a->get<int64_t>();
}

// dims with the batch placeholder as 2 (make_broadcast's batch extent, see
// traced::at_rows).
std::vector<int64_t> dims2(const TracedGraph::ValueShape& s) {
  std::vector<int64_t> d = s.dims;
  if (s.batched) d[0] = 2;
  return d;
}

void check_rank(const NodeCtx& c, size_t rank) {
  if (rank > static_cast<size_t>(kMaxStridedRank))
    node_fail(ErrorKind::value, c, "rank ", rank, " is above ", kMaxStridedRank);
}

bool parse_cast(const std::string& name, int* sub, bool* identity) {
  *identity = name == "float32" || name == "float64";
  if (*identity) return true;
  for (int k = 0; k < kCastOpCount; ++k)
    if (name == op_name(static_cast<CastOp>(k))) {
      *sub = k;
      return true;
    }
  return false;
}

}  // namespace

void TracedGraph::infer_index_node(int index, Node& nd, const std::vector<ValueShape>& ops,
                                   const Json& j) {
  const NodeCtx c{index, nd};
  auto arity = [&](size_t n) {
    if (ops.size() != n) node_fail(ErrorKind::value, c, "takes ", n, " operands, got ", ops.size());
  };
  switch (static_cast<TracedKind>(nd.kind)) {
    case TracedKind::one_hot: {
      // Backend::one_hot over x viewed as outer x inner, the classes between.
      arity(1);
      const ValueShape& s = ops[0];
      const int64_t classes = int_attr(c, j, "num_classes", true, 0);
      if (classes <= 0)
        node_fail(ErrorKind::value, c, "\"num_classes\" must be > 0, got ", classes);
      const int rank = static_cast<int>(s.dims.size()) + 1;
      const int a = norm_axis(c, int_attr(c, j, "axis", false, -1), rank);
      if (s.batched && a == 0)
        node_fail(ErrorKind::value, c, "cannot insert the class axis before the batch axis");
      nd.outer = prod(s, 0, static_cast<size_t>(a));
      nd.extent = classes;
      nd.inner = prod(s, static_cast<size_t>(a), s.dims.size());
      nd.rows_in = s.batched ? 1 : 0;
      nd.axis = a;
      nd.shape = s;
      nd.shape.dims.insert(nd.shape.dims.begin() + a, classes);
      break;
    }
    case TracedKind::argmax: {
      arity(1);
      const ValueShape& s = ops[0];
      const int rank = static_cast<int>(s.dims.size());
      const int a = norm_axis(c, int_attr(c, j, "axis", true, 0), rank);
      if (s.batched && a == 0)
        node_fail(ErrorKind::value, c,
                  "cannot reduce the batch axis (axis 0) of a batched value of shape ",
                  dims_str(s));
      const Json* kd = attr(j, "keepdims");
      if (kd && !kd->is_boolean())
        node_fail(ErrorKind::value, c, "\"keepdims\" must be true or false");
      if (s.dims[static_cast<size_t>(a)] == 0)
        node_fail(ErrorKind::shape, c, "argmax of an empty axis ", a, " of ", dims_str(s));
      nd.outer = prod(s, 0, static_cast<size_t>(a));
      nd.extent = s.dims[static_cast<size_t>(a)];
      nd.inner = prod(s, static_cast<size_t>(a) + 1, s.dims.size());
      nd.rows_in = s.batched ? 1 : 0;
      nd.axis = a;
      nd.shape = s;
      if (kd && kd->get<bool>())
        nd.shape.dims[static_cast<size_t>(a)] = 1;
      else
        nd.shape.dims.erase(nd.shape.dims.begin() + a);
      break;
    }
    case TracedKind::take: {
      // Rows of table x (unbatched, rows along axis 0) by indices of any
      // shape: the output is the indices' shape followed by x's other axes.
      arity(2);
      const ValueShape& x = ops[0];
      const ValueShape& ix = ops[1];
      if (int_attr(c, j, "axis", true, 0) != 0)
        node_fail(ErrorKind::value, c, "take is supported along axis 0 of the table only");
      if (x.batched || x.dims.empty())
        node_fail(ErrorKind::value, c,
                  "the table of take must be a weight or constant of rank >= 1 ",
                  "(rows along axis 0), not a value of shape ", dims_str(x));
      nd.k = x.dims[0];                    // rows of the table
      nd.n = prod(x, 1, x.dims.size());    // floats per row
      nd.m = prod(ix, 0, ix.dims.size());  // indices per row of the batch (or in all)
      nd.shape.batched = ix.batched;
      nd.shape.dims = ix.dims;
      nd.shape.dims.insert(nd.shape.dims.end(), x.dims.begin() + 1, x.dims.end());
      check_rank(c, nd.shape.dims.size());
      break;
    }
    case TracedKind::take_along_axis: {
      arity(2);
      const ValueShape& x = ops[0];
      const ValueShape& ix = ops[1];
      if (x.dims.size() != ix.dims.size())
        node_fail(ErrorKind::shape, c, "indices of shape ", dims_str(ix),
                  " must have the rank of x, ", dims_str(x));
      const int rank = static_cast<int>(x.dims.size());
      const int a = norm_axis(c, int_attr(c, j, "axis", true, 0), rank);
      const bool batched = x.batched || ix.batched;
      if (batched && a == 0)
        node_fail(ErrorKind::value, c, "cannot take along the batch axis (axis 0)");
      check_rank(c, static_cast<size_t>(rank));
      // A fixed operand beside a batched one broadcasts along the rows only
      // with extent 1 there (as binary ops).
      for (const ValueShape* s : {&x, &ix})
        if (batched && !s->batched && s->dims[0] != 1)
          node_fail(ErrorKind::shape, c, "operand of shape ", dims_str(*s),
                    " would broadcast along the batch axis");
      const std::vector<int64_t> dx = dims2(x), di = dims2(ix);
      std::vector<int64_t> bx(dx.size()), out(dx.size());
      for (size_t d = 0; d < dx.size(); ++d) {
        if (static_cast<int>(d) == a) {
          bx[d] = dx[d];
          out[d] = di[d];
          continue;
        }
        if (dx[d] != di[d] && dx[d] != 1 && di[d] != 1)
          node_fail(ErrorKind::shape, c, "x of shape ", dims_str(x), " and indices of shape ",
                    dims_str(ix), " do not broadcast (axis ", d, ")");
        bx[d] = out[d] = dx[d] == 1 ? di[d] : dx[d];
      }
      nd.bcast_x = bx != dx;
      nd.bcast_i = out != di;
      try {
        if (nd.bcast_x) nd.bc = make_broadcast({Shape(bx), Shape(dx)});
        if (nd.bcast_i) nd.bc2 = make_broadcast({Shape(out), Shape(di)});
      } catch (const Error& e) {
        node_fail(e.kind(), c, e.what());
      }
      nd.bc_batched = batched;
      nd.shape.batched = batched;
      nd.shape.dims = out;
      if (batched) nd.shape.dims[0] = -1;
      ValueShape bxs{batched, bx};
      if (batched) bxs.dims[0] = -1;
      nd.bx_floats = prod(bxs, 0, bxs.dims.size());
      nd.outer = prod(bxs, 0, static_cast<size_t>(a));
      nd.extent = bx[static_cast<size_t>(a)];
      nd.k = out[static_cast<size_t>(a)];
      nd.inner = prod(bxs, static_cast<size_t>(a) + 1, bx.size());
      nd.rows_in = batched ? 1 : 0;
      nd.axis = a;
      break;
    }
    case TracedKind::concatenate: {
      const bool stack = nd.sub == 1;
      if (ops.empty()) node_fail(ErrorKind::value, c, "takes at least one operand");
      const ValueShape& s0 = ops[0];
      for (const ValueShape& s : ops)
        if (s.batched != s0.batched)
          node_fail(ErrorKind::value, c, "cannot mix batched and unbatched operands (",
                    dims_str(s0), " and ", dims_str(s), ")");
      const int rank = static_cast<int>(s0.dims.size()) + (stack ? 1 : 0);
      const int a = norm_axis(c, int_attr(c, j, "axis", false, stack ? 0 : -1), rank);
      if (s0.batched && a == 0)
        node_fail(ErrorKind::value, c, "cannot ", stack ? "stack" : "concatenate",
                  " along the batch axis (axis 0) of batched values");
      check_rank(c, static_cast<size_t>(rank));
      nd.shape = s0;
      if (stack) nd.shape.dims.insert(nd.shape.dims.begin() + a, 0);
      nd.shape.dims[static_cast<size_t>(a)] = 0;
      for (const ValueShape& s : ops) {
        bool same = s.dims.size() == s0.dims.size();
        for (size_t d = 0; same && d < s.dims.size(); ++d)
          same = s.dims[d] == s0.dims[d] || (!stack && static_cast<int>(d) == a);
        if (!same && stack)
          node_fail(ErrorKind::shape, c, "shapes must be equal, got ", dims_str(s0), " and ",
                    dims_str(s));
        if (!same)
          node_fail(ErrorKind::shape, c, "shapes ", dims_str(s0), " and ", dims_str(s),
                    " differ outside axis ", a);
        const int64_t ext = stack ? 1 : s.dims[static_cast<size_t>(a)];
        nd.starts.push_back(nd.shape.dims[static_cast<size_t>(a)]);
        nd.extents.push_back(ext);
        nd.shape.dims[static_cast<size_t>(a)] += ext;
      }
      nd.axis = a;
      break;
    }
    case TracedKind::cast: {
      arity(1);
      const Json* dt = attr(j, "dtype");
      bool identity = false;
      if (dt == nullptr || !dt->is_string() ||
          !parse_cast(dt->get<std::string>(), &nd.sub, &identity))
        node_fail(ErrorKind::value, c,
                  "\"dtype\" must be one of \"float32\", \"float64\", \"float16\", \"bfloat16\", "
                  "\"int8\", \"int16\", \"int32\", \"int64\", \"uint8\", \"bool\"; got ",
                  dt == nullptr ? std::string("nothing") : dt->dump());
      nd.shape = ops[0];
      nd.view = identity;  // every value is f32 already
      break;
    }
    case TracedKind::slice: {
      arity(1);
      const ValueShape& s = ops[0];
      const size_t rank = s.dims.size();
      const Json* st = attr(j, "start_indices");
      const Json* sh = attr(j, "shape");
      if (!st || !st->is_array() || st->size() != rank || !sh || !sh->is_array() ||
          sh->size() != rank)
        node_fail(ErrorKind::value, c, "\"start_indices\" and \"shape\" must list ", rank,
                  " entries (one per axis of ", dims_str(s), ")");
      check_rank(c, rank);
      nd.shape.batched = s.batched;
      for (size_t d = 0; d < rank; ++d) {
        const Json& a = (*st)[d];
        const Json& b = (*sh)[d];
        if (s.batched && d == 0) {
          if (!a.is_number_integer() || a.get<int64_t>() != 0 || !b.is_null())
            node_fail(ErrorKind::value, c,
                      "the batch axis takes start 0 and shape null (all rows), got ", a.dump(),
                      " and ", b.dump());
          nd.starts.push_back(0);
          nd.shape.dims.push_back(-1);
          continue;
        }
        if (!a.is_number_integer() || !b.is_number_integer() || a.get<int64_t>() < 0 ||
            b.get<int64_t>() < 0)
          node_fail(ErrorKind::value, c, "axis ", d,
                    ": start and shape must be integers >= 0, got ", a.dump(), " and ", b.dump());
        const int64_t from = a.get<int64_t>(), len = b.get<int64_t>();
        if (from + len > s.dims[d])
          node_fail(ErrorKind::value, c, "axis ", d, ": the box [", from, ", ", from + len,
                    ") leaves 0..", s.dims[d] - 1, " of ", dims_str(s));
        nd.starts.push_back(from);
        nd.shape.dims.push_back(len);
      }
      break;
    }
    default:
      node_fail(ErrorKind::internal, c, "not an index op");
  }
}

}  // namespace mr
