// Names of the traced-graph op kinds, and the broadcasting box (op_kinds.h).
#include "core/op_kinds.h"

#include <cstddef>

#include "core/error.h"

namespace mr {

const char* op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::negative:
      return "negative";
    case UnaryOp::abs:
      return "abs";
    case UnaryOp::sign:
      return "sign";
    case UnaryOp::square:
      return "square";
    case UnaryOp::sqrt:
      return "sqrt";
    case UnaryOp::exp:
      return "exp";
    case UnaryOp::log:
      return "log";
    case UnaryOp::log1p:
      return "log1p";
    case UnaryOp::relu:
      return "relu";
    case UnaryOp::sigmoid:
      return "sigmoid";
    case UnaryOp::tanh:
      return "tanh";
    case UnaryOp::gelu_tanh:
      return "gelu_tanh";
    case UnaryOp::gelu_erf:
      return "gelu_erf";
    case UnaryOp::silu:
      return "silu";
  }
  return "unknown unary op";
}

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add:
      return "add";
    case BinaryOp::subtract:
      return "subtract";
    case BinaryOp::multiply:
      return "multiply";
    case BinaryOp::divide:
      return "divide";
    case BinaryOp::power:
      return "power";
    case BinaryOp::maximum:
      return "maximum";
    case BinaryOp::minimum:
      return "minimum";
    case BinaryOp::equal:
      return "equal";
    case BinaryOp::not_equal:
      return "not_equal";
    case BinaryOp::less:
      return "less";
    case BinaryOp::less_equal:
      return "less_equal";
    case BinaryOp::greater:
      return "greater";
    case BinaryOp::greater_equal:
      return "greater_equal";
  }
  return "unknown binary op";
}

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "unknown reduction";
}

const char* op_name(SoftmaxOp op) {
  switch (op) {
    case SoftmaxOp::softmax:
      return "softmax";
    case SoftmaxOp::log_softmax:
      return "log_softmax";
    case SoftmaxOp::logsumexp:
      return "logsumexp";
  }
  return "unknown softmax op";
}

// The comparisons are BinaryOp's last enumerators (op_kinds.h).
bool is_comparison(BinaryOp op) { return op >= BinaryOp::equal; }

namespace {
void check_op_index(int v, int count, const char* kind, const char* fn) {
  MR_CHECK(v >= 0 && v < count, internal, fn, ": ", kind, " ", v, " is not one of the ", count,
           " kinds");
}
}  // namespace

void check_op(UnaryOp op, const char* fn) {
  check_op_index(static_cast<int>(op), kUnaryOpCount, "UnaryOp", fn);
}
void check_op(BinaryOp op, const char* fn) {
  check_op_index(static_cast<int>(op), kBinaryOpCount, "BinaryOp", fn);
}
void check_op(ReduceOp op, const char* fn) {
  check_op_index(static_cast<int>(op), kReduceOpCount, "ReduceOp", fn);
}
void check_op(SoftmaxOp op, const char* fn) {
  check_op_index(static_cast<int>(op), kSoftmaxOpCount, "SoftmaxOp", fn);
}

void check_axis_view(int64_t outer, int64_t extent, int64_t inner, const char* fn) {
  MR_CHECK(outer >= 0 && extent >= 0 && inner >= 0, internal, fn, ": a view of ", outer, " x ",
           extent, " x ", inner, " (expected outer, extent, inner >= 0)");
}

void check_broadcast(const Broadcast& g, int operands, const char* fn) {
  MR_CHECK(g.operands == operands && g.rank >= 0 && g.rank <= kMaxStridedRank, internal, fn,
           ": a broadcast of ", g.operands, " operands and rank ", g.rank, " (expected ", operands,
           " operands, rank <= ", kMaxStridedRank, ")");
}

namespace {

std::string shapes_text(const std::vector<Shape>& operands) {
  std::string s;
  for (size_t k = 0; k < operands.size(); ++k) {
    if (k > 0) s += k + 1 == operands.size() ? " and " : ", ";
    s += operands[k].str();
  }
  return s;
}

}  // namespace

Shape broadcast_shape(const std::vector<Shape>& operands) {
  int rank = 0;
  for (const Shape& s : operands) rank = s.rank() > rank ? s.rank() : rank;
  std::vector<int64_t> out(static_cast<size_t>(rank), 1);
  for (const Shape& s : operands) {
    const int pad = rank - s.rank();
    for (int j = 0; j < s.rank(); ++j) {
      int64_t& o = out[static_cast<size_t>(pad + j)];
      const int64_t d = s[j];
      if (d == o || d == 1) continue;
      MR_CHECK(o == 1, shape, "cannot broadcast shapes ", shapes_text(operands), ": axis ", pad + j,
               " (counted in the broadcast shape) has sizes ", o, " and ", d);
      o = d;
    }
  }
  return Shape(std::move(out));
}

Broadcast make_broadcast(const std::vector<Shape>& operands) {
  const int nops = static_cast<int>(operands.size());
  MR_CHECK(nops >= 1 && nops <= kMaxBroadcastOperands, value, "make_broadcast: ", nops,
           " operands, expected 1 to ", kMaxBroadcastOperands);
  const Shape out = broadcast_shape(operands);
  Broadcast g;
  g.operands = nops;
  g.size = out.numel();
  // Row-major strides of every operand on the out's axes (0 where it is
  // broadcast), then axes of extent 1 dropped and mergeable neighbours merged.
  // An empty out keeps its 0-extent axes (kernels do nothing; sum_to_operand
  // then sums over an empty box and writes zeros to an operand that has
  // elements, e.g. (1, 3) against (0, 3)); an empty operand's strides may
  // read as broadcast, which is harmless: nothing of it is read or written.
  const int rank = out.rank();
  std::vector<std::vector<int64_t>> st(static_cast<size_t>(nops),
                                       std::vector<int64_t>(static_cast<size_t>(rank), 0));
  for (int k = 0; k < nops; ++k) {
    const Shape& s = operands[static_cast<size_t>(k)];
    const int pad = rank - s.rank();
    int64_t run = 1;
    for (int j = s.rank() - 1; j >= 0; --j) {
      st[static_cast<size_t>(k)][static_cast<size_t>(pad + j)] = s[j] == 1 ? 0 : run;
      run *= s[j];
    }
  }
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> mst(static_cast<size_t>(nops));
  for (int j = 0; j < rank; ++j) {
    const int64_t d = out[j];
    if (d == 1) continue;
    bool merge = !dims.empty();
    for (int k = 0; k < nops && merge; ++k) {
      // Operand k's previous kept axis and this one are both broadcast or
      // both read; in the second case row-major strides already chain
      // (prev stride = this stride * d), so one axis of dims.back() * d
      // elements with this axis's stride reads the same elements.
      const bool prev_b = mst[static_cast<size_t>(k)].back() == 0;
      const bool this_b = st[static_cast<size_t>(k)][static_cast<size_t>(j)] == 0;
      merge = prev_b == this_b;
    }
    if (merge) {
      dims.back() *= d;
      for (int k = 0; k < nops; ++k)
        mst[static_cast<size_t>(k)].back() = st[static_cast<size_t>(k)][static_cast<size_t>(j)];
    } else {
      dims.push_back(d);
      for (int k = 0; k < nops; ++k)
        mst[static_cast<size_t>(k)].push_back(st[static_cast<size_t>(k)][static_cast<size_t>(j)]);
    }
  }
  MR_CHECK(static_cast<int>(dims.size()) <= kMaxStridedRank, shape, "cannot broadcast shapes ",
           shapes_text(operands), ": the broadcast needs ", dims.size(), " index axes, at most ",
           kMaxStridedRank, " are supported");
  g.rank = static_cast<int>(dims.size());
  for (int j = 0; j < g.rank; ++j) {
    g.dims[j] = dims[static_cast<size_t>(j)];
    for (int k = 0; k < nops; ++k)
      g.stride[k][j] = mst[static_cast<size_t>(k)][static_cast<size_t>(j)];
  }
  return g;
}

StridedCopy sum_to_operand(const Broadcast& g, int operand) {
  MR_CHECK(operand >= 0 && operand < g.operands, value, "sum_to_operand: operand ", operand,
           " of a broadcast of ", g.operands);
  StridedCopy c;
  // Out strides of the merged axes (row-major over g.dims).
  int64_t out_stride[kMaxStridedRank] = {};
  int64_t run = 1;
  for (int j = g.rank - 1; j >= 0; --j) {
    out_stride[j] = run;
    run *= g.dims[j];
  }
  // The box runs over the operand's own axes (written at its strides), the sum box over the
  // axes it is broadcast along.
  for (int j = 0; j < g.rank; ++j) {
    if (g.stride[operand][j] != 0) {
      c.dims[c.rank] = g.dims[j];
      c.src_stride[c.rank] = out_stride[j];
      c.dst_stride[c.rank] = g.stride[operand][j];
      ++c.rank;
    } else {
      c.sum_dims[c.sum_rank] = g.dims[j];
      c.sum_stride[c.sum_rank] = out_stride[j];
      ++c.sum_rank;
    }
  }
  return c;
}

bool operand_spans_out(const Broadcast& g, int operand) {
  MR_CHECK(operand >= 0 && operand < g.operands, value, "operand_spans_out: operand ", operand,
           " of a broadcast of ", g.operands);
  for (int j = 0; j < g.rank; ++j)
    if (g.stride[operand][j] == 0) return false;
  return true;
}

// ---- i15-ops: cast kinds ----
const char* op_name(CastOp op) {
  switch (op) {
    case CastOp::float16:
      return "float16";
    case CastOp::bfloat16:
      return "bfloat16";
    case CastOp::int8:
      return "int8";
    case CastOp::int16:
      return "int16";
    case CastOp::int32:
      return "int32";
    case CastOp::int64:
      return "int64";
    case CastOp::uint8:
      return "uint8";
    case CastOp::boolean:
      return "bool";
  }
  return "unknown cast op";
}

void check_op(CastOp op, const char* fn) {
  check_op_index(static_cast<int>(op), kCastOpCount, "CastOp", fn);
}

}  // namespace mr
