// The CUDA backend: one per replica ("gpu:<index>"), on CUDA device `ordinal`
// (several logical GPUs may share one ordinal). Every op is issued on the
// replica's compute stream and returns without waiting for the GPU; only
// download(), synchronize() and oversized uploads wait, and every such wait
// polls an event within the wait limits (core/wait.h), never a bare stream
// synchronize. A second stream, the copy lane, carries transfers that may
// overlap compute (peer copies of the all-reduce). Invariants:
// - every public method first makes `ordinal` the calling thread's current
//   device (ops come from the replica's worker thread and from R's thread);
// - upload() has copied host_src when it returns (into pinned staging memory),
//   so callers may reuse their buffer at once while the copy is still queued;
// - reductions (bias_grad, loss, metric) sum in a fixed order for a given
//   shape: no atomics whose order changes sums, so replicas stay bit-identical;
// - a class index outside 0..cols-1 cannot throw on the device: the loss
//   kernel records the first bad row and the next download()/synchronize()
//   throws mr::Error (value) naming it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_handles.h"
#include "backends/cuda/optional_engine.h"
#include "core/backend.h"

namespace mr {

// Throws mr::Error (device) naming the call and the device unless st is a success.
void cuda_check(cudaError_t st, const char* call, int ordinal);
void cublas_check(cublasStatus_t st, const char* call, int ordinal);
#define MR_CUDA_CALL(call, ordinal) ::mr::cuda_check((call), #call, (ordinal))
#define MR_CUBLAS_CALL(call, ordinal) ::mr::cublas_check((call), #call, (ordinal))

// Makes `ordinal` the calling thread's current device. Not restored after:
// each replica's worker thread only ever uses its own device, and every entry
// point sets the device it needs.
void use_device(int ordinal);

// Device memory of one backend: blocks are rounded to size classes and kept
// on free lists when released, so that the growth of a workspace or a target
// buffer does not cost a cudaMalloc (which synchronises the device) on every
// step. Everything is returned to CUDA when the allocator dies.
class CachingAllocator {
 public:
  explicit CachingAllocator(int ordinal) : ordinal_(ordinal) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Returns a block of at least `bytes` (256-byte aligned, not zeroed).
  void* take(size_t bytes);
  void give_back(void* p) noexcept;
  static size_t size_class(size_t bytes);
  int64_t cuda_mallocs() const { return mallocs_; }
  // ---- i14-monitor: bytes handed out now and at most since reset_peak() ----
  size_t in_use() const { return in_use_; }
  size_t peak() const { return peak_; }
  void reset_peak() { peak_ = in_use_; }
  // ---- i14-devinput: bytes of the cached free blocks ----
  size_t cached() const { return cached_; }

 private:
  int ordinal_;
  int64_t mallocs_ = 0;
  std::multimap<size_t, void*> free_;  // size class -> block
  std::map<void*, size_t> live_;       // block -> size class
  size_t in_use_ = 0;                  // bytes, for the out-of-memory message
  size_t peak_ = 0;                    // most of in_use_ since reset_peak() (i14-monitor)
  size_t cached_ = 0;                  // sum of free_'s size classes (i14-devinput)
};

// Pinned host memory for uploads: a ring of slots, each reusable once the copy
// that read it has completed (its event), so uploads never wait for the GPU
// unless it is a whole ring behind. Slots are allocated up front (and grown
// by reserve(), outside steps): an upload never allocates or frees pinned
// memory, since cudaHostAlloc / cudaFreeHost synchronise the whole device.
class PinnedRing {
 public:
  // Frees what it made when it throws (an event or a slot it could not get).
  PinnedRing(int ordinal, int slots, size_t slot_bytes);
  ~PinnedRing();
  PinnedRing(const PinnedRing&) = delete;
  PinnedRing& operator=(const PinnedRing&) = delete;

  size_t slot_bytes() const { return slot_bytes_; }
  int64_t host_allocs() const { return host_allocs_; }
  // Grows every slot to at least `bytes` (waits for pending copies first).
  void reserve(size_t bytes, const WaitLimits& limits, const std::string& who);
  // Copies `bytes` (<= slot_bytes()) of src into the next slot and queues its
  // copy to dst on `stream`.
  void upload(cudaStream_t stream, void* dst, const void* src, size_t bytes,
              const WaitLimits& limits, const std::string& who);

 private:
  struct Slot {
    void* host = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
    bool pending = false;
  };
  void free_slots() noexcept;
  void destroy_events() noexcept;
  void alloc_slots(size_t bytes);

  int ordinal_;
  std::vector<Slot> slots_;
  size_t slot_bytes_ = 0;
  size_t next_ = 0;
  int64_t host_allocs_ = 0;
};

class CudnnConv;  // cuda_conv_cudnn.h: cuDNN's handle, plans and workspace

class CudaBackend final : public Backend {
 public:
  // index: the logical GPU ("gpu:<index>"); ordinal: the CUDA device.
  CudaBackend(int index, int ordinal);
  ~CudaBackend() override;

  DeviceKind kind() const override { return DeviceKind::cuda; }
  int64_t system_allocations() const override {
    return alloc_->cuda_mallocs() + pinned_->host_allocs();
  }
  std::string name() const override { return "gpu:" + std::to_string(index_); }
  int ordinal() const { return ordinal_; }
  // TF32 tensor-core math in gemm (off unless asked for: it changes results).
  void set_tf32(bool on) override;

  DeviceBuffer allocate(size_t bytes) override;
  void release(void* p) noexcept override;
  void upload(void* dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() override;
  void reserve_staging(size_t bytes) override;

  std::unique_ptr<Event> create_event() override;
  void record_event(Event& e, Lane lane) override;
  void wait_event(const Event& e, Lane lane) override;
  bool event_done(const Event& e) override;
  void copy_on(Lane lane, void* dst, const void* src, size_t bytes) override;

  void fill(int64_t n, float* x, float value) override;
  void axpy(int64_t n, float alpha, const float* x, float* y) override;
  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
            int64_t ldc) override;
  void bias_add(int64_t rows, int64_t cols, const float* bias, float* y) override;
  void bias_grad(int64_t rows, int64_t cols, const float* dy, float* db, bool accumulate) override;

  void activation_forward(Activation act, int64_t rows, int64_t cols, const float* x, float* y,
                          const ActivationParams& p = {}) override;
  void activation_backward(Activation act, int64_t rows, int64_t cols, const float* x,
                           const float* y, const float* dy, float* dx,
                           const ActivationParams& p = {}) override;

  using Backend::dropout_forward;
  void dropout_forward(int64_t rows, int64_t cols, float rate, uint64_t seed, const StepScalars* s,
                       uint32_t stream, int64_t row_offset, const float* x, float* mask,
                       float* y) override;
  void multiply(int64_t n, const float* a, const float* b, float* out) override;

  void column_moments(int64_t rows, int64_t cols, const float* x, const float* mean, float scale,
                      float* out) override;
  void batch_norm_forward(int64_t rows, int64_t cols, const float* x, const float* mean,
                          const float* var, const float* gamma, const float* beta, float eps,
                          float* y) override;
  void batch_norm_backward_reduce(int64_t rows, int64_t cols, const float* dy, const float* x,
                                  const float* mean, const float* var, float eps, float* sum_dy,
                                  float* sum_dy_xhat) override;
  void batch_norm_backward(int64_t rows, int64_t cols, const float* dy, const float* x,
                           const float* mean, const float* var, const float* gamma, float eps,
                           const float* sum_dy, const float* sum_dy_xhat, float inv_n,
                           float* dx) override;

  void loss(LossKind kind, const LossParams& p, int64_t rows, int64_t cols, const float* pred,
            const float* target, const float* sample_weight, float grad_scale, float* dpred,
            double* loss_acc) override;
  void metric(const MetricSpec& m, int64_t rows, int64_t cols, const float* pred,
              const float* target, const float* sample_weight, double* state) override;

  using Backend::adam_update;
  using Backend::rmsprop_update;
  using Backend::sgd_update;
  void sgd_update(int64_t n, float* w, const float* g, float* m, const StepScalars* s,
                  float momentum, bool nesterov) override;
  void adam_update(int64_t n, float* w, const float* g, float* m, float* v, float* vhat,
                   const StepScalars* s, float beta1, float beta2, float epsilon) override;
  void rmsprop_update(int64_t n, float* w, const float* g, float* v, float* a, float* mom,
                      const StepScalars* s, float rho, float momentum, float epsilon) override;
  const StepScalars* stage_scalars(const StepScalars& s) override;

  // ---- the update pipeline (issue 13, i13-opt; cuda_update.cu) ----------------
  void segment_sumsq(int64_t nseg, const int64_t* seg, const float* x, double* out) override;
  void clip_gradients(GradientClip mode, float c, int64_t nseg, const int64_t* seg, float* g,
                      const double* sumsq) override;
  void optimizer_update(UpdateRule rule, int64_t n, float* w, const float* g, float* s0, float* s1,
                        const StepScalars* s, const UpdateHyper& h) override;
  void lamb_moments(int64_t n, float* w, const float* g, float* m, float* v, float* r,
                    const StepScalars* s, const UpdateHyper& h) override;
  void lamb_apply(int64_t nseg, const int64_t* seg, float* w, const float* r, const double* w_sq,
                  const double* r_sq, const StepScalars* s) override;
  void ema_update(int64_t n, float* avg, const float* w, const StepScalars* s) override;
  void accumulate_apply(int64_t n, float* g, float* acc, float steps) override;

  // ---- shape and merge ops (issue 12; cpu_strided.cpp / cuda_strided.cu) -----
  void strided_copy(const StridedCopy& c, const float* src, float* dst) override;
  void extremum(int64_t n, bool is_max, const float* a, const float* b, float* out) override;
  void extremum_grad(int64_t n, const float* x, const float* y, const float* dy, float* taken,
                     float* dx) override;
  void l2_normalize_rows(int64_t rows, int64_t cols, const float* x, float* y) override;
  void l2_normalize_rows_backward(int64_t rows, int64_t cols, const float* x, const float* dy,
                                  float* dx) override;
  // ---- convolution and pooling (cuda_conv.cu, cuda_pooling.cu) ---------------
  void conv_forward(const ConvGeometry& g, int64_t rows, const float* x, const float* w, float* y,
                    float* col) override;
  void conv_backward_filter(const ConvGeometry& g, int64_t rows, const float* x, const float* dy,
                            float* dw, float* col) override;
  void conv_backward_data(const ConvGeometry& g, int64_t rows, const float* dy, const float* w,
                          float* dx, float* col) override;
  void max_pool_forward(const ConvGeometry& g, int64_t rows, const float* x, float* y) override;
  void max_pool_backward(const ConvGeometry& g, int64_t rows, const float* x, const float* y,
                         const float* dy, float* dx) override;
  void avg_pool_forward(const ConvGeometry& g, int64_t rows, const float* x, float* y) override;
  void avg_pool_backward(const ConvGeometry& g, int64_t rows, const float* dy, float* dx) override;

  // Block partials of a row reduction (loss, metric): grows on demand.
  double* reduction_scratch(int64_t blocks);
  // Partials of the chunked column reductions (bias_grad, batch-norm and
  // layer-norm statistics; cuda_column_reduce.h): kColumnPartials doubles
  // (cuda_column_split.h), allocated once by the constructor, so that no
  // step allocates them.
  double* column_partials() { return static_cast<double*>(column_partials_.get()); }
  // Device word where the loss records its first bad label (see above).
  unsigned long long* label_status() { return static_cast<unsigned long long*>(status_.get()); }

 private:
  // Throws if a loss recorded a bad label; called after the stream is idle.
  void check_status();
  cudaStream_t stream_of(Lane lane) const { return lane == Lane::copy ? copy_stream_ : stream_; }
  // "gpu:1 (CUDA device 1)", for wait messages.
  std::string who() const;
  // Host wait until the compute stream finished everything issued so far.
  void wait_idle(const char* what);
  // Both streams idle, within a bounded time; false if that failed.
  bool drain_noexcept() noexcept;
  // ~CudaBackend after a failed drain: gives up every handle and buffer
  // without freeing it (the GPU may still use them).
  void abandon_resources() noexcept;

  int index_;
  int ordinal_;
  // Owned (cuda_handles.h): a constructor that throws frees what it made.
  // Members are destroyed in reverse order: everything below before the
  // streams, the buffers before the allocator.
  cuda::OwnedStream stream_;
  cuda::OwnedStream copy_stream_;
  cuda::OwnedEvent idle_;                              // recorded by wait_idle()
  cuda::OwnedPinned<unsigned long long> status_host_;  // pinned: the label word read back
  std::unique_ptr<CachingAllocator> alloc_;
  std::unique_ptr<PinnedRing> pinned_;
  // cuBLAS' workspace, from the allocator (kBlasWorkspaceBytes), set with
  // cublasSetWorkspace after cublasSetStream (which resets it): eager and
  // captured GEMMs use the same memory, and a capture allocates nothing.
  DeviceBuffer blas_workspace_{nullptr, DeviceFree{}};
  cuda::OwnedBlas blas_;  // after its workspace: destroyed before it
  // Declared after the allocator: freed before it.
  DeviceBuffer scratch_{nullptr, DeviceFree{}};
  int64_t scratch_blocks_ = 0;
  DeviceBuffer column_partials_{nullptr, DeviceFree{}};
  DeviceBuffer status_{nullptr, DeviceFree{}};
  DeviceBuffer own_scalars_{nullptr, DeviceFree{}};  // stage_scalars()' block
  int64_t status_cols_ = 0;    // cols of the last sparse loss, for the message
  bool status_armed_ = false;  // a sparse loss ran since the last check
  // ---- layer normalization, embedding lookup, feature normalization --------
  // (cuda_layer_norm.cu, cuda_embedding.cu, cuda_feature_norm.cu)
 public:
  void layer_norm_forward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                          const float* beta, float eps, bool rms, float* stats, float* y) override;
  void layer_norm_backward(int64_t rows, int64_t cols, const float* dy, const float* x,
                           const float* gamma, const float* stats, bool rms, float* dx,
                           float* dgamma, float* dbeta) override;
  void embedding_forward(int64_t n, int64_t input_dim, int64_t output_dim, const float* idx,
                         const float* table, float* y) override;
  void embedding_backward(int64_t n, int64_t input_dim, int64_t output_dim, const float* idx,
                          const float* dy, float* dtable) override;
  void normalize_columns(int64_t rows, int64_t cols, const float* x, const float* mean,
                         const float* var, bool invert, float* y) override;
  void normalize_columns_backward(int64_t rows, int64_t cols, const float* dy, const float* var,
                                  bool invert, float* dx) override;

 private:
  // Embedding indices share the bad-label status word: a bad index sets the
  // word's top bit (kIndexStatusTag), and check_status() names the index;
  // this is the input_dim of the last embedding lookup, for the message.
  int64_t status_input_dim_ = 0;
  // The embedding gradient's sort buffers (cuda_embedding.cu), grown on demand.
  DeviceBuffer embed_sort_{nullptr, DeviceFree{}};
  size_t embed_sort_bytes_ = 0;

  // ---- cuDNN convolutions (cuda_conv_cudnn.cu; issue 12) --------------------
  // With cuDNN (MR_WITH_CUDNN), prepare_conv() makes a plan per convolution
  // geometry (descriptors, deterministic algorithms, workspace sized for
  // max_rows) and the conv_* ops run through cuDNN when a plan covers their
  // (g, rows); otherwise, and in builds without cuDNN, they run im2col.
 public:
  void prepare_conv(const ConvGeometry& g, int64_t max_rows) override;
  std::string conv_path(const ConvGeometry& g, int64_t rows) override;
  // ---- regularization and constraints (issue 13, i13-reg; cuda_regularization.cu) ----
  void l1_l2_penalty(int64_t n, const float* x, float l1, float l2, double scale, double* acc,
                     float grad_scale, float* grad) override;
  void norm_constraint(int64_t outer, int64_t reduce, int64_t inner, float min_value,
                       float max_value, float rate, float* w) override;
  void non_neg_constraint(int64_t n, float* w) override;
  void offdiag_abs_penalty(int64_t rows, const float* p, float factor, double scale, double* acc,
                           float* dp) override;
  // ---- i14-mpcore: mixed precision (cuda_mixed_precision.cu) ----
  void nonfinite_flag(int64_t n, const float* x, float* flag) override;
  void unscale_gradients(int64_t n, float* g, const StepScalars* s) override;
  void advance_loss_scale(const LossScaleAdvance& a) override;
  void cast_lowp(DType t, int64_t n, const float* src, void* dst) override;
  void gemm_lowp(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) override;
  bool native_lowp(DType t) const override;

 private:
  // Each runs its pass through cuDNN and returns true, or returns false
  // (nothing issued) when no plan covers (g, rows): the caller runs im2col.
  bool cudnn_forward(const ConvGeometry& g, int64_t rows, const float* x, const float* w, float* y);
  bool cudnn_backward_filter(const ConvGeometry& g, int64_t rows, const float* x, const float* dy,
                             float* dw);
  bool cudnn_backward_data(const ConvGeometry& g, int64_t rows, const float* dy, const float* w,
                           float* dx);
  // set_tf32() changed the math mode: the plans choose their algorithms again.
  void cudnn_math_changed();
  // The cuDNN engine if it was made (null before the first prepare_conv(),
  // without cuDNN, or when making it failed: see cudnn_note()).
  CudnnConv* cudnn() const { return cudnn_.made(); }
  bool tf32_ = false;
  // cuDNN's handle, plans and workspace, made by the first prepare_conv()
  // (an MLP never makes it); never made without cuDNN, and when making it
  // fails the convolutions run im2col + cuBLAS. Declared after the
  // allocator: its workspace goes back to it first (~CudaBackend resets it).
  // (Named in the constructor, where CudnnConv is complete.)
  OptionalEngine<CudnnConv> cudnn_;

 public:
  // Why this backend's convolutions do not run through cuDNN although the
  // build has it ("" while they do, or before any convolution was
  // prepared): one line for the user (cuda_conv_engine() says the same for
  // the strategy's print()).
  const std::string& cudnn_note() const { return cudnn_.note(); }

 private:
  // ---- i14-monitor: memory in use (cuda_memory.cu) ----
 public:
  MemoryUse memory_use() const override;
  void reset_peak_memory() override;
  // ---- i14-gpu: CUDA graphs of the training step (cuda_graph.cu) ---------------
  // Backend::graph_capture_begin() and friends: stream capture of the compute
  // stream in relaxed mode (the warm-up step before a capture made every lazy
  // allocation, so nothing allocates inside it; relaxed keeps a library's
  // harmless host query from invalidating the capture). What is capture-safe:
  // kernels and cuBLAS/cuDNN calls on stream_ (their arguments are fixed
  // device addresses and shapes; per-step values are read from the
  // StepScalars block), device-to-device copies, and event record/wait pairs
  // that fork another stream (NCCL's) from stream_ and join it back. Not
  // capture-safe, and kept outside the captured region by the caller:
  // upload() (its pinned slot is reused, a replay would copy stale bytes),
  // download()/synchronize() (host waits), reserve growth (new addresses).
 public:
  bool graph_capture_begin() override;
  bool graph_capture_end(int slot) override;
  bool graph_launch(int slot) override;
  void graph_reset() override;

 private:
  // One instantiated graph and the host-side effects its ops had when they
  // were recorded: a replay does not call the ops, so the launch re-applies
  // them (the bad-label status word must be checked after a replayed loss).
  struct CapturedGraph {
    cudaGraphExec_t exec = nullptr;
    bool arms_status = false;
    int64_t status_cols = 0;
    int64_t status_input_dim = 0;
    CapturedGraph() = default;
    CapturedGraph(const CapturedGraph&) = delete;
    CapturedGraph& operator=(const CapturedGraph&) = delete;
    ~CapturedGraph() {
      if (exec != nullptr) cudaGraphExecDestroy(exec);
    }
  };
  std::vector<std::unique_ptr<CapturedGraph>> graphs_;  // by slot
  bool capturing_ = false;
  bool armed_before_capture_ = false;  // status_armed_ when the capture began
  // ---- i14-devinput: uploads on either stream (cuda_memory.cu) ----
 public:
  void upload_on(Lane lane, void* dst, const void* host_src, size_t bytes) override;
  // cuda_gather.cu
  void gather_rows(int64_t rows, int64_t width, const float* src, const int32_t* index,
                   float* dst) override;
  int64_t cached_free_bytes() const override { return static_cast<int64_t>(alloc_->cached()); }
  // ---- i15-ops: element-wise, broadcasting and reduction ops of traced graphs
  // (cuda_traced_ops.cu) ----
 public:
  void unary(UnaryOp op, int64_t n, const float* x, float* y) override;
  void unary_backward(UnaryOp op, int64_t n, const float* x, const float* y, const float* dy,
                      float* dx) override;
  void binary(BinaryOp op, const Broadcast& g, const float* a, const float* b, float* out) override;
  void binary_backward(BinaryOp op, const Broadcast& g, const float* a, const float* b,
                       const float* dout, float* ga, float* gb) override;
  void where(const Broadcast& g, const float* cond, const float* a, const float* b,
             float* out) override;
  void where_backward(const Broadcast& g, const float* cond, const float* dout, float* ga,
                      float* gb) override;
  void reduce(ReduceOp op, int64_t outer, int64_t extent, int64_t inner, const float* x,
              float* y) override;
  void reduce_backward(ReduceOp op, int64_t outer, int64_t extent, int64_t inner, const float* x,
                       const float* y, const float* dy, float* dx) override;
  void softmax_axis(SoftmaxOp op, int64_t outer, int64_t extent, int64_t inner, const float* x,
                    float* y) override;
  void softmax_axis_backward(SoftmaxOp op, int64_t outer, int64_t extent, int64_t inner,
                             const float* x, const float* y, const float* dy, float* dx) override;
  // ---- i15-fuse: a unary chain in one pass (cuda_traced_ops.cu) ----
  void unary_chain(int64_t n, const UnaryOp* ops, int count, const float* x,
                   float* const* outs) override;
  // ---- i15-ops: index and cast ops of traced graphs (cuda_traced_index.cu) ----
  void one_hot(int64_t outer, int64_t classes, int64_t inner, const float* x, float* y) override;
  void argmax(int64_t outer, int64_t extent, int64_t inner, const float* x, float* y) override;
  void take_along_axis(int64_t outer, int64_t n, int64_t k, int64_t inner, const float* x,
                       const float* idx, float* y) override;
  void take_along_axis_backward(int64_t outer, int64_t n, int64_t k, int64_t inner,
                                const float* idx, const float* dy, float* dx) override;
  void cast_values(CastOp op, int64_t n, const float* x, float* y) override;

 private:
  // n of the last take_along_axis, for check_status()'s message (a bad
  // index sets the status word with kIndexStatusTag | kTakeStatusTag).
  int64_t status_take_n_ = 0;
  // ---- i15-users: the reduction of traced losses and metrics (cuda_traced_reduce.cu) ----
  void traced_reduce(bool batched, int64_t rows, int64_t width, const float* out,
                     const float* sample_weight, float grad_scale, float* d_out, double* sum,
                     double* count) override;
};

namespace cuda {
constexpr int kThreads = 256;
// Blocks for n elements at kThreads per block, capped (kernels grid-stride).
inline unsigned blocks_for(int64_t n, int64_t cap = 4096) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > cap ? cap : b));
}
// Checks the launch that was just issued (configuration errors).
void check_launch(const char* kernel, int ordinal);
}  // namespace cuda

// The status word's top bit marks a bad embedding index (cuda_embedding.cu);
// without it the word holds a bad label (cuda_loss.cu).
constexpr unsigned long long kIndexStatusTag = 1ull << 63;
// With kIndexStatusTag, bit 62 marks a bad take_along_axis index
// (cuda_traced_index.cu) rather than an embedding index.
constexpr unsigned long long kTakeStatusTag = 1ull << 62;
// Positions of bad indices sit in bits 32..61 (below both tags): a position
// past kStatusMaxPosition is recorded as kStatusMaxPosition, which the
// message reports as "at position 1073741823 or later" (atomicMin still
// keeps the first bad position when it is below). Labels (no tag) use bits
// 32..62 (rows < 2^31).
constexpr int64_t kStatusMaxPosition = (int64_t{1} << 30) - 1;
#ifdef __CUDACC__
__device__ __forceinline__ unsigned long long status_position(int64_t p) {
  return static_cast<unsigned long long>(p < kStatusMaxPosition ? p : kStatusMaxPosition) << 32;
}
#endif

// cuBLAS' workspace per backend: 32 MiB, cuBLAS' recommendation for Hopper.
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;

}  // namespace mr
