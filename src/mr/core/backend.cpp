#include "core/backend.h"

#include "core/error.h"

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

}  // namespace mr
