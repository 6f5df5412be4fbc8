// Helpers shared by TracedGraph's translation units (traced_graph.cpp,
// traced_shapes.cpp, traced_ops.cpp, traced_index_ops.cpp): shape printing
// and products, the node-naming error, axis normalisation, attribute lookup,
// and the run-time views of a node at a given row count. Internal.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/json.h"
#include "core/op_kinds.h"
#include "nn/traced_graph.h"

namespace mr {
namespace traced {

inline std::string dims_str(const TracedGraph::ValueShape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t j = 0; j < s.dims.size(); ++j) {
    if (j) os << ", ";
    if (s.batched && j == 0)
      os << "None";
    else
      os << s.dims[j];
  }
  os << ")";
  return os.str();
}

// Product of dims[from, to), the batch placeholder counting 1.
inline int64_t prod(const TracedGraph::ValueShape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t j = from; j < to; ++j)
    if (!(s.batched && j == 0)) p *= s.dims[j];
  return p;
}

struct NodeCtx {
  int index;
  const TracedGraph::Node& node;
};

// mr::Error of `kind` naming the node's index, op and R line.
template <typename... Parts>
[[noreturn]] void node_fail(ErrorKind kind, const NodeCtx& c, Parts&&... parts) {
  if (c.node.line.empty())
    fail(kind, "traced graph node ", c.index, " (op \"", c.node.op,
         "\"): ", std::forward<Parts>(parts)...);
  fail(kind, "traced graph node ", c.index, " (op \"", c.node.op, "\", ", c.node.line,
       "): ", std::forward<Parts>(parts)...);
}

inline int norm_axis(const NodeCtx& c, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    node_fail(ErrorKind::value, c, "axis ", axis, " is out of range for rank ", rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

inline const Json* attr(const Json& node, const char* key) {
  auto a = node.find("attrs");
  if (a == node.end() || !a->is_object()) return nullptr;
  auto v = a->find(key);
  return v == a->end() ? nullptr : &*v;
}

// The Broadcast of a node at `rows` rows: the plan's batch extent 2 is the
// outer factor of merged axis 0 (the batch axis is first and never dropped).
inline Broadcast at_rows(const Broadcast& g, bool batched, int64_t rows) {
  Broadcast r = g;
  if (batched) {
    r.dims[0] = g.dims[0] / 2 * rows;
    r.size = g.size / 2 * rows;
  }
  return r;
}

struct View3 {
  int64_t outer, extent, inner;
};

inline View3 view_at(const TracedGraph::Node& nd, int64_t rows) {
  View3 v{nd.outer, nd.extent, nd.inner};
  if (nd.rows_in == 1) v.outer *= rows;
  if (nd.rows_in == 2) v.extent *= rows;
  return v;
}

}  // namespace traced

// Every pointer a run needs, resolved once per call (no allocation).
struct TracedGraph::Ptrs {
  int64_t rows = 0;
  const float* const* inputs = nullptr;
  const float* const* weights = nullptr;
  const float* constants = nullptr;
  float* aux = nullptr;
  float* grads = nullptr;  // per-row region, then fixed region
  float* sinks = nullptr;  // per-row sinks (batched inputs), then fixed (weights, other inputs)
  float* const* d_inputs = nullptr;
  float* const* d_weights = nullptr;
  float* tmp[3] = {nullptr, nullptr, nullptr};
  const TracedRun* run = nullptr;  // never null inside forward() / backward()
};

}  // namespace mr
