#include "core/backend.h"

#include "core/error.h"
#include "core/thread_team.h"

namespace mr {

void DeviceFree::operator()(void* p) const noexcept {
  if (p != nullptr && owner != nullptr) owner->release(p);
}

namespace {
// Rejects a dtype the op does not implement; today the only implemented
// kernels are f32, so anything else must fail loudly, never reinterpret bytes.
void require_dtype(bool supported, const char* op, DType t, const Backend& be) {
  MR_CHECK(supported, value, op, " on ", be.name(), " does not implement dtype ", dtype_name(t));
}
}  // namespace

TeamStatus Backend::host_threads() const { return TeamStatus{}; }

void Backend::wait_host(const Event& e, const std::string& what) {
  // Backends whose events complete at once never enter the loop.
  if (event_done(e)) return;
  poll_until([&] { return event_done(e); }, limits_, name(), what);
}

void Backend::gemm_typed(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                         TypedPtr a, int64_t lda, TypedPtr b, int64_t ldb, float beta, TypedPtr c,
                         int64_t ldc) {
  for (DType t : {a.dtype, b.dtype, c.dtype}) require_dtype(gemm_supports(t), "gemm", t, *this);
  gemm(trans_a, trans_b, m, n, k, alpha, static_cast<const float*>(a.data), lda,
       static_cast<const float*>(b.data), ldb, beta, static_cast<float*>(c.data), ldc);
}

void Backend::axpy_typed(int64_t n, float alpha, TypedPtr x, TypedPtr y) {
  for (DType t : {x.dtype, y.dtype}) require_dtype(elementwise_supports(t), "axpy", t, *this);
  axpy(n, alpha, static_cast<const float*>(x.data), static_cast<float*>(y.data));
}

void Backend::dropout_forward(int64_t rows, int64_t cols, float rate, uint64_t seed, uint64_t step,
                              uint32_t stream, int64_t row_offset, const float* x, float* mask,
                              float* y) {
  StepScalars s;
  s.step = step;
  dropout_forward(rows, cols, rate, seed, stage_scalars(s), stream, row_offset, x, mask, y);
}

void Backend::sgd_update(int64_t n, float* w, const float* g, float* m, float lr, float momentum,
                         bool nesterov, float wd_lr) {
  StepScalars s;
  s.lr = lr;
  s.wd_lr = wd_lr;
  sgd_update(n, w, g, m, stage_scalars(s), momentum, nesterov);
}

void Backend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, float* vhat,
                          float alpha, float beta1, float beta2, float epsilon, float wd_lr) {
  StepScalars s;
  s.alpha = alpha;
  s.wd_lr = wd_lr;
  adam_update(n, w, g, m, v, vhat, stage_scalars(s), beta1, beta2, epsilon);
}

void Backend::rmsprop_update(int64_t n, float* w, const float* g, float* v, float* a, float* mom,
                             float lr, float rho, float momentum, float epsilon, float wd_lr) {
  StepScalars s;
  s.lr = lr;
  s.wd_lr = wd_lr;
  rmsprop_update(n, w, g, v, a, mom, stage_scalars(s), rho, momentum, epsilon);
}

}  // namespace mr
