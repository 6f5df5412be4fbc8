// A traced graph (issue 15, docs/traced-graphs.md §3-4): the op graph that an
// R function written with op_* is traced into, parsed from its JSON once,
// shape-checked with the batch axis symbolic, and run forward and backward on
// a Backend with buffers the caller sizes at compile time.
//
// Values. A graph input is batched when its JSON shape starts with null
// (its rows are only known at run time), else a fixed-shape value (eager
// op_* on R arrays build such graphs). Weights and constants are not
// batched. A node is batched when its result keeps the batch axis first;
// a reduction over the batch axis (or a logsumexp along it) gives a value
// that is not batched (local to this replica's rows, as Keras under a
// MirroredStrategy). Every value is stored row-major and contiguous; a
// batched value of per-sample size n takes rows * n floats.
//
// Buffers (sizes from aux_floats / scratch_floats / constant_floats, all
// made before any step; forward and backward allocate nothing):
//   aux       every node's forward value, kept for backward (no liveness
//             reuse yet), the permuted operand of a reduction over axes
//             apart, and forward's one temporary;
//   scratch   gradient buffers of the nodes, three shared temporaries of
//             the VJPs, and gradient sinks for inputs and weights the
//             caller passes no gradient buffer for;
//   constants the graph's constants, uploaded once by upload_constants().
// Views (reshape, expand_dims, squeeze) alias their operand's value and
// gradient buffers: they cost no copy and no VJP. Backward walks the nodes
// in reverse; the first contribution to a gradient buffer (planned at
// construction) writes it, later ones are added (axpy, or gemm's beta), so a
// value used twice gets the sum of its gradients. Every op is a Backend op:
// the graph runs on any backend, deterministically where its ops are.
// Not thread-safe per call: one backend per call, buffers per replica; the
// graph itself is immutable after construction and may be shared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/json.h"
#include "core/op_kinds.h"

namespace mr {

// What a run of a graph needs besides its buffers when it holds dropout
// ops (Keras' Dropout called inside a custom layer's call()): the pass's
// training flag (they drop only while training), the step's device block
// (core/step_scalars.h: the step keys the masks), the calling layer node's
// stream and the replica's first global row, so that a sample's mask
// depends on its place in the global batch and not on the split. The
// default is inference: dropout passes its input through.
struct TracedRun {
  bool training = false;
  const StepScalars* scalars = nullptr;  // null: the step is taken as 0
  uint32_t stream = 0;
  int64_t row_offset = 0;
};

class TracedGraph {
 public:
  // A reference of a node operand or a graph output.
  enum class RefKind { input, weight, constant, node };
  struct Ref {
    RefKind kind = RefKind::node;
    int index = 0;
  };
  // A value's shape: full dims, dims[0] == -1 standing for the rows when
  // batched.
  struct ValueShape {
    bool batched = false;
    std::vector<int64_t> dims;
  };

  // Parses and checks `graph` (docs/traced-graphs.md §3). mr::Error (value
  // or shape) naming the node index, its op and its "line" on any fault.
  // fuse_unary_chains (i15-fuse): run chains of unary nodes as one
  // Backend::unary_chain call (same values; false is for tests comparing
  // against the unfused run).
  explicit TracedGraph(const Json& graph, bool fuse_unary_chains = true);

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_weights() const { return static_cast<int>(weights_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const ValueShape& input_shape(int i) const { return inputs_.at(static_cast<size_t>(i)); }
  const ValueShape& weight_shape(int i) const { return weights_.at(static_cast<size_t>(i)); }
  std::vector<ValueShape> output_shapes() const;
  // Floats of output i (or of any value shape) for `rows` rows.
  int64_t output_floats(int i, int64_t rows) const;

  int64_t constant_floats() const { return static_cast<int64_t>(constant_values_.size()); }
  // dst (device, constant_floats() floats) = the constants, in graph order.
  // Call once per backend, outside the steps.
  void upload_constants(Backend& be, float* dst) const;
  // The node values, then one temporary of forward (mean's sum).
  int64_t aux_floats(int64_t rows) const { return aux_per_row() * rows + aux_fixed(); }
  int64_t scratch_floats(int64_t rows) const;
  // The two parts of those sizes, for callers that size buffers for a row
  // budget themselves (a layer's per-row aux): aux_floats(rows) ==
  // aux_per_row() * rows + aux_fixed(), and scratch_floats(rows) ==
  // scratch_per_row() * rows + scratch_fixed(), for every rows >= 0.
  int64_t aux_per_row() const { return aux_pr_ + tmp_pr_; }
  int64_t aux_fixed() const { return aux_fixed_ + tmp_fixed_; }
  int64_t scratch_per_row() const { return grad_pr_ + sink_pr_ + 3 * tmp_pr_; }
  int64_t scratch_fixed() const { return grad_fixed_ + sink_fixed_ + 3 * tmp_fixed_; }

  // outputs[i] = graph output i (output_floats(i, rows) floats; outputs are
  // nodes or inputs). inputs[i]: rows x per-sample floats (batched) or its
  // shape's floats (unbatched); weights[i]:
  // their shape's floats; constants: as upload_constants() wrote them (may
  // be null without constants); aux: aux_floats(rows) floats. All pointers
  // are device memory of `be`; rows >= 0.
  void forward(Backend& be, int64_t rows, const float* const* inputs, const float* const* weights,
               const float* constants, float* const* outputs, float* aux,
               const TracedRun& run = TracedRun()) const;
  // Gradients of sum_i <outputs[i], d_outputs[i]>: d_inputs[i] (null: not
  // wanted) and d_weights[i] (null: not wanted) are written, not
  // accumulated (zeros where no path reaches them). aux as forward left it
  // for the same rows and inputs; scratch: scratch_floats(rows) floats.
  // d_inputs / d_weights as arrays may be null (no gradient wanted at all).
  void backward(Backend& be, int64_t rows, const float* const* inputs, const float* const* weights,
                const float* constants, const float* aux, float* scratch,
                const float* const* d_outputs, float* const* d_inputs, float* const* d_weights,
                const TracedRun& run = TracedRun()) const;

  // The plan of one node (public for traced_ops.cpp; not an interface).
  struct Node {
    std::string op, line;
    int kind = 0;  // TracedKind (traced_ops.cpp)
    int sub = 0;   // UnaryOp / BinaryOp / ReduceOp / SoftmaxOp as int
    std::vector<Ref> in;
    ValueShape shape;
    // Reduction / softmax view of the operand: outer x extent x inner, with
    // the rows a factor of the field named by rows_in (0 none, 1 outer,
    // 2 extent).
    int64_t outer = 1, extent = 1, inner = 1;
    int rows_in = 0;
    Broadcast bc;  // binary / where, batch extent 2 (scaled at run time)
    bool bc_batched = false;
    // transpose; reduce / mean over axes apart: kept axes, then reduced ones
    std::vector<int64_t> perm;
    int64_t perm_off = 0;  // reduce / mean over axes apart: the permuted operand in aux
    int64_t m = 0, n = 0, k = 0, loops = 0;  // matmul
    bool view = false;
    bool needs_grad = false;
    bool runs_vjp = false;                        // some gradient reaches it in backward
    bool first_write[3] = {false, false, false};  // VJP contribution to operand j writes
    Ref value_root, grad_root;                    // views: their operand's roots
    int64_t value_off = 0, grad_off = 0;          // own buffers (roots only)
    // ---- i15-ops: index, copy and cast ops (traced_shapes.cpp, traced_index_ops.cpp) ----
    // one_hot: outer x extent (the classes) x inner / rows_in of the output.
    // argmax: outer / extent / inner / rows_in as a reduction.
    // take_along_axis: outer (rows_in) x extent (n) x inner of x broadcast
    //   (bx_floats per sample), k = indices' extent; bc: x to its broadcast
    //   shape (when bcast_x), bc2: indices to the output's (when bcast_i),
    //   idx_off: the broadcast indices in aux (kept for backward).
    // concatenate / stack: axis of the output, each operand's start and
    //   extent along it. slice: starts per axis, the box in shape.
    int axis = 0;
    std::vector<int64_t> starts, extents;
    Broadcast bc2;
    bool bcast_x = false, bcast_i = false;
    int64_t idx_off = 0, bx_floats = 0;
    // ---- i15-fuse: unary chains (nn/traced_fusion.cpp) ----
    // chain_next: the next link of this node's chain (-1: none); a chain
    // runs at its head (chain_follower false) and its followers are skipped.
    int chain_next = -1;
    bool chain_follower = false;
    // ---- dropout (nn/traced_random_ops.cpp) ----
    // Its rate and seed; the mask (a batched value's rows x per-sample
    // floats, or the value's floats) at mask_off in aux, kept for backward.
    float rate = 0.0f;
    uint64_t seed = 0;
    int64_t mask_off = 0;
  };

 private:
  struct Ptrs;
  void infer_node(int index, Node& nd, const std::vector<ValueShape>& ops, const Json& j);
  // i15-ops: the shapes of the index, copy and cast ops (traced_shapes.cpp).
  void infer_index_node(int index, Node& nd, const std::vector<ValueShape>& ops, const Json& j);
  // Whether operand k of nd can receive a gradient (where's cond, argmax,
  // one_hot, take_along_axis' indices, integer casts, comparisons: no).
  bool grad_flows(const Node& nd, size_t k) const;
  void plan();
  float* value_ptr(const Ptrs& p, Ref r) const;
  float* grad_ptr(const Ptrs& p, Ref r) const;
  const ValueShape& shape_of(Ref r) const;
  int64_t floats(const ValueShape& s, int64_t rows) const;
  bool ref_needs_grad(Ref r) const;
  float* perm_ptr(const Ptrs& p, const Node& nd) const;
  const float* reduce_src(Backend& be, const Ptrs& p, const Node& nd) const;
  void run_forward(Backend& be, const Ptrs& p, const Node& nd) const;
  void run_backward(Backend& be, const Ptrs& p, const Node& nd) const;
  // i15-ops: the index, copy and cast ops' forward and VJP (traced_index_ops.cpp).
  void run_index_forward(Backend& be, const Ptrs& p, const Node& nd) const;
  void run_index_backward(Backend& be, const Ptrs& p, const Node& nd) const;
  // Dropout's forward and VJP (traced_random_ops.cpp).
  void run_dropout_forward(Backend& be, const Ptrs& p, const Node& nd) const;
  void run_dropout_backward(Backend& be, const Ptrs& p, const Node& nd) const;
  // take_along_axis' broadcast indices in aux.
  float* idx_ptr(const Ptrs& p, const Node& nd) const;
  // ---- i15-fuse: unary chains (nn/traced_fusion.cpp) ----
  void plan_unary_chains();
  void run_unary_chain(Backend& be, const Ptrs& p, const Node& head) const;

  std::vector<ValueShape> inputs_, weights_, constants_;
  std::vector<int64_t> constant_offsets_;
  std::vector<float> constant_values_;
  std::vector<Node> nodes_;
  std::vector<Ref> outputs_;
  std::vector<bool> output_first_, output_grad_;
  std::vector<bool> weight_written_, input_written_;
  int64_t aux_pr_ = 0, aux_fixed_ = 0;
  int64_t grad_pr_ = 0, grad_fixed_ = 0;
  int64_t tmp_pr_ = 0, tmp_fixed_ = 0;
  int64_t sink_pr_ = 0, sink_fixed_ = 0;
  std::vector<int64_t> sink_off_, wsink_off_;
};

}  // namespace mr
