// TracedGraph's op table at run time: the forward of every op and its VJP,
// on Backend ops only (nothing allocates: every buffer comes from aux,
// scratch or the caller).
#include <string>
#include <utility>

#include "core/error.h"
#include "nn/traced_graph.h"
#include "nn/traced_kinds.h"
#include "nn/traced_util.h"

namespace mr {

TracedOpInfo traced_op_info(const std::string& op) {
  for (int u = 0; u < kUnaryOpCount; ++u)
    if (op == op_name(static_cast<UnaryOp>(u))) return {static_cast<int>(TracedKind::unary), u};
  if (op == "gelu")
    return {static_cast<int>(TracedKind::unary), static_cast<int>(UnaryOp::gelu_tanh)};
  for (int b = 0; b < kBinaryOpCount; ++b)
    if (op == op_name(static_cast<BinaryOp>(b))) return {static_cast<int>(TracedKind::binary), b};
  for (int r = 0; r < kReduceOpCount; ++r)
    if (op == op_name(static_cast<ReduceOp>(r))) return {static_cast<int>(TracedKind::reduce), r};
  for (int s = 0; s < kSoftmaxOpCount; ++s)
    if (op == op_name(static_cast<SoftmaxOp>(s))) return {static_cast<int>(TracedKind::softmax), s};
  if (op == "mean") return {static_cast<int>(TracedKind::mean), static_cast<int>(ReduceOp::sum)};
  if (op == "where") return {static_cast<int>(TracedKind::where), 0};
  if (op == "reshape") return {static_cast<int>(TracedKind::reshape), 0};
  if (op == "expand_dims") return {static_cast<int>(TracedKind::expand_dims), 0};
  if (op == "squeeze") return {static_cast<int>(TracedKind::squeeze), 0};
  if (op == "transpose") return {static_cast<int>(TracedKind::transpose), 0};
  if (op == "matmul") return {static_cast<int>(TracedKind::matmul), 0};
  if (op == "stop_gradient") return {static_cast<int>(TracedKind::stop_gradient), 0};
  // i15-ops (stack is a concatenate of operands given a new axis; sub 1)
  if (op == "one_hot") return {static_cast<int>(TracedKind::one_hot), 0};
  if (op == "argmax") return {static_cast<int>(TracedKind::argmax), 0};
  if (op == "take_along_axis") return {static_cast<int>(TracedKind::take_along_axis), 0};
  if (op == "concatenate") return {static_cast<int>(TracedKind::concatenate), 0};
  if (op == "stack") return {static_cast<int>(TracedKind::concatenate), 1};
  if (op == "cast") return {static_cast<int>(TracedKind::cast), 0};
  if (op == "slice") return {static_cast<int>(TracedKind::slice), 0};
  if (op == "dropout") return {static_cast<int>(TracedKind::dropout), 0};
  if (op == "take") return {static_cast<int>(TracedKind::take), 0};
  return {};
}

std::vector<std::string> traced_op_attrs(TracedKind kind, const std::string& op) {
  switch (kind) {
    case TracedKind::unary:
      if (op == "gelu") return {"approximate"};
      return {};
    case TracedKind::reduce:
    case TracedKind::mean:
      return {"axis", "keepdims"};
    case TracedKind::softmax:
      if (op == "logsumexp") return {"axis", "keepdims"};
      return {"axis"};
    case TracedKind::reshape:
      return {"shape"};
    case TracedKind::expand_dims:
    case TracedKind::squeeze:
      return {"axis"};
    case TracedKind::transpose:
      return {"axes"};
    case TracedKind::one_hot:
      return {"num_classes", "axis"};
    case TracedKind::argmax:
      return {"axis", "keepdims"};
    case TracedKind::take_along_axis:
    case TracedKind::concatenate:
    case TracedKind::take:
      return {"axis"};
    case TracedKind::cast:
      return {"dtype"};
    case TracedKind::slice:
      return {"start_indices", "shape"};
    case TracedKind::dropout:
      return {"rate", "seed"};
    case TracedKind::binary:
    case TracedKind::where:
    case TracedKind::matmul:
    case TracedKind::stop_gradient:
    default:
      return {};
  }
}

float* TracedGraph::value_ptr(const Ptrs& p, Ref r) const {
  switch (r.kind) {
    case RefKind::input:
      return const_cast<float*>(p.inputs[r.index]);
    case RefKind::weight:
      return const_cast<float*>(p.weights[r.index]);
    case RefKind::constant:
      return const_cast<float*>(p.constants + constant_offsets_[static_cast<size_t>(r.index)]);
    case RefKind::node:
    default: {
      const Node& nd = nodes_[static_cast<size_t>(r.index)];
      if (nd.view) return value_ptr(p, nd.value_root);
      return nd.shape.batched ? p.aux + nd.value_off * p.rows
                              : p.aux + aux_pr_ * p.rows + nd.value_off;
    }
  }
}

float* TracedGraph::grad_ptr(const Ptrs& p, Ref r) const {
  switch (r.kind) {
    case RefKind::input: {
      float* d = p.d_inputs ? p.d_inputs[r.index] : nullptr;
      if (d) return d;
      const auto i = static_cast<size_t>(r.index);
      return inputs_[i].batched ? p.sinks + sink_off_[i] * p.rows
                                : p.sinks + sink_pr_ * p.rows + sink_off_[i];
    }
    case RefKind::weight: {
      float* d = p.d_weights ? p.d_weights[r.index] : nullptr;
      return d ? d : p.sinks + sink_pr_ * p.rows + wsink_off_[static_cast<size_t>(r.index)];
    }
    case RefKind::node: {
      const Node& nd = nodes_[static_cast<size_t>(r.index)];
      if (nd.view) return grad_ptr(p, nd.grad_root);
      return nd.shape.batched ? p.grads + nd.grad_off * p.rows
                              : p.grads + grad_pr_ * p.rows + nd.grad_off;
    }
    case RefKind::constant:
    default:
      fail(ErrorKind::internal, "traced graph: a constant has no gradient");
  }
}

namespace {

using traced::at_rows;
using traced::View3;
using traced::view_at;

// The strided_copy of a transpose at `rows` rows (src: the operand's
// row-major layout; dst: the output's), or its inverse.
StridedCopy transpose_copy(const std::vector<int64_t>& src_dims, bool batched,
                           const std::vector<int64_t>& perm, int64_t rows, bool inverse) {
  const int rank = static_cast<int>(perm.size());
  int64_t src_stride[kMaxStridedRank] = {};
  int64_t run = 1;
  for (int j = rank - 1; j >= 0; --j) {
    src_stride[j] = run;
    run *= (batched && j == 0) ? rows : src_dims[static_cast<size_t>(j)];
  }
  StridedCopy c;
  c.rank = rank;
  run = 1;
  for (int j = rank - 1; j >= 0; --j) {
    const int p = static_cast<int>(perm[static_cast<size_t>(j)]);
    c.dims[j] = (batched && p == 0) ? rows : src_dims[static_cast<size_t>(p)];
    c.src_stride[j] = src_stride[p];
    c.dst_stride[j] = run;
    run *= c.dims[j];
  }
  if (inverse)
    for (int j = 0; j < rank; ++j) std::swap(c.src_stride[j], c.dst_stride[j]);
  return c;
}

}  // namespace

float* TracedGraph::perm_ptr(const Ptrs& p, const Node& nd) const {
  return shape_of(nd.in[0]).batched ? p.aux + nd.perm_off * p.rows
                                    : p.aux + aux_pr_ * p.rows + nd.perm_off;
}

// A reduction's input: the operand, or (axes apart) its permuted copy, made here.
const float* TracedGraph::reduce_src(Backend& be, const Ptrs& p, const Node& nd) const {
  if (nd.perm.empty()) return value_ptr(p, nd.in[0]);
  const ValueShape& s = shape_of(nd.in[0]);
  float* dst = perm_ptr(p, nd);
  be.strided_copy(transpose_copy(s.dims, s.batched, nd.perm, p.rows, false), value_ptr(p, nd.in[0]),
                  dst);
  return dst;
}

void TracedGraph::run_forward(Backend& be, const Ptrs& p, const Node& nd) const {
  const int64_t rows = p.rows;
  float* y = value_ptr(p, Ref{RefKind::node, static_cast<int>(&nd - nodes_.data())});
  const int64_t ny = floats(nd.shape, rows);
  auto in = [&](size_t k) { return value_ptr(p, nd.in[k]); };
  switch (static_cast<TracedKind>(nd.kind)) {
    case TracedKind::unary:
      be.unary(static_cast<UnaryOp>(nd.sub), ny, in(0), y);
      break;
    case TracedKind::binary:
      be.binary(static_cast<BinaryOp>(nd.sub), at_rows(nd.bc, nd.bc_batched, rows), in(0), in(1),
                y);
      break;
    case TracedKind::where:
      be.where(at_rows(nd.bc, nd.bc_batched, rows), in(0), in(1), in(2), y);
      break;
    case TracedKind::reduce: {
      const View3 v = view_at(nd, rows);
      be.reduce(static_cast<ReduceOp>(nd.sub), v.outer, v.extent, v.inner, reduce_src(be, p, nd),
                y);
      break;
    }
    case TracedKind::mean: {
      // Keras' mean: the sum, then times 1 / count (0 / 0 = NaN for no elements).
      const View3 v = view_at(nd, rows);
      be.reduce(ReduceOp::sum, v.outer, v.extent, v.inner, reduce_src(be, p, nd), p.tmp[0]);
      be.fill(ny, y, 0.0f);
      be.axpy(ny, 1.0f / static_cast<float>(v.extent), p.tmp[0], y);
      break;
    }
    case TracedKind::softmax: {
      const View3 v = view_at(nd, rows);
      be.softmax_axis(static_cast<SoftmaxOp>(nd.sub), v.outer, v.extent, v.inner, in(0), y);
      break;
    }
    case TracedKind::transpose: {
      const ValueShape& s = shape_of(nd.in[0]);
      be.strided_copy(transpose_copy(s.dims, s.batched, nd.perm, rows, false), in(0), y);
      break;
    }
    case TracedKind::matmul: {
      if (nd.loops == 0) {
        const int64_t m = shape_of(nd.in[0]).batched ? nd.m * rows : nd.m;
        if (m > 0)
          be.gemm(false, false, m, nd.n, nd.k, 1.0f, in(0), nd.k, in(1), nd.n, 0.0f, y, nd.n);
      } else {
        const float* a = in(0);
        const float* b = in(1);
        for (int64_t s = 0; s < nd.loops * rows; ++s)
          be.gemm(false, false, nd.m, nd.n, nd.k, 1.0f, a + s * nd.m * nd.k, nd.k,
                  b + s * nd.k * nd.n, nd.n, 0.0f, y + s * nd.m * nd.n, nd.n);
      }
      break;
    }
    case TracedKind::stop_gradient:
      be.copy(y, in(0), static_cast<size_t>(ny) * sizeof(float));
      break;
    case TracedKind::reshape:
    case TracedKind::expand_dims:
    case TracedKind::squeeze:
      break;  // views: no work
    case TracedKind::one_hot:
    case TracedKind::argmax:
    case TracedKind::take_along_axis:
    case TracedKind::concatenate:
    case TracedKind::cast:
    case TracedKind::slice:
    case TracedKind::take:
      run_index_forward(be, p, nd);
      break;
    case TracedKind::dropout:
      run_dropout_forward(be, p, nd);
      break;
  }
}

void TracedGraph::run_backward(Backend& be, const Ptrs& p, const Node& nd) const {
  const int64_t rows = p.rows;
  const Ref self{RefKind::node, static_cast<int>(&nd - nodes_.data())};
  const float* y = value_ptr(p, self);
  const float* dy = grad_ptr(p, self);
  const int64_t ny = floats(nd.shape, rows);
  auto in = [&](size_t k) { return value_ptr(p, nd.in[k]); };
  auto wants = [&](size_t k) { return ref_needs_grad(nd.in[k]); };
  // Operand k's contribution: written straight into its gradient when it
  // comes first in backward's order, else through tmp[2] and added.
  auto contribute = [&](size_t k, auto&& write) {
    float* dst = grad_ptr(p, nd.in[k]);
    if (nd.first_write[k]) {
      write(dst);
    } else {
      write(p.tmp[2]);
      be.axpy(floats(shape_of(nd.in[k]), rows), 1.0f, p.tmp[2], dst);
    }
  };
  switch (static_cast<TracedKind>(nd.kind)) {
    case TracedKind::unary:
      contribute(0, [&](float* dx) {
        be.unary_backward(static_cast<UnaryOp>(nd.sub), ny, in(0), y, dy, dx);
      });
      break;
    case TracedKind::binary:
    case TracedKind::where: {
      const bool is_where = static_cast<TracedKind>(nd.kind) == TracedKind::where;
      const Broadcast g = at_rows(nd.bc, nd.bc_batched, rows);
      const size_t k0 = is_where ? 1 : 0;
      float* pa = wants(k0) ? p.tmp[0] : nullptr;
      float* pb = wants(k0 + 1) ? p.tmp[1] : nullptr;
      if (is_where)
        be.where_backward(g, in(0), dy, pa, pb);
      else
        be.binary_backward(static_cast<BinaryOp>(nd.sub), g, in(0), in(1), dy, pa, pb);
      for (size_t k = k0; k < k0 + 2; ++k) {
        if (!wants(k)) continue;
        const float* part = p.tmp[k - k0];
        const int opnd = static_cast<int>(k);
        contribute(k, [&](float* dx) {
          if (operand_spans_out(g, opnd))
            be.copy(dx, part, static_cast<size_t>(g.size) * sizeof(float));
          else
            be.strided_copy(sum_to_operand(g, opnd), part, dx);
        });
      }
      break;
    }
    case TracedKind::reduce:
    case TracedKind::mean: {
      const View3 v = view_at(nd, rows);
      const bool is_mean = static_cast<TracedKind>(nd.kind) == TracedKind::mean;
      const auto op = is_mean ? ReduceOp::sum : static_cast<ReduceOp>(nd.sub);
      const float* g = dy;
      if (is_mean) {
        be.fill(ny, p.tmp[0], 0.0f);
        be.axpy(ny, 1.0f / static_cast<float>(v.extent), dy, p.tmp[0]);
        g = p.tmp[0];
      }
      const float* x = nd.perm.empty() ? in(0) : perm_ptr(p, nd);
      contribute(0, [&](float* dx) {
        if (nd.perm.empty()) {
          be.reduce_backward(op, v.outer, v.extent, v.inner, x, y, g, dx);
        } else {
          // In the permuted layout, then back to the operand's.
          be.reduce_backward(op, v.outer, v.extent, v.inner, x, y, g, p.tmp[1]);
          const ValueShape& s = shape_of(nd.in[0]);
          be.strided_copy(transpose_copy(s.dims, s.batched, nd.perm, rows, true), p.tmp[1], dx);
        }
      });
      break;
    }
    case TracedKind::softmax: {
      const View3 v = view_at(nd, rows);
      contribute(0, [&](float* dx) {
        be.softmax_axis_backward(static_cast<SoftmaxOp>(nd.sub), v.outer, v.extent, v.inner, in(0),
                                 y, dy, dx);
      });
      break;
    }
    case TracedKind::transpose: {
      const ValueShape& s = shape_of(nd.in[0]);
      contribute(0, [&](float* dx) {
        be.strided_copy(transpose_copy(s.dims, s.batched, nd.perm, rows, true), dy, dx);
      });
      break;
    }
    case TracedKind::matmul: {
      // gemm's beta accumulates, so no temporary: beta 0 on a first write.
      const float* a = in(0);
      const float* b = in(1);
      const float ba = nd.first_write[0] ? 0.0f : 1.0f;
      const float bb = nd.first_write[1] ? 0.0f : 1.0f;
      float* da = wants(0) ? grad_ptr(p, nd.in[0]) : nullptr;
      float* db = wants(1) ? grad_ptr(p, nd.in[1]) : nullptr;
      if (nd.loops == 0) {
        const int64_t m = shape_of(nd.in[0]).batched ? nd.m * rows : nd.m;
        if (da && m > 0) be.gemm(false, true, m, nd.k, nd.n, 1.0f, dy, nd.n, b, nd.n, ba, da, nd.k);
        if (db) {
          if (m > 0)
            be.gemm(true, false, nd.k, nd.n, m, 1.0f, a, nd.k, dy, nd.n, bb, db, nd.n);
          else if (nd.first_write[1])
            be.fill(nd.k * nd.n, db, 0.0f);
        }
      } else {
        for (int64_t s = 0; s < nd.loops * rows; ++s) {
          const float* dys = dy + s * nd.m * nd.n;
          if (da)
            be.gemm(false, true, nd.m, nd.k, nd.n, 1.0f, dys, nd.n, b + s * nd.k * nd.n, nd.n, ba,
                    da + s * nd.m * nd.k, nd.k);
          if (db)
            be.gemm(true, false, nd.k, nd.n, nd.m, 1.0f, a + s * nd.m * nd.k, nd.k, dys, nd.n, bb,
                    db + s * nd.k * nd.n, nd.n);
        }
      }
      break;
    }
    case TracedKind::stop_gradient:
    case TracedKind::reshape:
    case TracedKind::expand_dims:
    case TracedKind::squeeze:
      break;  // no VJP (views share their operand's gradient buffer)
    case TracedKind::one_hot:
    case TracedKind::argmax:
    case TracedKind::take_along_axis:
    case TracedKind::concatenate:
    case TracedKind::cast:
    case TracedKind::slice:
    case TracedKind::take:
      run_index_backward(be, p, nd);
      break;
    case TracedKind::dropout:
      run_dropout_backward(be, p, nd);
      break;
  }
}

void TracedGraph::forward(Backend& be, int64_t rows, const float* const* inputs,
                          const float* const* weights, const float* constants,
                          float* const* outputs, float* aux, const TracedRun& run) const {
  MR_CHECK(rows >= 0, value, "TracedGraph::forward: rows must be >= 0, got ", rows);
  Ptrs p;
  p.rows = rows;
  p.run = &run;
  p.inputs = inputs;
  p.weights = weights;
  p.constants = constants;
  p.aux = aux;
  // forward's only temporary (mean's sum before the scaling: reduce's y
  // must not alias its x) is the tail of aux.
  p.tmp[0] = aux + aux_pr_ * rows + aux_fixed_;
  for (const Node& nd : nodes_) {
    if (nd.view || nd.chain_follower) continue;  // chain followers run at their head
    if (nd.chain_next >= 0)
      run_unary_chain(be, p, nd);
    else
      run_forward(be, p, nd);
  }
  for (size_t i = 0; i < outputs_.size(); ++i)
    be.copy(outputs[i], value_ptr(p, outputs_[i]),
            static_cast<size_t>(output_floats(static_cast<int>(i), rows)) * sizeof(float));
}

void TracedGraph::backward(Backend& be, int64_t rows, const float* const* inputs,
                           const float* const* weights, const float* constants, const float* aux,
                           float* scratch, const float* const* d_outputs, float* const* d_inputs,
                           float* const* d_weights, const TracedRun& run) const {
  MR_CHECK(rows >= 0, value, "TracedGraph::backward: rows must be >= 0, got ", rows);
  Ptrs p;
  p.rows = rows;
  p.run = &run;
  p.inputs = inputs;
  p.weights = weights;
  p.constants = constants;
  p.aux = const_cast<float*>(aux);
  p.grads = scratch;
  p.sinks = scratch + grad_pr_ * rows + grad_fixed_;
  p.d_inputs = d_inputs;
  p.d_weights = d_weights;
  float* t = p.sinks + sink_pr_ * rows + sink_fixed_;
  for (float*& tk : p.tmp) {
    tk = t;
    t += tmp_pr_ * rows + tmp_fixed_;
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (!output_grad_[i]) continue;
    const int64_t n = output_floats(static_cast<int>(i), rows);
    float* g = grad_ptr(p, outputs_[i]);
    if (output_first_[i])
      be.copy(g, d_outputs[i], static_cast<size_t>(n) * sizeof(float));
    else
      be.axpy(n, 1.0f, d_outputs[i], g);
  }
  for (size_t i = nodes_.size(); i-- > 0;) {
    const Node& nd = nodes_[i];
    if (!nd.view && nd.runs_vjp) run_backward(be, p, nd);
  }
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (d_inputs && d_inputs[i] && !input_written_[i])
      be.fill(floats(inputs_[i], rows), d_inputs[i], 0.0f);
  for (size_t i = 0; i < weights_.size(); ++i)
    if (d_weights && d_weights[i] && !weight_written_[i])
      be.fill(floats(weights_[i], rows), d_weights[i], 0.0f);
}

}  // namespace mr
