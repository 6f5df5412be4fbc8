// TracedGraph: fused unary chains (issue 15, i15-fuse). A unary node that
// reads only the value of an earlier unary node (not through a view) joins
// that node's chain; a chain of up to Backend::kMaxUnaryChain links runs
// forward at its head as one Backend::unary_chain call, which reads the
// head's input once and writes every link's own value in aux (backward reads
// them for the VJPs, so each is still written; backward is unchanged). The
// values are the ones the separate unary() calls give (unary_chain's
// contract), so fusion changes no number.
#include "core/error.h"
#include "nn/traced_graph.h"
#include "nn/traced_kinds.h"
#include "nn/traced_util.h"

namespace mr {

namespace {

bool fusable(const TracedGraph::Node& nd) {
  return !nd.view && static_cast<TracedKind>(nd.kind) == TracedKind::unary;
}

}  // namespace

// Chains are found once, at construction, so forward allocates nothing.
// Every node has at most one successor (its first later fusable reader) and
// one predecessor (its only operand), so the chains are disjoint paths. A
// follower is computed at its head's turn, which is safe: it reads only its
// predecessor's value, made just before it in the same call, and writes only
// its own aux slot, which no node before it reads. A chain longer than the
// maximum is cut: the node after the last link heads the next chain.
void TracedGraph::plan_unary_chains() {
  const int n = static_cast<int>(nodes_.size());
  for (int h = 0; h < n; ++h) {
    if (!fusable(nodes_[static_cast<size_t>(h)]) || nodes_[static_cast<size_t>(h)].chain_follower)
      continue;
    int cur = h, len = 1;
    while (len < Backend::kMaxUnaryChain) {
      int next = -1;
      for (int j = cur + 1; j < n && next < 0; ++j) {
        const Node& c = nodes_[static_cast<size_t>(j)];
        if (fusable(c) && !c.chain_follower && c.in[0].kind == RefKind::node &&
            c.in[0].index == cur)
          next = j;
      }
      if (next < 0) break;
      nodes_[static_cast<size_t>(cur)].chain_next = next;
      nodes_[static_cast<size_t>(next)].chain_follower = true;
      cur = next;
      ++len;
    }
  }
}

void TracedGraph::run_unary_chain(Backend& be, const Ptrs& p, const Node& head) const {
  UnaryOp ops[Backend::kMaxUnaryChain];
  float* outs[Backend::kMaxUnaryChain];
  int count = 0;
  for (int i = static_cast<int>(&head - nodes_.data()); i >= 0;
       i = nodes_[static_cast<size_t>(i)].chain_next) {
    MR_CHECK(count < Backend::kMaxUnaryChain, internal, "unary chain longer than planned");
    ops[count] = static_cast<UnaryOp>(nodes_[static_cast<size_t>(i)].sub);
    outs[count] = value_ptr(p, Ref{RefKind::node, i});
    ++count;
  }
  be.unary_chain(floats(head.shape, p.rows), ops, count, value_ptr(p, head.in[0]), outs);
}

}  // namespace mr
