// TracedGraph: the forward and VJP of dropout, Keras' Dropout layer called
// inside a custom layer's call() (shape and plan: traced_graph.cpp).
// While training it is the built-in layer's inverted dropout
// (Backend::dropout_forward, nn/layers/dropout.cpp): a kept value is
// scaled by 1 / (1 - rate), and the mask of a batched value's global row r
// depends only on (seed, step, stream, r), so any split of the batch over
// replicas draws the same masks. The stream mixes the calling layer node's
// stream with the op's index, so two dropout ops of one graph (or one
// graph called at two nodes) draw apart. An unbatched value is one row at
// offset 0. At inference it is the identity. The mask stays in aux for the
// VJP, dx = dy * mask (dy itself at inference). Nothing allocates.
#include <cstdint>

#include "nn/traced_graph.h"
#include "nn/traced_kinds.h"
#include "nn/traced_util.h"

namespace mr {

namespace {

bool drops(const TracedRun& run, const TracedGraph::Node& nd) {
  return run.training && nd.rate > 0.0f;
}

// SplitMix64's finalizer: a stream that differs for every (layer stream,
// op index) pair in practice, as 32 bits allow.
uint32_t op_stream(uint32_t layer_stream, int64_t op_index) {
  uint64_t z = (static_cast<uint64_t>(layer_stream) << 32) ^ static_cast<uint64_t>(op_index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<uint32_t>((z ^ (z >> 31)) & 0xffffffffULL);
}

}  // namespace

void TracedGraph::run_dropout_forward(Backend& be, const Ptrs& p, const Node& nd) const {
  const int64_t index = &nd - nodes_.data();
  float* y = value_ptr(p, Ref{RefKind::node, static_cast<int>(index)});
  const float* x = value_ptr(p, nd.in[0]);
  const int64_t n = floats(nd.shape, p.rows);
  if (n == 0) return;
  if (!drops(*p.run, nd)) {
    be.copy(y, x, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const bool batched = nd.shape.batched;
  const int64_t rows = batched ? p.rows : 1;
  const int64_t cols = n / rows;
  const int64_t row_offset = batched ? p.run->row_offset : 0;
  float* mask = batched ? p.aux + nd.mask_off * p.rows : p.aux + aux_pr_ * p.rows + nd.mask_off;
  const uint32_t stream = op_stream(p.run->stream, index);
  if (p.run->scalars != nullptr)
    be.dropout_forward(rows, cols, nd.rate, nd.seed, p.run->scalars, stream, row_offset, x, mask,
                       y);
  else
    be.dropout_forward(rows, cols, nd.rate, nd.seed, uint64_t{0}, stream, row_offset, x, mask, y);
}

void TracedGraph::run_dropout_backward(Backend& be, const Ptrs& p, const Node& nd) const {
  if (!ref_needs_grad(nd.in[0])) return;
  const int64_t index = &nd - nodes_.data();
  const float* dy = grad_ptr(p, Ref{RefKind::node, static_cast<int>(index)});
  const int64_t n = floats(nd.shape, p.rows);
  if (n == 0) return;
  const float* mask =
      nd.shape.batched ? p.aux + nd.mask_off * p.rows : p.aux + aux_pr_ * p.rows + nd.mask_off;
  float* dst = grad_ptr(p, nd.in[0]);
  float* dx = nd.first_write[0] ? dst : p.tmp[2];
  if (drops(*p.run, nd))
    be.multiply(n, dy, mask, dx);
  else
    be.copy(dx, dy, static_cast<size_t>(n) * sizeof(float));
  if (!nd.first_write[0]) be.axpy(n, 1.0f, p.tmp[2], dst);
}

}  // namespace mr
