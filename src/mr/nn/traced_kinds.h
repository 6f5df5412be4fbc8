// The op table's kinds of traced graphs (nn/traced_graph.h): which family
// an op name of the graph JSON belongs to. Internal to traced_graph.cpp and
// traced_ops.cpp.
#pragma once

#include <string>
#include <vector>

namespace mr {

enum class TracedKind {
  unary,
  binary,
  where,
  reduce,   // sum, max, min
  mean,     // sum, then times 1 / count
  softmax,  // softmax, log_softmax, logsumexp
  reshape,
  expand_dims,
  squeeze,
  transpose,
  matmul,
  stop_gradient,
  // ---- i15-ops: index, copy and cast ops (traced_shapes.cpp, traced_index_ops.cpp) ----
  one_hot,
  argmax,
  take_along_axis,
  concatenate,  // also stack (a new axis of extent 1 per operand)
  cast,         // sub: CastOp; float32 / float64 are views
  slice,
  dropout,  // Keras' Dropout: drops while training only (traced_random_ops.cpp)
  take      // rows of an unbatched table by indices (Keras' take, axis 0; an embedding lookup)
};

// kind < 0: no such op. sub: the UnaryOp / BinaryOp / ReduceOp / SoftmaxOp.
struct TracedOpInfo {
  int kind = -1;
  int sub = 0;
};
TracedOpInfo traced_op_info(const std::string& op);
// The attribute names an op of `kind` (named `op`) takes (Keras' names).
std::vector<std::string> traced_op_attrs(TracedKind kind, const std::string& op);

}  // namespace mr
