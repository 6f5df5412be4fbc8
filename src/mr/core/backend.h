// The op set. Layers, losses, metrics and optimizers are written once against
// this interface; each backend (cpu/, cuda/) implements it. All pointers are
// device pointers of the backend that receives them, all matrices are row-major
// and dense (leading dimension = columns unless an ld argument says otherwise).
//
// Invariants every implementation keeps:
// - ops are ordered: an op sees the results of every op issued before it on the
//   same backend (a CUDA backend uses one compute stream per replica);
// - ops never allocate on the hot path beyond what allocate() returned before;
// - results are deterministic for a given input (no atomics whose order changes
//   sums), so replicas stay bit-identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "core/conv_geometry.h"
#include "core/dtype.h"
#include "core/metric_spec.h"
#include "core/step_scalars.h"
#include "core/update_ops.h"
#include "core/wait.h"

namespace mr {

enum class DeviceKind { cpu, cuda };

// Element-wise activations, except softmax and log_softmax (row-wise over the
// last axis). Formulas: backends/common/kernel_math.h (Keras 3 semantics).
enum class Activation {
  linear,
  relu,
  sigmoid,
  tanh,
  softmax,
  gelu,
  // Appended (the values above keep their numbers): a new one goes at the end,
  // with its cases in kmath::act_value / act_grad (x / 1 for unknown values).
  elu,
  selu,
  silu,
  leaky_relu,
  relu6,
  softplus,
  softsign,
  hard_sigmoid,
  hard_silu,
  exponential,
  mish,
  log_softmax
};

// Parameters of the parametrised activations; the defaults give each
// activation's plain (string-named) form:
// - relu: f(x) = x > threshold ? min(x, max_value) : 0, minus alpha * max(threshold - x, 0)
//   (Keras' relu(x, negative_slope = alpha, max_value, threshold));
// - leaky_relu: x >= 0 ? x : alpha * x (alpha NaN: Keras' 0.2);
// - elu: x > 0 ? x : alpha * (exp(x) - 1) (alpha NaN: 1).
// Other activations ignore them.
struct ActivationParams {
  float alpha = std::numeric_limits<float>::quiet_NaN();  // NaN: the activation's default
  float max_value = std::numeric_limits<float>::infinity();
  float threshold = 0.0f;
};

// Losses compute per-sample values (the mean over the last axis for the
// element-wise ones, as Keras' loss functions do) and their gradient.
enum class LossKind {
  sparse_categorical_crossentropy,  // target: class index per row (stored as float)
  categorical_crossentropy,         // target: same shape as prediction
  binary_crossentropy,              // target: same shape as prediction, 0..1
  mean_squared_error,               // target: same shape as prediction
  // Issue 13 (appended; formulas in backends/common/loss_math.h). Targets
  // have the prediction's shape.
  huber,
  mean_absolute_error,
  mean_absolute_percentage_error,
  mean_squared_logarithmic_error,
  log_cosh,
  kl_divergence,
  poisson,
  cosine_similarity,
  hinge,
  squared_hinge,
  categorical_hinge,
  binary_focal_crossentropy,
  categorical_focal_crossentropy
};

// The arguments of Keras 3's loss classes (their get_config() names); each
// loss reads the ones it takes and ignores the others. Defaults are Keras'.
struct LossParams {
  bool from_logits = false;      // the crossentropies, focal crossentropies
  float label_smoothing = 0.0f;  // binary / categorical (focal) crossentropy
  // sparse categorical crossentropy: rows whose label equals ignore_class
  // (when has_ignore) get loss 0 and gradient 0 (Keras' mask).
  bool has_ignore = false;
  float ignore_class = 0.0f;
  // With has_ignore, the other rows' losses and gradients are multiplied by
  // valid_weight: the step sets it, per global batch, to rows / valid rows,
  // as Keras' apply_mask does, so that sum / global rows is the mean over
  // the valid rows ("sum_over_batch_size" of a masked loss).
  float valid_weight = 1.0f;
  // Every row's loss and gradient times position_weight: 1 / the positions
  // per sample of a variable-length output's batch (nn/graph.h), so that
  // the logged loss weighs each batch's mean by its samples, as Keras'
  // loss tracker does, whatever its length. 1 otherwise.
  float position_weight = 1.0f;
  float delta = 1.0f;                  // huber
  float alpha = 0.25f;                 // focal crossentropies
  float gamma = 2.0f;                  // focal crossentropies
  bool apply_class_balancing = false;  // binary focal crossentropy
  // hinge, squared_hinge: the targets are mapped to 2 t - 1. Keras does so
  // when every target of the batch is 0 or 1; the step sets it from the
  // global batch (batch_loss_params in nn/loss.h).
  bool binary_labels = false;
};

// The index box of a strided_copy (see Backend::strided_copy); a trivially
// copyable value, passed to device kernels as it is.
constexpr int kMaxStridedRank = 8;
struct StridedCopy {
  int rank = 0;
  int64_t dims[kMaxStridedRank] = {};
  int64_t src_stride[kMaxStridedRank] = {};
  int64_t dst_stride[kMaxStridedRank] = {};
  int sum_rank = 0;
  int64_t sum_dims[kMaxStridedRank] = {};
  int64_t sum_stride[kMaxStridedRank] = {};
};

// The strided_copy that transposes a row-major rows x cols matrix:
// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols (lds >= cols,
// ldd >= rows). The CPU runs it on a register transpose when cols <= 16.
inline StridedCopy matrix_transpose(int64_t rows, int64_t cols, int64_t lds, int64_t ldd) {
  StridedCopy c;
  c.rank = 2;
  c.dims[0] = cols;
  c.dims[1] = rows;
  c.src_stride[0] = 1;
  c.src_stride[1] = lds;
  c.dst_stride[0] = ldd;
  c.dst_stride[1] = 1;
  return c;
}

class Backend;
struct TeamStatus;  // core/thread_team.h

// ---- i15-ops: the kinds and index box of the traced-graph ops (defined in
// core/op_kinds.h, which includes this header; declared here so that the op
// set below can name them) ----
enum class UnaryOp;
enum class BinaryOp;
enum class ReduceOp;
enum class SoftmaxOp;
enum class CastOp;
struct Broadcast;

// What Backend::memory_use() reports (i14-monitor), in bytes.
struct MemoryUse {
  int64_t in_use = 0;
  int64_t peak = 0;
  int64_t device_used = -1;
};

// Frees device memory through the backend that allocated it.
struct DeviceFree {
  Backend* owner = nullptr;
  void operator()(void* p) const noexcept;
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

// A point in a backend's op order, made by create_event(): recorded on one of
// the backend's lanes, waited for by another lane or by another backend of
// the same kind (a communicator orders its copies or its NCCL stream after
// the gradients through events, without knowing the backend). Opaque: only
// backends of the kind that made it look inside.
class Event {
 public:
  virtual ~Event() = default;
};

// The queues of a backend. Ops always run on `compute`; `copy` is a second
// queue for transfers that may overlap compute (a CUDA copy stream). A
// backend without one (the CPU, whose ops are synchronous) runs copy-lane
// work at once, in order.
enum class Lane { compute, copy };

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual DeviceKind kind() const = 0;
  // "cpu:0", "cuda:1", ...
  virtual std::string name() const = 0;

  // ---- memory ---------------------------------------------------------------
  // Returns zeroed memory aligned to at least 64 bytes. bytes == 0 is allowed.
  virtual DeviceBuffer allocate(size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void upload(void* dst, const void* host_src, size_t bytes) = 0;
  // A host wait for the work queued before it on a GPU; counted (tests).
  virtual void download(void* host_dst, const void* src, size_t bytes) = 0;
  int64_t downloads() const { return downloads_; }
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // Waits until every op issued so far has finished.
  virtual void synchronize() = 0;
  // How long host waits for this device may take and what stops them
  // (core/wait.h): the model's collective timeout, the communicator's abort.
  void set_wait_limits(const WaitLimits& limits) { limits_ = limits; }
  const WaitLimits& wait_limits() const { return limits_; }
  // Sizes host staging (pinned on a GPU) so that uploads of up to `bytes`
  // inside a step never allocate; outside steps (compile time).
  virtual void reserve_staging(size_t /*bytes*/) {}

  // ---- events and lanes -----------------------------------------------------
  // A new event, complete until first recorded.
  virtual std::unique_ptr<Event> create_event() = 0;
  // Marks the point after all work issued so far on `lane`.
  virtual void record_event(Event& e, Lane lane = Lane::compute) = 0;
  // Later work on `lane` starts after `e` completed; e may come from another
  // backend of the same kind (another GPU). The host does not wait.
  virtual void wait_event(const Event& e, Lane lane = Lane::compute) = 0;
  // True when the work before `e`'s last record has finished (never blocks).
  virtual bool event_done(const Event& e) = 0;
  // Host wait for `e`, with this backend's wait limits (deadline, abort).
  void wait_host(const Event& e, const std::string& what);
  // dst = src on `lane` (dst and src may be on different devices of this
  // kind, as peer copies are). Ordered after earlier work on that lane only.
  virtual void copy_on(Lane lane, void* dst, const void* src, size_t bytes) = 0;

  // ---- dtypes ---------------------------------------------------------------
  // Whether gemm / the element-wise ops implement `t`; the typed entry points
  // below throw mr::Error (value) naming the op, the dtype and the device
  // otherwise. Every backend implements f32.
  virtual bool gemm_supports(DType t) const { return t == DType::f32; }
  virtual bool elementwise_supports(DType t) const { return t == DType::f32; }
  // gemm on typed pointers (a, b inputs of `a.dtype`/`b.dtype`, c of c.dtype).
  void gemm_typed(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  TypedPtr a, int64_t lda, TypedPtr b, int64_t ldb, float beta, TypedPtr c,
                  int64_t ldc);
  // y += alpha * x on typed pointers.
  void axpy_typed(int64_t n, float alpha, TypedPtr x, TypedPtr y);

  // Lets gemm use TF32 tensor cores (10-bit mantissa inputs: results move by
  // ~1e-3 relative). Off by default; backends without such units ignore it.
  virtual void set_tf32(bool /*on*/) {}
  // How many times this backend asked its system for memory (aligned_alloc;
  // cudaMalloc and cudaHostAlloc). Tests check that a step adds none.
  virtual int64_t system_allocations() const = 0;

  // ---- element-wise and BLAS ------------------------------------------------
  virtual void fill(int64_t n, float* x, float value) = 0;
  // y += alpha * x
  virtual void axpy(int64_t n, float alpha, const float* x, float* y) = 0;
  // C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C; op(X) = X or X^T.
  virtual void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                    int64_t ldc) = 0;
  // Whether a layer whose weight W[k, units] has units <= 16 columns should
  // keep W^T for the step: forward x W as the NT product x (W^T)^T and
  // backward dx = dz W^T as the NN product dz (W^T), both from one transposed
  // copy made by strided_copy in forward. True where gemm would otherwise
  // transpose W inside each of the two products (the CPU's narrow kernels);
  // cuBLAS reads either layout as it is.
  virtual bool keeps_transposed_narrow_weights(int64_t /*units*/) const { return false; }
  // y[r, c] += bias[c]
  virtual void bias_add(int64_t rows, int64_t cols, const float* bias, float* y) = 0;
  // db[c] = (accumulate ? db[c] : 0) + sum_r dy[r, c]
  virtual void bias_grad(int64_t rows, int64_t cols, const float* dy, float* db,
                         bool accumulate) = 0;

  // ---- activations (row-wise for softmax and log_softmax) --------------------
  // y may alias x for linear, relu (default params), sigmoid, tanh and
  // log_softmax (their backward reads y only); the others' backward reads x,
  // so x must survive the forward (softmax and gelu refuse to run in place).
  virtual void activation_forward(Activation act, int64_t rows, int64_t cols, const float* x,
                                  float* y, const ActivationParams& p = {}) = 0;
  // dx from the input x, the output y and the output gradient dy. dx may alias dy.
  virtual void activation_backward(Activation act, int64_t rows, int64_t cols, const float* x,
                                   const float* y, const float* dy, float* dx,
                                   const ActivationParams& p = {}) = 0;

  // ---- dropout ----------------------------------------------------------------
  // mask[i] = 0 or 1/(1-rate), drawn from Philox keyed by (seed, step, stream,
  // row_offset*cols + i) so that the mask of a global row does not depend on
  // which replica computes it; y = x * mask where mask != 0, else exactly 0 (a
  // dropped NaN gives 0, as TensorFlow's dropout selects).
  // The step comes from the device-resident block `s` (core/step_scalars.h).
  virtual void dropout_forward(int64_t rows, int64_t cols, float rate, uint64_t seed,
                               const StepScalars* s, uint32_t stream, int64_t row_offset,
                               const float* x, float* mask, float* y) = 0;
  // The same with the step as an argument, for callers without a block
  // (tests, one-off calls): stages it in the backend's own block first.
  void dropout_forward(int64_t rows, int64_t cols, float rate, uint64_t seed, uint64_t step,
                       uint32_t stream, int64_t row_offset, const float* x, float* mask, float* y);
  // dx = dy * mask (dx may alias dy)
  virtual void multiply(int64_t n, const float* a, const float* b, float* out) = 0;

  // ---- batch normalization (over the columns of a rows x cols view) ---------
  // out[c] = scale * sum_r x[r, c] when mean is null, else
  // scale * sum_r (x[r, c] - mean[c])^2; accumulated in double, in row order.
  // rows == 0 writes zeros.
  virtual void column_moments(int64_t rows, int64_t cols, const float* x, const float* mean,
                              float scale, float* out) = 0;
  // y = (x - mean) / sqrt(var + eps) * gamma + beta; gamma / beta null mean 1 / 0.
  virtual void batch_norm_forward(int64_t rows, int64_t cols, const float* x, const float* mean,
                                  const float* var, const float* gamma, const float* beta,
                                  float eps, float* y) = 0;
  // sum_dy[c] = sum_r dy[r, c]; sum_dy_xhat[c] = sum_r dy[r, c] * xhat[r, c] with
  // xhat = (x - mean) / sqrt(var + eps). rows == 0 writes zeros.
  virtual void batch_norm_backward_reduce(int64_t rows, int64_t cols, const float* dy,
                                          const float* x, const float* mean, const float* var,
                                          float eps, float* sum_dy, float* sum_dy_xhat) = 0;
  // dx = gamma / sqrt(var + eps) * (dy - inv_n * sum_dy - xhat * inv_n * sum_dy_xhat);
  // gamma null means 1. dx may alias dy.
  virtual void batch_norm_backward(int64_t rows, int64_t cols, const float* dy, const float* x,
                                   const float* mean, const float* var, const float* gamma,
                                   float eps, const float* sum_dy, const float* sum_dy_xhat,
                                   float inv_n, float* dx) = 0;

  // ---- losses and metrics ---------------------------------------------------
  // pred, target: rows x cols (sparse CE: target is rows x 1 of class indices).
  // sample_weight: null (every weight 1) or `rows` floats, w_r multiplying
  // row r's loss and its gradient (Keras: sum_r w_r l_r, which the caller
  // divides by the global batch size -- the number of samples, not the sum
  // of the weights).
  // Writes dpred = grad_scale * w_r * d(per-sample loss)/d(pred) (not when
  // dpred is null) and adds sum_r w_r * (per-sample loss of r) to *loss_acc
  // (not when loss_acc is null). NaN or Inf in pred, target or weights
  // propagate to the loss (never a finite clamped value), as in TensorFlow.
  // Class indices outside 0..cols-1 (other than p.ignore_class) make the op
  // throw mr::Error (value).
  virtual void loss(LossKind kind, const LossParams& p, int64_t rows, int64_t cols,
                    const float* pred, const float* target, const float* sample_weight,
                    float grad_scale, float* dpred, double* loss_acc) = 0;
  // Adds this slice's terms into the metric's state (core/metric_spec.h):
  // state[j] += sum over rows r of w_r * term_j(row r), w_r =
  // sample_weight[r] (null: 1). pred: rows x cols; target: rows x
  // metric_target_width(m, cols). Deterministic: each state element sums its
  // rows in a fixed order (the counts are integers or sums of the weights).
  virtual void metric(const MetricSpec& m, int64_t rows, int64_t cols, const float* pred,
                      const float* target, const float* sample_weight, double* state) = 0;

  // ---- optimizer updates over flat buffers (Keras 3 formulas) -----------------
  // Weight decay first when wd_lr > 0: w -= w * wd_lr (wd_lr = weight_decay * lr).
  // SGD: momentum == 0: w -= lr * g; else m = momentum*m - lr*g and
  //      w += m (nesterov: w += momentum*m - lr*g). m may be null when momentum == 0.
  // lr and wd_lr come from the device-resident block `s`.
  virtual void sgd_update(int64_t n, float* w, const float* g, float* m, const StepScalars* s,
                          float momentum, bool nesterov) = 0;
  // Adam: m += (g - m)(1-b1); v += (g^2 - v)(1-b2); w -= alpha * m / (sqrt(v) + eps),
  // alpha = lr * sqrt(1 - b2^t) / (1 - b1^t) computed by the caller.
  // amsgrad: vhat = max(vhat, v) and vhat replaces v in the denominator; vhat is
  // null when amsgrad is off.
  // alpha and wd_lr come from the device-resident block `s`.
  virtual void adam_update(int64_t n, float* w, const float* g, float* m, float* v, float* vhat,
                           const StepScalars* s, float beta1, float beta2, float epsilon) = 0;
  // RMSprop: v = rho*v + (1-rho) g^2; centered: a = rho*a + (1-rho) g and
  // denom = v - a^2 + eps, else denom = v + eps; inc = lr * g / sqrt(denom);
  // momentum > 0: mom = momentum*mom + inc, w -= mom; else w -= inc.
  // Centered is signalled by a != null; mom may be null when momentum == 0.
  // lr and wd_lr come from the device-resident block `s`.
  virtual void rmsprop_update(int64_t n, float* w, const float* g, float* v, float* a, float* mom,
                              const StepScalars* s, float rho, float momentum, float epsilon) = 0;

  // The updates with the per-step values as arguments, for callers without
  // a block (tests, one-off updates): they stage them in the backend's own
  // block first.
  void sgd_update(int64_t n, float* w, const float* g, float* m, float lr, float momentum,
                  bool nesterov, float wd_lr);
  void adam_update(int64_t n, float* w, const float* g, float* m, float* v, float* vhat,
                   float alpha, float beta1, float beta2, float epsilon, float wd_lr);
  void rmsprop_update(int64_t n, float* w, const float* g, float* v, float* a, float* mom, float lr,
                      float rho, float momentum, float epsilon, float wd_lr);
  // Writes `s` into the backend's own block (made with the backend) and
  // returns its device address; ordered like any op.
  virtual const StepScalars* stage_scalars(const StepScalars& s) = 0;

  // ---- layer normalization, embedding lookup, feature normalization --------
  // (LayerNormalization, Embedding and Normalization layers.)
  //
  // Layer normalization of each row of a rows x cols view (the normalized
  // axes flattened into cols). Per row, in double, in column order: mean =
  // sum x / cols, var = sum (x - mean)^2 / cols (two passes), inv = 1 /
  // sqrt(var + eps). Then, as Keras' ops.layer_normalization:
  //   rms == false: y = (x - mean) * inv * gamma + beta;
  //   rms == true (Keras' deprecated rms_scaling): y = x * inv * gamma.
  // gamma / beta null mean 1 / 0. stats (2 floats per row) receives
  // (mean, inv) for backward. rows == 0 does nothing.
  virtual void layer_norm_forward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                                  const float* beta, float eps, bool rms, float* stats,
                                  float* y) = 0;
  // With u = (x - mean) * inv (rms: u = x * inv), xhat = (x - mean) * inv and
  // g = dy * gamma: dx = inv * (g - mean_c(g) - xhat * mean_c(g * u)), the
  // mean_c(g) term dropped when rms; row sums in double. dx may be null (no
  // input gradient). dgamma[c] = sum_r dy * u and dbeta[c] = sum_r dy, in
  // double in row order, when not null; rows == 0 writes zeros to them.
  virtual void layer_norm_backward(int64_t rows, int64_t cols, const float* dy, const float* x,
                                   const float* gamma, const float* stats, bool rms, float* dx,
                                   float* dgamma, float* dbeta) = 0;
  // y[i, :] = table[idx[i], :] for i < n (idx: n indices stored as floats,
  // table: input_dim x output_dim). An index that is not an integer in
  // 0..input_dim-1 is an error (value) naming it and its position: thrown
  // at once by a synchronous backend; a CUDA backend writes zeros for it and
  // the next download()/synchronize() throws (as for bad labels).
  virtual void embedding_forward(int64_t n, int64_t input_dim, int64_t output_dim, const float* idx,
                                 const float* table, float* y) = 0;
  // dtable = 0, then dtable[idx[i], :] += dy[i, :] for i = 0..n-1 in that
  // order (indices already checked by embedding_forward): every element's
  // sum is taken in index order, whatever the device. n == 0 writes zeros.
  virtual void embedding_backward(int64_t n, int64_t input_dim, int64_t output_dim,
                                  const float* idx, const float* dy, float* dtable) = 0;
  // Keras' Normalization: with s = max(sqrt(var[c]), 1e-7) (Keras' epsilon),
  // y = (x - mean[c]) / s, or y = mean[c] + x * s when invert.
  virtual void normalize_columns(int64_t rows, int64_t cols, const float* x, const float* mean,
                                 const float* var, bool invert, float* y) = 0;
  // dx = dy / s, or dy * s when invert. dx may alias dy.
  virtual void normalize_columns_backward(int64_t rows, int64_t cols, const float* dy,
                                          const float* var, bool invert, float* dx) = 0;
  // ---- shape and merge ops (reshaping and merging layers, issue 12) ------------
  // strided_copy: for every index i = (i_0, .., i_{rank-1}) of the box `dims`,
  //   dst[sum_k i_k dst_stride[k]] = sum_j src[sum_k i_k src_stride[k] + sum_l j_l sum_stride[l]]
  // with j running over the box `sum_dims` (sum_rank == 0: a plain copy), summed
  // in j's row-major order in float, so the result depends only on the inputs.
  // One op serves permutes, crops and pads (windows), repeats (stride 0) and
  // their adjoints (sums over the repeated axes). Strides count floats; the
  // destination positions must be distinct (no two i write the same float).
  // An empty box does nothing. Implementations: cpu_strided.cpp, cuda_strided.cu.
  virtual void strided_copy(const StridedCopy& c, const float* src, float* dst) = 0;
  // out = is_max ? (a >= b ? a : b) : (a <= b ? a : b), element-wise, NaN when a or b
  // is NaN (TensorFlow's maximum / minimum); out may alias a or b.
  virtual void extremum(int64_t n, bool is_max, const float* a, const float* b, float* out) = 0;
  // The gradient of y = max (or min) of inputs x_0, x_1, .. for one input x_k,
  // called for k = 0, 1, .. in order with `taken` zeroed before k = 0: the
  // gradient goes to the first input equal to y. Element-wise:
  //   hit = taken == 0 && x == y;  dx = hit ? dy : 0 (dx null: not written);
  //   taken = (taken != 0 || x == y) ? 1 : 0, where NaN == NaN counts as equal.
  virtual void extremum_grad(int64_t n, const float* x, const float* y, const float* dy,
                             float* taken, float* dx) = 0;
  // Keras' l2_normalize over each row of a rows x cols view (Dot's normalize):
  // y[r, :] = x[r, :] / sqrt(max(sum_c x[r, c]^2, 1e-12)), the sum in double.
  virtual void l2_normalize_rows(int64_t rows, int64_t cols, const float* x, float* y) = 0;
  // Its gradient: with s = sum_c x^2 and n = sqrt(s), dx = (dy - y <dy, y>) / n
  // when s >= 1e-12, else dx = dy / sqrt(1e-12) (the max passes no gradient to s).
  virtual void l2_normalize_rows_backward(int64_t rows, int64_t cols, const float* x,
                                          const float* dy, float* dx) = 0;
  // ---- convolution and pooling (channels_last) ------------------------------
  // x: rows x in_h x in_w x in_c, y: rows x out_h x out_w x out_c (1-D layers
  // use in_h = out_h = k_h = 1). The kernel w is Keras' (k_h, k_w, in_c/groups,
  // out_c), row-major. Padding is zeros (convolution), ignored elements
  // (pooling). `col` is workspace of conv_columns_per_row(g) * rows floats.
  // conv_forward: y = conv(x, w), no bias (bias_add follows). It leaves `col`
  //   in a state conv_backward_filter reads: the caller keeps `col` (and x)
  //   unchanged from forward to backward.
  // conv_backward_filter: dw = d(sum y*dy)/dw, written (rows == 0: zeros).
  // conv_backward_data: dx = d(sum y*dy)/dx, written; uses `col` as scratch, so
  //   it comes after conv_backward_filter.
  virtual void conv_forward(const ConvGeometry& g, int64_t rows, const float* x, const float* w,
                            float* y, float* col) = 0;
  virtual void conv_backward_filter(const ConvGeometry& g, int64_t rows, const float* x,
                                    const float* dy, float* dw, float* col) = 0;
  virtual void conv_backward_data(const ConvGeometry& g, int64_t rows, const float* dy,
                                  const float* w, float* dx, float* col) = 0;
  // Pooling over windows of k_h x k_w elements of each channel (out_c == in_c).
  // Max: the largest real element, NaN when the window holds a NaN (as
  // TensorFlow's reduce_max, GlobalMaxPooling and cuDNN's NaN-propagating mode;
  // TensorFlow's CPU MaxPool kernel alone skips NaNs); its backward gives dy
  // to the first element of the window (row-major window order) equal to y
  // (NaN counting as equal to NaN), recomputed
  // from x and y (deterministic; overlapping windows add in output order).
  // Average: the mean over the window's real (unpadded) elements, as
  // TensorFlow's "same" padding does. Backward writes dx (not accumulated).
  virtual void max_pool_forward(const ConvGeometry& g, int64_t rows, const float* x, float* y) = 0;
  virtual void max_pool_backward(const ConvGeometry& g, int64_t rows, const float* x,
                                 const float* y, const float* dy, float* dx) = 0;
  virtual void avg_pool_forward(const ConvGeometry& g, int64_t rows, const float* x, float* y) = 0;
  virtual void avg_pool_backward(const ConvGeometry& g, int64_t rows, const float* dy,
                                 float* dx) = 0;
  // ---- convolution engines (issue 12: cuDNN on the GPU) ----------------------
  // Called when a model's buffers are sized (Executor::reserve, never inside a
  // step) for every convolution it will run, with the most rows one pass of it
  // will get. A backend whose convolutions need resources of their own
  // (cuDNN's descriptors, algorithms and workspace) creates and sizes them
  // here, so that the conv_* ops allocate nothing. Optional: unprepared
  // convolutions (or rows > max_rows) run the im2col path, which needs only
  // `col`. The CPU backend prepares its oneDNN plans here when it has them.
  virtual void prepare_conv(const ConvGeometry& /*g*/, int64_t /*max_rows*/) {}
  // The implementation the conv_* ops use for (g, rows): "gemm" (pointwise),
  // "im2col", "onednn" (CPU) or "cudnn". All three passes of one (g, rows) take the same
  // path (forward's columns feed backward-filter on the im2col path).
  virtual std::string conv_path(const ConvGeometry& g, int64_t /*rows*/) {
    return g.pointwise() ? "gemm" : "im2col";
  }
  // ---- the update pipeline (issue 13, i13-opt: train/update.cpp) --------------
  // Segments are variables of the flat parameter buffer: `seg` is a device
  // array of 2 * nseg int64 (offset, size) in floats, made at compile().
  // Implementations: cpu_update.cpp, cuda_update.cu; per-element formulas in
  // backends/common/optimizer_math.h.
  //
  // out[k] = sum of x[i]^2 over segment k, accumulated in double in a fixed
  // order (the result depends only on x). nseg == 0 does nothing.
  virtual void segment_sumsq(int64_t nseg, const int64_t* seg, const float* x, double* out) = 0;
  // Keras' _clip_gradients over the segments of g, in place (c > 0):
  //   value: g = clip(g, -c, c), NaN stays NaN;
  //   norm: per segment k, l = sqrt(sumsq[k]) (0 when sumsq[k] <= 0),
  //         g = g * c / max(l, c) (tf.clip_by_norm);
  //   global_norm: l = sqrt(sum_k sumsq[k]) (summed in k order),
  //         g = g * (c * min(1 / l, 1 / c) + (l - l)) (NaN / Inf l: NaN).
  // sumsq is segment_sumsq(g) (unused by value).
  virtual void clip_gradients(GradientClip mode, float c, int64_t nseg, const int64_t* seg,
                              float* g, const double* sumsq) = 0;
  // One element-wise update of n floats with rule `rule` (Keras 3's formulas,
  // optimizer_math.h), weight decay first when s->wd_lr > 0. Slots: adagrad
  // s0 = accumulator; adadelta s0 = accumulated_grad, s1 = accumulated_delta_var;
  // adamax s0 = m, s1 = u; nadam s0 = m, s1 = v; ftrl s0 = accumulator,
  // s1 = linear; lion s0 = m. Unused slots may be null.
  virtual void optimizer_update(UpdateRule rule, int64_t n, float* w, const float* g, float* s0,
                                float* s1, const StepScalars* s, const UpdateHyper& h) = 0;
  // Lamb, first part: weight decay, m and v as Adam's, and the update
  // r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) (1 - b^t from s->opt[0..1]).
  // r may alias g.
  virtual void lamb_moments(int64_t n, float* w, const float* g, float* m, float* v, float* r,
                            const StepScalars* s, const UpdateHyper& h) = 0;
  // Lamb, second part: per segment k, with wn = sqrt(w_sq[k]), rn = sqrt(r_sq[k]),
  // ratio = wn > 0 && rn > 0 ? wn / rn : 1, w -= ratio * s->lr * r.
  virtual void lamb_apply(int64_t nseg, const int64_t* seg, float* w, const float* r,
                          const double* w_sq, const double* r_sq, const StepScalars* s) = 0;
  // EMA: avg = m * avg + (1 - m) * w with m = s->ema_momentum.
  virtual void ema_update(int64_t n, float* avg, const float* w, const StepScalars* s) = 0;
  // Gradient accumulation's applying step: g = (g + acc) / steps, then acc = 0.
  virtual void accumulate_apply(int64_t n, float* g, float* acc, float steps) = 0;
  // ---- regularization and constraints (issue 13, i13-reg) -------------------
  // Implementations: cpu_regularization.cpp, cuda_regularization.cu. Sums are
  // taken in double in a fixed order that depends only on n (deterministic).
  //
  // Keras' L1L2 penalty of x[0..n): p = l1 * sum |x_i| + l2 * sum x_i^2.
  // *acc += scale * p when acc is not null; grad[i] += grad_scale * (l1 *
  // sign(x_i) + 2 * l2 * x_i) when grad is not null (sign(0) = 0, NaN stays
  // NaN). n == 0 adds nothing.
  virtual void l1_l2_penalty(int64_t n, const float* x, float l1, float l2, double scale,
                             double* acc, float grad_scale, float* grad) = 0;
  // Keras' MaxNorm / UnitNorm / MinMaxNorm on w viewed as outer x reduce x
  // inner (row-major): for each (o, i), norm = sqrt(sum_r w^2) (double, then
  // float), desired = rate * clip(norm, min_value, max_value) + (1 - rate) *
  // norm, and w *= desired / (1e-7 + norm), in float as Keras computes it.
  virtual void norm_constraint(int64_t outer, int64_t reduce, int64_t inner, float min_value,
                               float max_value, float rate, float* w) = 0;
  // Keras' NonNeg: w = w * (w >= 0 ? 1 : 0) (NaN stays NaN).
  virtual void non_neg_constraint(int64_t n, float* w) = 0;
  // Keras' OrthogonalRegularizer on the rows of p (rows x rows, p = N N^T of
  // the l2-normalized rows): with S the off-diagonal part,
  // value = factor * 0.5 * sum |S| / (rows (rows - 1) / 2), added times
  // `scale` to *acc when acc is not null; dp[i, j] = (i != j) * factor * 0.5
  // * sign(p[i, j]) / (rows (rows - 1) / 2) written when dp is not null.
  virtual void offdiag_abs_penalty(int64_t rows, const float* p, float factor, double scale,
                                   double* acc, float* dp) = 0;

  // ---- i14-mpcore: mixed precision (DESIGN §8) -------------------------------
  // Whether this backend runs matrix products with `t` inputs (bf16, f16) and
  // f32 accumulation on hardware made for them (CPU: AMX or AVX512-BF16 for
  // bf16; CUDA: tensor cores). Where it says no, layers under a mixed policy
  // compute in f32 and compile() says so once (Model::precision_note()).
  virtual bool native_lowp(DType /*t*/) const { return false; }
  // Dynamic loss scaling (train/loss_scale.h). *flag = 1 when any of x[0, n)
  // is Inf or NaN, else left as it is (calls over several ranges OR
  // together); flag: the step block's skip word. Deterministic, no host sync.
  virtual void nonfinite_flag(int64_t n, const float* x, float* flag) = 0;
  // g[i] = g[i] / s->loss_scale (Keras' LossScaleOptimizer divides by the
  // scale), whatever s->skip says: a skipped step's gradients are not read.
  virtual void unscale_gradients(int64_t n, float* g, const StepScalars* s) = 0;
  // The step's end: moves the scale in a.word by a.block's skip word and
  // writes the next step's block (core/step_scalars.h); queued, no host sync.
  virtual void advance_loss_scale(const LossScaleAdvance& a) = 0;
  // dst[i] = src[i] rounded to `t` (bf16 or f16, 2 bytes each) to nearest,
  // ties to even; f16 overflows to +-Inf; NaN stays NaN.
  virtual void cast_lowp(DType t, int64_t n, const float* src, void* dst) = 0;
  // C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C with A and B of
  // dtype `t` (bf16 or f16, layouts and leading dimensions as gemm()), every
  // product and sum in f32 and C f32. Where native_lowp(t) is false it still
  // computes exactly that, slowly (a reference, for tests).
  virtual void gemm_lowp(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                         float alpha, const void* a, int64_t lda, const void* b, int64_t ldb,
                         float beta, float* c, int64_t ldc) = 0;
  // Makes what gemm_lowp needs for `t` ahead of the steps (CPU: the oneDNN
  // primitives), so that no step does; layers call it from Layer::prepare().
  virtual void prepare_lowp(DType /*t*/) {}
  // ---- i14-monitor: memory in use (train/step_clock.h's epoch report) -------
  // Bytes this backend's allocator hands out now (live buffers) and at most
  // since construction or the last reset_peak_memory(); device_used: bytes
  // in use on the whole device as its driver reports them (cudaMemGetInfo),
  // -1 where there is no such figure (the CPU). Host bookkeeping only: never
  // synchronises, callable between steps from the caller's thread.
  virtual MemoryUse memory_use() const = 0;
  // The peak restarts from the bytes in use now.
  virtual void reset_peak_memory() = 0;
  // The host threads computing the ops (a CPU replica's team and why it
  // uses fewer than it has; one thread elsewhere). Between steps.
  virtual TeamStatus host_threads() const;
  // ---- i14-gpu: CUDA graphs of the training step ------------------------------
  // A backend that can record its compute lane into a replayable graph (CUDA)
  // overrides these; the defaults say "cannot" and the caller runs the ops
  // eagerly (CPU). Only the replica's own thread calls them, between steps'
  // host work, never while another capture of the same backend is open.
  // graph_capture_begin(): ops issued from now on (on the compute lane, and on
  // lanes joined to it through events, e.g. NCCL's stream) are recorded, not
  // run. false: nothing was started (no capture support).
  virtual bool graph_capture_begin() { return false; }
  // Ends the open capture. true: the recorded ops are now graph `slot`
  // (replacing any graph there) and have still not run: the caller launches
  // it. false: the capture failed (an op that cannot be captured), nothing of
  // it ran, the backend is usable eagerly again. Must follow a successful
  // graph_capture_begin(), also when the captured code threw (the capture is
  // then discarded and false returned).
  virtual bool graph_capture_end(int /*slot*/) { return false; }
  // Queues graph `slot` on the compute lane (ordered like any op); false
  // when there is no such graph (nothing queued).
  virtual bool graph_launch(int /*slot*/) { return false; }
  // Drops every graph (their memory is released once they finished).
  virtual void graph_reset() {}
  // ---- i14-devinput: input staged on a lane (train/device_input.h) ----------
  // dst (device) = bytes of host_src on `lane`: upload() on any lane. host_src
  // may be reused when it returns (CUDA copies it into pinned staging first
  // and queues the transfer on the lane's stream; the CPU copies at once). A
  // transfer on the copy lane is ordered with compute only through events.
  virtual void upload_on(Lane lane, void* dst, const void* host_src, size_t bytes) = 0;
  // dst[r, :] = src[index[r], :] for r < rows, rows of `width` floats, on
  // the compute lane (index: device int32 row numbers into src, each in
  // range — the caller's invariant, not checked on the device). An exact
  // copy: datasets resident on the device gather each batch's rows.
  virtual void gather_rows(int64_t rows, int64_t width, const float* src, const int32_t* index,
                           float* dst) = 0;
  // Bytes the backend's allocator keeps cached: freed buffers not returned
  // to the device, which the driver's free-memory figure counts as used but
  // a new allocation can have (CUDA's allocator returns them and retries
  // when the device is out of memory). 0 where there is no such cache.
  // Host bookkeeping, between steps.
  virtual int64_t cached_free_bytes() const { return 0; }
  // ---- i15: element-wise, broadcasting and reduction ops of traced graphs ----
  // The kernels under the op graphs that R functions written with op_* are
  // traced into. Kinds, Broadcast and its helpers: core/op_kinds.h;
  // per-element formulas (one for both backends): backends/common/op_math.h;
  // implementations: cpu_traced_ops.cpp, cuda_traced_ops.cu. Every op is f32,
  // deterministic (no atomics; sums in the stated order, the same on any
  // thread count and on either backend), allocates nothing, and does nothing
  // for an empty range. Gradients follow TensorFlow's (Keras 3 on TF); NaN
  // and Inf follow IEEE arithmetic unless a rule says otherwise.
  // Subnormals: the CPU runs with flush-to-zero / denormals-are-zero, nvcc
  // compiles without -ftz, so on subnormal inputs the backends can differ
  // (sign(1e-40) can be 0 on the CPU and 1 on CUDA, equal(1e-40, 0) 1 on
  // the CPU and 0 on CUDA); on normal floats they agree.
  // Cost on CUDA: reduce, softmax_axis and their backwards run one thread
  // per (o, i) output looping over the axis, which is fast for many outputs
  // and slow for few outputs over a long axis (a warp per output row is
  // future work); the softmax family computes exp / log in double, which
  // runs at the FP64 rate (1/32 or 1/64 of FP32 on non-datacenter GPUs).
  //
  // y[i] = f(x[i]), i < n (formulas and edge values: op_math.h). y may alias x.
  virtual void unary(UnaryOp op, int64_t n, const float* x, float* y) = 0;
  // dx[i] = dy[i] * f'(x[i]); x is the forward input and y = f(x) its output
  // (ops whose derivative is written through y read it: sigmoid, tanh, exp,
  // sqrt; the others may be passed y = null). dx may alias dy.
  virtual void unary_backward(UnaryOp op, int64_t n, const float* x, const float* y,
                              const float* dy, float* dx) = 0;
  // out = a op b under broadcast g (operand 0 = a, 1 = b; out is g's
  // row-major out shape). Comparisons give 1.0f or 0.0f (NaN compares false
  // except with not_equal). out may alias a or b when that operand is not
  // broadcast (its strides are the out's).
  virtual void binary(BinaryOp op, const Broadcast& g, const float* a, const float* b,
                      float* out) = 0;
  // Out-shaped partials ga = dout * d(a op b)/da and gb = dout * d/db
  // (zeros for comparisons); either of ga, gb may be null (not written).
  // Reduce each to its operand's shape with
  // strided_copy(sum_to_operand(g, k), partial, grad).
  virtual void binary_backward(BinaryOp op, const Broadcast& g, const float* a, const float* b,
                               const float* dout, float* ga, float* gb) = 0;
  // out = cond != 0 ? a : b under broadcast g (operands cond, a, b). A NaN
  // cond counts as true (NaN != 0; numpy and TF cast NaN to bool true).
  virtual void where(const Broadcast& g, const float* cond, const float* a, const float* b,
                     float* out) = 0;
  // Out-shaped ga = cond != 0 ? dout : 0, gb = cond != 0 ? 0 : dout; either
  // may be null. No gradient flows to cond.
  virtual void where_backward(const Broadcast& g, const float* cond, const float* dout, float* ga,
                              float* gb) = 0;
  // x viewed as outer x extent x inner (row-major): y[o, i] = op over e of
  // x[o, e, i]. sum: accumulated in double in increasing e from 0 and
  // rounded to float once at the end (extent == 0: 0), bit-equal on CPU and
  // CUDA and on any thread count;
  // max / min: NaN when any element is NaN (tf.reduce_max), +-Inf
  // (extent == 0: -Inf for max, +Inf for min). y must not alias x.
  virtual void reduce(ReduceOp op, int64_t outer, int64_t extent, int64_t inner, const float* x,
                      float* y) = 0;
  // dx[o, e, i] from dy[o, i] (x, y: the forward's input and output; sum
  // reads neither, they may be null): sum: dx = dy; max / min: TensorFlow's
  // _MinOrMaxGrad, dx = dy * [x == y] / count of e with x[o, e, i] == y[o, i]
  // (ties share the gradient equally; a NaN y matches no element, so every
  // dx of that (o, i) is 0 / 0 = NaN, as in TF, where NaN == NaN is false).
  virtual void reduce_backward(ReduceOp op, int64_t outer, int64_t extent, int64_t inner,
                               const float* x, const float* y, const float* dy, float* dx) = 0;
  // Along the middle axis of outer x extent x inner: softmax and log_softmax
  // write outer x extent x inner, logsumexp writes outer x inner. The shift
  // is the maximum over e (softmax, log_softmax: an infinite maximum makes
  // the whole axis NaN, as TF's softmax and log_softmax do: exp(Inf - Inf) is
  // NaN and the NaN sum reaches every entry; logsumexp: a non-finite maximum
  // shifts by 0, as tf.reduce_logsumexp); the sum of exponentials in double
  // in increasing e.
  // y must not alias x. extent == 0: nothing for softmax and log_softmax,
  // -Inf for logsumexp.
  virtual void softmax_axis(SoftmaxOp op, int64_t outer, int64_t extent, int64_t inner,
                            const float* x, float* y) = 0;
  // dx from the forward's x and y and the output gradient dy (dy and y have
  // the forward output's shape): softmax dx = y (dy - sum_e dy y);
  // log_softmax dx = dy - exp(y) sum_e dy; logsumexp dx = dy exp(x - y).
  // Sums in double in increasing e. Only logsumexp reads x: softmax and
  // log_softmax may be passed x = null. dx may alias dy for softmax and
  // log_softmax.
  virtual void softmax_axis_backward(SoftmaxOp op, int64_t outer, int64_t extent, int64_t inner,
                                     const float* x, const float* y, const float* dy,
                                     float* dx) = 0;

  // ---- i15-fuse: a chain of unary ops in one pass (cpu_traced_ops.cpp,
  // cuda_traced_ops.cu) ----
  static constexpr int kMaxUnaryChain = 8;
  // outs[c][i] = ops[c](outs[c - 1][i]) for c < count and i < n, with
  // outs[-1] = x: x is read once per element and every link's value is
  // written (a traced graph keeps them all for the VJPs).
  // 1 <= count <= kMaxUnaryChain (else an internal error). Bit-identical to
  // count unary() calls in order (the same op_math.h formulas, each link
  // rounded to float; on CUDA a NaN's payload may differ). outs[0] may alias
  // x; the outs must not alias each other. Allocates nothing; nothing for
  // n <= 0.
  virtual void unary_chain(int64_t n, const UnaryOp* ops, int count, const float* x,
                           float* const* outs) = 0;
  // ---- i15-ops: index and cast ops of traced graphs ----------------------------
  // (formulas: backends/common/index_math.h; cpu_traced_index.cpp,
  // cuda_traced_index.cu). Deterministic, allocation-free, nothing for an
  // empty range, like the i15 ops above. Indices are held as floats.
  //
  // y viewed as outer x classes x inner, x as outer x inner: y[o, c, i] = 1
  // when x[o, i] truncated toward zero is c, else 0 (keras.ops.one_hot on
  // TF, which casts the ids to int64 first: 2.7 is class 2, -0.5 class 0; NaN
  // and ids outside 0..classes-1 give an all-zero row). y must not alias x.
  virtual void one_hot(int64_t outer, int64_t classes, int64_t inner, const float* x, float* y) = 0;
  // x viewed as outer x extent x inner: y[o, i] = the first e with x[o, e, i]
  // the maximum over e, as a float; NaN counts as the maximum (the first NaN
  // wins: numpy's argmax). extent >= 1 (an empty axis has no argmax: the
  // caller rejects it). y must not alias x.
  virtual void argmax(int64_t outer, int64_t extent, int64_t inner, const float* x, float* y) = 0;
  // x: outer x n x inner, idx: outer x k x inner, y: outer x k x inner;
  // y[o, j, i] = x[o, e, i] with e the position idx[o, j, i] names: an integer
  // in [-n, n - 1], negative ones counting from the end (numpy's
  // take_along_axis). Any other index (out of range, not an integer, NaN) is
  // an error (value) naming take_along_axis, the index, its position and n:
  // thrown at once by a synchronous backend; a CUDA backend writes 0 for that
  // element and the next download()/synchronize() throws (as for bad labels:
  // no sync inside the step). y must not alias x or idx.
  virtual void take_along_axis(int64_t outer, int64_t n, int64_t k, int64_t inner, const float* x,
                               const float* idx, float* y) = 0;
  // Its VJP to x, written (not accumulated): dx[o, e, i] = the sum over
  // j = 0, 1, .., k - 1 in that order, in float from 0, of dy[o, j, i] for
  // the j whose index names e (0 when none does): a deterministic
  // scatter-add, bit-equal on both backends. Indices as take_along_axis
  // checked them (a bad one contributes nothing). dx must not alias dy.
  // Cost on CUDA: one thread per dx element scanning the k indices of its
  // (o, i), O(n k) per (o, i): cheap for the losses' k = 1, slow for large
  // gathers (a sort-based scatter is future work).
  virtual void take_along_axis_backward(int64_t outer, int64_t n, int64_t k, int64_t inner,
                                        const float* idx, const float* dy, float* dx) = 0;
  // y[i] = keras.ops.cast(x[i], op's dtype), kept in f32 (core/op_kinds.h,
  // CastOp). y may alias x.
  virtual void cast_values(CastOp op, int64_t n, const float* x, float* y) = 0;

  // ---- i15-users: the reduction of traced losses and metrics
  // (train/traced_objectives.h; cpu_traced_reduce.cpp, cuda_traced_reduce.cu) ----
  // Keras' "sum_over_batch_size" reduction of a traced loss's or metric's
  // output over this slice's `rows` rows, w_r = sample_weight[r] (null: 1).
  // batched (out: rows x width, width >= 1): l_r = the mean of row r's
  //   values (summed in double in increasing j); *sum += sum_r w_r l_r and,
  //   when count is not null, *count += sum_r w_r; d_out (when not null,
  //   rows x width) = grad_scale * w_r / width in row r.
  // not batched (out: `width` values of a batch mean): v = their mean,
  //   W = sum_r w_r; *sum += v W, *count += W (count not null); d_out (when
  //   not null, width floats) = grad_scale * W / width.
  // sum, count: device doubles (the metric-sum block). Deterministic (sums
  // in a fixed order for a given rows), allocates nothing; NaN propagates.
  virtual void traced_reduce(bool batched, int64_t rows, int64_t width, const float* out,
                             const float* sample_weight, float grad_scale, float* d_out,
                             double* sum, double* count) = 0;

 protected:
  int64_t downloads_ = 0;  // download() adds 1 (one caller at a time, as for every op)

 private:
  WaitLimits limits_;
};

}  // namespace mr
