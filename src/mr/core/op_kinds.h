// The element-wise, broadcasting and reduction ops of traced graphs (issue
// 15): the op kinds Backend::unary / binary / reduce / softmax_axis take, and
// Broadcast, the index box of a binary or where op, with the two helpers the
// graph needs around it: make_broadcast (numpy / Keras broadcasting of the
// operands' shapes) and sum_to_operand (the strided_copy that sums an
// out-shaped gradient back to one operand's shape).
//
// Formulas and gradients of the kinds: backends/common/op_math.h (Keras 3 on
// the TensorFlow backend: TF's values and TF's gradients).
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "core/shape.h"

namespace mr {

// f(x), element-wise. gelu_tanh is Keras' ops.gelu(x) (approximate = TRUE,
// the op's default), gelu_erf ops.gelu(x, approximate = FALSE) (the "gelu"
// activation's default).
enum class UnaryOp {
  negative,
  abs,
  sign,
  square,
  sqrt,
  exp,
  log,
  log1p,
  relu,
  sigmoid,
  tanh,
  gelu_tanh,
  gelu_erf,
  silu
};
constexpr int kUnaryOpCount = 14;

// a op b, element-wise under broadcasting. The comparisons give 1.0f / 0.0f
// (Keras returns bool; a graph uses them as float masks) and no gradient.
enum class BinaryOp {
  add,
  subtract,
  multiply,
  divide,
  power,
  maximum,
  minimum,
  equal,
  not_equal,
  less,
  less_equal,
  greater,
  greater_equal
};
constexpr int kBinaryOpCount = 13;

// One axis group of outer x extent x inner reduced to outer x inner.
enum class ReduceOp { sum, max, min };
constexpr int kReduceOpCount = 3;

// Along the middle axis of outer x extent x inner (Keras' softmax,
// log_softmax on an axis; logsumexp reduces the axis).
enum class SoftmaxOp { softmax, log_softmax, logsumexp };
constexpr int kSoftmaxOpCount = 3;

// The counts name the last enumerator + 1: a kind added at the end must move
// them (these asserts fail otherwise), and the backends' range checks use them.
static_assert(static_cast<int>(UnaryOp::silu) + 1 == kUnaryOpCount, "kUnaryOpCount");
static_assert(static_cast<int>(BinaryOp::greater_equal) + 1 == kBinaryOpCount, "kBinaryOpCount");
static_assert(static_cast<int>(ReduceOp::min) + 1 == kReduceOpCount, "kReduceOpCount");
static_assert(static_cast<int>(SoftmaxOp::logsumexp) + 1 == kSoftmaxOpCount, "kSoftmaxOpCount");

// Keras' names ("negative", "gelu_tanh", "greater_equal", "max", ...), for
// error messages and test names.
const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(ReduceOp op);
const char* op_name(SoftmaxOp op);
// True for equal .. greater_equal. Relies on the enum order: the
// comparisons are the last enumerators of BinaryOp, from `equal` on.
bool is_comparison(BinaryOp op);

// mr::Error (internal) naming `fn` unless op is one of its kind's
// enumerators (a value cast from an int out of range would otherwise reach a
// kernel's switch). The backends call these on the host before any launch.
void check_op(UnaryOp op, const char* fn);
void check_op(BinaryOp op, const char* fn);
void check_op(ReduceOp op, const char* fn);
void check_op(SoftmaxOp op, const char* fn);
// mr::Error (internal) naming `fn` unless outer, extent, inner are all >= 0
// (an outer x extent x inner view of Backend::reduce / softmax_axis).
void check_axis_view(int64_t outer, int64_t extent, int64_t inner, const char* fn);
// mr::Error (internal) naming `fn` unless g has `operands` operands and a
// rank within 0..kMaxStridedRank (binary: 2, where: 3).
void check_broadcast(const Broadcast& g, int operands, const char* fn);

// The index box of a broadcasting op over up to three operands (binary: a, b;
// where: cond, a, b). Out is row-major over dims[0..rank); element e of it
// (row-major index) reads operand k at sum_j index_j(e) * stride[k][j], where
// stride[k][j] is 0 on an axis operand k is broadcast along and its own
// row-major stride otherwise. Axes of extent 1 are dropped and adjacent axes
// merged wherever every operand allows (both broadcast or neither), so
// same-shape operands give rank 1 (a flat loop) and a scalar with a tensor
// gives rank 1 with that operand's stride 0. A trivially copyable value,
// passed to device kernels as it is.
constexpr int kMaxBroadcastOperands = 3;
struct Broadcast {
  int rank = 0;      // merged rank, 0 for a one-element out
  int operands = 0;  // 1..kMaxBroadcastOperands
  int64_t size = 1;  // elements of out (0 when any out dim is 0)
  int64_t dims[kMaxStridedRank] = {};
  int64_t stride[kMaxBroadcastOperands][kMaxStridedRank] = {};
};

// The broadcast out shape of `operands` (numpy / Keras rules: shapes
// right-aligned, a missing or size-1 dim stretches to the other's; any other
// mismatch is mr::Error (shape) naming the shapes). Zero-size dims broadcast
// like any other (0 with 1 gives 0).
Shape broadcast_shape(const std::vector<Shape>& operands);

// The Broadcast of 1..kMaxBroadcastOperands operand shapes (errors as
// broadcast_shape; value when there are no or too many operands; shape when
// the merged rank exceeds kMaxStridedRank).
Broadcast make_broadcast(const std::vector<Shape>& operands);

// The strided_copy (sum mode) that maps an out-shaped array of g to operand
// k's shape, summing over the axes k is broadcast along (row-major order of
// those axes, float sums: Backend::strided_copy's order): the reduction of a
// binary / where VJP partial to its operand.
StridedCopy sum_to_operand(const Broadcast& g, int operand);

// Whether operand k is broadcast along no axis of g (its elements are the
// out's, in the out's order): its binary_backward / where_backward partial
// is then already its gradient and the sum_to_operand copy (a plain copy)
// can be skipped, or the partial written straight into the gradient.
bool operand_spans_out(const Broadcast& g, int operand);

// How a graph uses these ops for out = a op b with a, b of shapes sa, sb:
//   g = make_broadcast({sa, sb});  (at compile time; shape errors there)
//   forward:  binary(op, g, a, b, out)
//   backward: binary_backward(op, g, a, b, dout, pa, pb) into out-shaped
//             scratch pa, pb (sized at compile time), then for each operand
//             k that is not operand_spans_out(g, k):
//             strided_copy(sum_to_operand(g, k), p_k, grad_k)
// and likewise for where(cond, a, b) with make_broadcast({sc, sa, sb}).

// ---- i15-ops: the cast kinds of traced graphs (Backend::cast_values) ----
// keras.ops.cast(x, dtype) on a value stored as f32 (a traced graph keeps
// every value in f32; float32 and float64 are the identity and need no op).
// float16 / bfloat16: x rounded to that format (round to nearest even,
// overflow to +-Inf, NaN kept) and widened back; int8 .. uint8: truncation
// toward zero saturated at the type's range, NaN -> 0 (stored as the nearest
// float: int32's 2147483647 reads back as 2^31); boolean: x != 0 (NaN is
// true, as numpy and TF cast it).
enum class CastOp { float16, bfloat16, int8, int16, int32, int64, uint8, boolean };
constexpr int kCastOpCount = 8;
static_assert(static_cast<int>(CastOp::boolean) + 1 == kCastOpCount, "kCastOpCount");
// Keras' dtype names: "float16", .., "uint8", "bool".
const char* op_name(CastOp op);
void check_op(CastOp op, const char* fn);

}  // namespace mr
