// The CPU backend: one per replica ("cpu:<index>"), computing on its own
// ThreadTeam. Device memory is host memory (64-byte aligned, zeroed). Every op
// runs with flush-to-zero set (the team sets it on the caller for the call and
// on its members for their lifetime). Element-wise ops split n, row-wise ops
// split rows, gemm splits C by columns (else rows); small ops run inline.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "backends/cpu/cpu_conv_dnnl.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_matmul_dnnl.h"
#include "build_config.h"
#include "core/backend.h"
#include "core/thread_team.h"

namespace mr {

class CpuBackend : public Backend {
 public:
  // `isa`: the kernel path (cpu_isa.h), one of cpu_isas_available().
  CpuBackend(int index, int threads, CpuIsa isa = default_cpu_isa());

  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string name() const override { return "cpu:" + std::to_string(index_); }
  int threads() const { return team_.size(); }
  CpuIsa isa() const { return isa_; }
  int64_t system_allocations() const override { return allocations_; }

  DeviceBuffer allocate(size_t bytes) override;
  void release(void* p) noexcept override;
  void upload(void* dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() override {}
  // Ops are synchronous: an event is complete as soon as it is recorded and
  // both lanes are the caller's thread.
  std::unique_ptr<Event> create_event() override { return std::make_unique<Event>(); }
  void record_event(Event&, Lane) override {}
  void wait_event(const Event&, Lane) override {}
  bool event_done(const Event&) override { return true; }
  void copy_on(Lane, void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }

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
  // Host memory is the device's: the block is a member, written in place
  // (ops are synchronous, so no op in flight reads an older value).
  const StepScalars* stage_scalars(const StepScalars& s) override {
    own_scalars_ = s;
    return &own_scalars_;
  }

  // ---- the update pipeline (issue 13, i13-opt; cpu_update.cpp) ----------------
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
  // ---- convolution and pooling (cpu_conv.cpp, cpu_pooling.cpp) ----------------
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
  // With oneDNN: makes the geometry's plan for up to max_rows rows now (the
  // executor calls it when it sizes its workspace), so that no step, the
  // first included, creates one.
  void prepare_conv(const ConvGeometry& g, int64_t max_rows) override;
  std::string conv_path(const ConvGeometry& g, int64_t rows) override;
  // ---- regularization and constraints (issue 13, i13-reg; cpu_regularization.cpp) ----
  void l1_l2_penalty(int64_t n, const float* x, float l1, float l2, double scale, double* acc,
                     float grad_scale, float* grad) override;
  void norm_constraint(int64_t outer, int64_t reduce, int64_t inner, float min_value,
                       float max_value, float rate, float* w) override;
  void non_neg_constraint(int64_t n, float* w) override;
  void offdiag_abs_penalty(int64_t rows, const float* p, float factor, double scale, double* acc,
                           float* dp) override;
  // ---- i14-mpcore: mixed precision (cpu_mixed_precision.cpp) ----
  void nonfinite_flag(int64_t n, const float* x, float* flag) override;
  void unscale_gradients(int64_t n, float* g, const StepScalars* s) override;
  void advance_loss_scale(const LossScaleAdvance& a) override;
  void cast_lowp(DType t, int64_t n, const float* src, void* dst) override;
  void gemm_lowp(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) override;
  bool keeps_transposed_narrow_weights(int64_t units) const override;
  bool native_lowp(DType t) const override;
  void prepare_lowp(DType t) override;

  ThreadTeam& team() { return team_; }

 private:
  int index_;
  CpuIsa isa_;
  ThreadTeam team_;
  StepScalars own_scalars_;
  int64_t allocations_ = 0;
  // ---- layer normalization, embedding lookup, feature normalization --------
  // (cpu_layer_norm.cpp, cpu_embedding.cpp, cpu_feature_norm.cpp)
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

  // ---- oneDNN convolution (cpu_conv_dnnl.cpp) --------------------------------
#if MR_WITH_DNNL
 public:
  // The backend's oneDNN plans, created at the first convolution call.
  DnnlConv& dnnl_conv() {
    if (!dnnl_conv_) dnnl_conv_ = make_dnnl_conv(*this);
    return *dnnl_conv_;
  }
  // false routes the convolution passes to im2col + gemm (tests and
  // benchmarks compare the two). Switch only between steps: a forward and its
  // backward must take the same path (im2col's backward-filter reads the
  // columns its forward left).
  void set_conv_dnnl(bool on) { conv_dnnl_ = on; }
  bool conv_dnnl() const { return conv_dnnl_; }

 private:
  DnnlConvPtr dnnl_conv_;
  bool conv_dnnl_ = true;
#endif

  // ---- i14-monitor: memory in use (cpu_backend.cpp) ----
 public:
  MemoryUse memory_use() const override;
  void reset_peak_memory() override;
  TeamStatus host_threads() const override { return team_.status(); }

 private:
  // Bytes of the live blocks (their rounded sizes, kept in each block's
  // header); atomic: buffers may be freed on replica threads.
  static constexpr size_t kSizeHeader = 64;
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> bytes_peak_{0};
  // ---- i14-mpcore: oneDNN bf16 matmul (cpu_matmul_dnnl.cpp), made by
  // prepare_lowp() ----
#if MR_WITH_DNNL
  DnnlMatmulPtr dnnl_bf16_;
#endif
  // ---- i14-devinput: no copy lane, every lane is the caller's thread ----
 public:
  void upload_on(Lane, void* dst, const void* host_src, size_t bytes) override {
    upload(dst, host_src, bytes);
  }
  void gather_rows(int64_t rows, int64_t width, const float* src, const int32_t* index,
                   float* dst) override;
  // ---- i15-ops: element-wise, broadcasting and reduction ops of traced graphs
  // (cpu_traced_ops.cpp) ----
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
  // ---- i15-fuse: a unary chain in one pass (cpu_traced_ops.cpp) ----
  void unary_chain(int64_t n, const UnaryOp* ops, int count, const float* x,
                   float* const* outs) override;
  // ---- i15-ops: index and cast ops of traced graphs (cpu_traced_index.cpp) ----
  void one_hot(int64_t outer, int64_t classes, int64_t inner, const float* x, float* y) override;
  void argmax(int64_t outer, int64_t extent, int64_t inner, const float* x, float* y) override;
  void take_along_axis(int64_t outer, int64_t n, int64_t k, int64_t inner, const float* x,
                       const float* idx, float* y) override;
  void take_along_axis_backward(int64_t outer, int64_t n, int64_t k, int64_t inner,
                                const float* idx, const float* dy, float* dx) override;
  void cast_values(CastOp op, int64_t n, const float* x, float* y) override;
  // ---- i15-users: the reduction of traced losses and metrics (cpu_traced_reduce.cpp) ----
  void traced_reduce(bool batched, int64_t rows, int64_t width, const float* out,
                     const float* sample_weight, float grad_scale, float* d_out, double* sum,
                     double* count) override;
};

// A CPU backend on `isa`'s kernels (by default MIRRORED_CPU_ISA's, else the
// best this build and CPU run: cpu_isa.h).
std::unique_ptr<Backend> make_cpu_backend(int index, int threads, CpuIsa isa = default_cpu_isa());

// "oneDNN 2.6.3 sgemm (AVX-512)", "blocked GEMM, AVX2+FMA (...)": the GEMM
// of `isa`'s kernel path.
std::string cpu_gemm_description(CpuIsa isa);

namespace cpu {

// Work thresholds (elements) below which an op runs inline on the caller: a
// team handoff costs ~1-3 us, which an element-wise pass over 16k floats
// (~2-4 us) only just repays.
constexpr int64_t kElementwiseGrain = 16384;
// Row-wise ops: split rows when rows*cols reaches this many elements.
constexpr int64_t kRowwiseMinWork = 16384;

// parallel_for with any callable; the std::function the team sees captures one
// pointer, so no op allocates.
template <typename F>
void for_range(ThreadTeam& team, int64_t n, int64_t grain, F&& f) {
  auto* fp = &f;
  team.parallel_for(n, grain, [fp](int64_t b, int64_t e) { (*fp)(b, e); });
}

// Splits rows when rows * row_cost (element-equivalents of work) is large
// enough; f(r0, r1) handles rows [r0, r1).
template <typename F>
void for_rows(ThreadTeam& team, int64_t rows, int64_t row_cost, F&& f) {
  const int64_t work = rows * (row_cost > 0 ? row_cost : 1);
  const int64_t grain = work < kRowwiseMinWork ? (rows > 0 ? rows : 1) : 1;
  for_range(team, rows, grain, f);
}

// gemm on the calling thread alone (the backend's gemm contract, no team) on
// `isa`'s kernels: for ops that split their work across the team themselves
// and run one product per member (cpu_conv.cpp).
void gemm_serial(CpuIsa isa, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                 float* c, int64_t ldc);

// ---- i14-gemm ----
// Generates the gemm library's kernels now (oneDNN JITs them on first use:
// ~30 ms once per process) so that the first training step does not pay it.
void warm_up_gemm();

// Most members a team may have.
constexpr int kMaxTeamSize = 256;
// Most chunks reduce_rows cuts its rows into (one double each on the stack).
constexpr int64_t kMaxReduceChunks = 64;

// Sums f(r0, r1) (a double) over row chunks. The chunks depend only on rows
// and row_cost (enough work each to repay a hand-off, at most
// kMaxReduceChunks of them), and their partials are added in chunk order, so
// the result is the same for any team size and whichever member ran a chunk.
template <typename F>
double reduce_rows(ThreadTeam& team, int64_t rows, int64_t row_cost, F&& f) {
  if (rows <= 0) return 0.0;
  const int64_t cost = row_cost > 0 ? row_cost : 1;
  int64_t per = kRowwiseMinWork / cost > 1 ? kRowwiseMinWork / cost : 1;
  const int64_t fewest = (rows + kMaxReduceChunks - 1) / kMaxReduceChunks;
  if (per < fewest) per = fewest;
  const int64_t chunks = (rows + per - 1) / per;
  double partial[kMaxReduceChunks];
  for_range(team, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      partial[c] = f(c * per, (c + 1) * per < rows ? (c + 1) * per : rows);
  });
  double total = 0.0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  return total;
}

}  // namespace cpu

}  // namespace mr
