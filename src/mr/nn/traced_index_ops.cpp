// TracedGraph: the forward and VJP of the index, copy and cast ops (issue
// 15, i15-ops; shapes: traced_shapes.cpp). Backend ops only, every buffer
// from aux, scratch, the constants or the caller: nothing allocates.
//   one_hot          Backend::one_hot; no VJP.
//   argmax           Backend::argmax; no VJP.
//   take_along_axis  operands broadcast by strided_copy where needed (x into
//                    forward's temporary, the indices into aux, kept for
//                    backward), then Backend::take_along_axis; the VJP is
//                    take_along_axis_backward (a deterministic scatter-add),
//                    summed back to x's shape when x was broadcast.
//   concatenate      one strided_copy per operand into its box of the
//   / stack          output; the VJP copies the boxes back out.
//   cast             Backend::cast_values; the VJP is the identity for
//                    float16 / bfloat16 (straight through, as TF) and none
//                    for the integer and bool dtypes.
//   slice            a strided_copy of the box; the VJP is zeros with the
//                    output gradient copied into the box.
//   take             Backend::embedding_forward (indices checked there); the
//                    VJP is embedding_backward, a scatter-add in index
//                    order; none to the indices.
#include <utility>
#include <vector>

#include "core/error.h"
#include "nn/traced_graph.h"
#include "nn/traced_kinds.h"
#include "nn/traced_util.h"

namespace mr {
namespace {

using traced::at_rows;
using traced::view_at;

// The strided_copy of a box of `box` dims from a row-major array of
// src_dims to one of dst_dims (same rank; the batch axis, when batched, is
// `rows` in all three). Offsets into the arrays are the caller's.
StridedCopy box_copy(const std::vector<int64_t>& box, const std::vector<int64_t>& src_dims,
                     const std::vector<int64_t>& dst_dims, bool batched, int64_t rows) {
  StridedCopy c;
  c.rank = static_cast<int>(box.size());
  int64_t ss = 1, ds = 1;
  for (int j = c.rank - 1; j >= 0; --j) {
    const auto u = static_cast<size_t>(j);
    const bool b = batched && j == 0;
    c.dims[j] = b ? rows : box[u];
    c.src_stride[j] = ss;
    c.dst_stride[j] = ds;
    ss *= b ? rows : src_dims[u];
    ds *= b ? rows : dst_dims[u];
  }
  return c;
}

StridedCopy inverse(StridedCopy c) {
  for (int j = 0; j < c.rank; ++j) std::swap(c.src_stride[j], c.dst_stride[j]);
  return c;
}

// The copy that broadcasts operand 1 of g (an array of its shape) to g's out
// shape (row-major): the forward of a stride-0 repeat.
StridedCopy broadcast_copy(const Broadcast& g) {
  StridedCopy c;
  c.rank = g.rank;
  for (int j = 0; j < g.rank; ++j) {
    c.dims[j] = g.dims[j];
    c.src_stride[j] = g.stride[1][j];
    c.dst_stride[j] = g.stride[0][j];
  }
  return c;
}

// Operand i's box of a concatenate / stack output.
std::vector<int64_t> concat_box(const TracedGraph::Node& nd, size_t i) {
  std::vector<int64_t> box = nd.shape.dims;
  box[static_cast<size_t>(nd.axis)] = nd.extents[i];
  return box;
}

}  // namespace

float* TracedGraph::idx_ptr(const Ptrs& p, const Node& nd) const {
  return nd.shape.batched ? p.aux + nd.idx_off * p.rows : p.aux + aux_pr_ * p.rows + nd.idx_off;
}

void TracedGraph::run_index_forward(Backend& be, const Ptrs& p, const Node& nd) const {
  const int64_t rows = p.rows;
  const int index = static_cast<int>(&nd - nodes_.data());
  float* y = value_ptr(p, Ref{RefKind::node, index});
  auto in = [&](size_t k) { return value_ptr(p, nd.in[k]); };
  switch (static_cast<TracedKind>(nd.kind)) {
    case TracedKind::take: {
      const int64_t n = nd.m * (nd.shape.batched ? rows : 1);
      be.embedding_forward(n, nd.k, nd.n, in(1), in(0), y);
      break;
    }
    case TracedKind::one_hot: {
      const traced::View3 v = view_at(nd, rows);
      be.one_hot(v.outer, v.extent, v.inner, in(0), y);
      break;
    }
    case TracedKind::argmax: {
      const traced::View3 v = view_at(nd, rows);
      be.argmax(v.outer, v.extent, v.inner, in(0), y);
      break;
    }
    case TracedKind::take_along_axis: {
      const float* x = in(0);
      const float* ix = in(1);
      if (nd.bcast_x) {
        be.strided_copy(broadcast_copy(at_rows(nd.bc, nd.bc_batched, rows)), x, p.tmp[0]);
        x = p.tmp[0];
      }
      if (nd.bcast_i) {
        float* dst = idx_ptr(p, nd);
        be.strided_copy(broadcast_copy(at_rows(nd.bc2, nd.bc_batched, rows)), ix, dst);
        ix = dst;
      }
      const traced::View3 v = view_at(nd, rows);
      try {
        be.take_along_axis(v.outer, v.extent, nd.k, v.inner, x, ix, y);
      } catch (const Error& e) {
        // A synchronous backend's bad index: name the node and its R line.
        traced::node_fail(e.kind(), traced::NodeCtx{index, nd}, e.what());
      }
      break;
    }
    case TracedKind::concatenate: {
      const ValueShape& s = nd.shape;
      for (size_t i = 0; i < nd.in.size(); ++i) {
        const std::vector<int64_t> box = concat_box(nd, i);
        const StridedCopy c = box_copy(box, box, s.dims, s.batched, rows);
        be.strided_copy(c, in(i), y + nd.starts[i] * c.dst_stride[nd.axis]);
      }
      break;
    }
    case TracedKind::cast:
      be.cast_values(static_cast<CastOp>(nd.sub), floats(nd.shape, rows), in(0), y);
      break;
    case TracedKind::slice: {
      const ValueShape& s = shape_of(nd.in[0]);
      const StridedCopy c = box_copy(nd.shape.dims, s.dims, nd.shape.dims, s.batched, rows);
      int64_t off = 0;
      for (int d = 0; d < c.rank; ++d) off += nd.starts[static_cast<size_t>(d)] * c.src_stride[d];
      be.strided_copy(c, in(0) + off, y);
      break;
    }
    default:
      fail(ErrorKind::internal, "traced graph: node ", index, " is not an index op");
  }
}

void TracedGraph::run_index_backward(Backend& be, const Ptrs& p, const Node& nd) const {
  const int64_t rows = p.rows;
  const Ref self{RefKind::node, static_cast<int>(&nd - nodes_.data())};
  const float* dy = grad_ptr(p, self);
  // Operand k's contribution: written straight into its gradient when it
  // comes first in backward's order, else through tmp[2] and added (as
  // run_backward's).
  auto contribute = [&](size_t k, auto&& write) {
    if (!grad_flows(nd, k) || !ref_needs_grad(nd.in[k])) return;
    float* dst = grad_ptr(p, nd.in[k]);
    if (nd.first_write[k]) {
      write(dst);
    } else {
      write(p.tmp[2]);
      be.axpy(floats(shape_of(nd.in[k]), rows), 1.0f, p.tmp[2], dst);
    }
  };
  switch (static_cast<TracedKind>(nd.kind)) {
    case TracedKind::take: {
      const int64_t n = nd.m * (nd.shape.batched ? rows : 1);
      contribute(0, [&](float* dx) {
        be.embedding_backward(n, nd.k, nd.n, value_ptr(p, nd.in[1]), dy, dx);
      });
      break;
    }
    case TracedKind::take_along_axis: {
      const float* ix = nd.bcast_i ? idx_ptr(p, nd) : value_ptr(p, nd.in[1]);
      const traced::View3 v = view_at(nd, rows);
      contribute(0, [&](float* dx) {
        if (!nd.bcast_x) {
          be.take_along_axis_backward(v.outer, v.extent, nd.k, v.inner, ix, dy, dx);
          return;
        }
        // The gradient of the broadcast x, then summed over the axes x was
        // broadcast along (sum_to_operand's fixed order).
        be.take_along_axis_backward(v.outer, v.extent, nd.k, v.inner, ix, dy, p.tmp[0]);
        be.strided_copy(sum_to_operand(at_rows(nd.bc, nd.bc_batched, rows), 1), p.tmp[0], dx);
      });
      break;
    }
    case TracedKind::concatenate: {
      const ValueShape& s = nd.shape;
      for (size_t i = 0; i < nd.in.size(); ++i)
        contribute(i, [&](float* dx) {
          const std::vector<int64_t> box = concat_box(nd, i);
          const StridedCopy c = box_copy(box, box, s.dims, s.batched, rows);
          be.strided_copy(inverse(c), dy + nd.starts[i] * c.dst_stride[nd.axis], dx);
        });
      break;
    }
    case TracedKind::cast:  // float16 / bfloat16: straight through
      contribute(0, [&](float* dx) {
        be.copy(dx, dy, static_cast<size_t>(floats(nd.shape, rows)) * sizeof(float));
      });
      break;
    case TracedKind::slice: {
      const ValueShape& s = shape_of(nd.in[0]);
      contribute(0, [&](float* dx) {
        const StridedCopy c = box_copy(nd.shape.dims, s.dims, nd.shape.dims, s.batched, rows);
        int64_t off = 0;
        for (int d = 0; d < c.rank; ++d) off += nd.starts[static_cast<size_t>(d)] * c.src_stride[d];
        be.fill(floats(s, rows), dx, 0.0f);
        be.strided_copy(inverse(c), dy, dx + off);
      });
      break;
    }
    case TracedKind::one_hot:
    case TracedKind::argmax:
    default:
      break;  // no gradient (plan() never runs their VJP)
  }
}

}  // namespace mr
