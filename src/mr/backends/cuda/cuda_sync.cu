// CUDA events, host waits and error classification. Every host wait on a GPU
// is an event-query loop (core/wait.h) with the model's deadline and abort
// flag: a hung kernel or a peer that never joins a collective becomes a
// classed error naming the device, never a process stuck in
// cudaStreamSynchronize.
#include <string>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_event.h"
#include "core/error.h"

namespace mr {

bool cuda_error_is_sticky(cudaError_t st) {
  switch (st) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

void cuda_check(cudaError_t st, const char* call, int ordinal) {
  if (st == cudaSuccess) return;
  if (cuda_error_is_sticky(st))
    fail(ErrorKind::device, call, " failed on CUDA device ", ordinal, ": ", cudaGetErrorName(st),
         " (", cudaGetErrorString(st),
         "). This error is sticky: the GPU context of this process is unusable, so restart the R "
         "session (models on this GPU are lost; save often when debugging GPU code)");
  fail(ErrorKind::device, call, " failed on CUDA device ", ordinal, ": ", cudaGetErrorName(st),
       " (", cudaGetErrorString(st), ")");
}

CudaEvent::CudaEvent(int ordinal) : ordinal_(ordinal) {
  use_device(ordinal_);
  MR_CUDA_CALL(cudaEventCreateWithFlags(&ev_, cudaEventDisableTiming), ordinal_);
}

CudaEvent::~CudaEvent() {
  // Destroying an event whose work is pending is allowed: CUDA releases it
  // once the work completes.
  if (ev_ != nullptr && cudaSetDevice(ordinal_) == cudaSuccess) cudaEventDestroy(ev_);
}

cudaEvent_t cuda_event_of(const Event& e) {
  const auto* ce = dynamic_cast<const CudaEvent*>(&e);
  MR_CHECK(ce != nullptr, internal, "an event of a non-CUDA backend was given to CUDA code");
  return ce->get();
}

void cuda_wait_event(cudaEvent_t ev, int ordinal, const WaitLimits& limits, const std::string& who,
                     const std::string& what) {
  poll_until(
      [&] {
        const cudaError_t st = cudaEventQuery(ev);
        if (st == cudaErrorNotReady) return false;
        cuda_check(st, "cudaEventQuery", ordinal);
        return true;
      },
      limits, who, what);
}

// ---- the backend's events, lanes and waits ------------------------------------

std::unique_ptr<Event> CudaBackend::create_event() { return std::make_unique<CudaEvent>(ordinal_); }

void CudaBackend::record_event(Event& e, Lane lane) {
  use_device(ordinal_);
  MR_CUDA_CALL(cudaEventRecord(cuda_event_of(e), stream_of(lane)), ordinal_);
}

void CudaBackend::wait_event(const Event& e, Lane lane) {
  use_device(ordinal_);
  MR_CUDA_CALL(cudaStreamWaitEvent(stream_of(lane), cuda_event_of(e), 0), ordinal_);
}

bool CudaBackend::event_done(const Event& e) {
  use_device(ordinal_);
  const cudaError_t st = cudaEventQuery(cuda_event_of(e));
  if (st == cudaErrorNotReady) return false;
  cuda_check(st, "cudaEventQuery", ordinal_);
  return true;
}

void CudaBackend::copy_on(Lane lane, void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  use_device(ordinal_);
  // cudaMemcpyDefault: with unified addressing CUDA finds each pointer's
  // device, so a copy from another GPU is a peer copy (NVLink / PCIe P2P
  // when enabled, through the host otherwise).
  MR_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_of(lane)), ordinal_);
}

std::string CudaBackend::who() const {
  return name() + " (CUDA device " + std::to_string(ordinal_) + ")";
}

void CudaBackend::wait_idle(const char* what) {
  use_device(ordinal_);
  MR_CUDA_CALL(cudaEventRecord(idle_, stream_), ordinal_);
  cuda_wait_event(idle_, ordinal_, wait_limits(), who(), what);
}

bool CudaBackend::drain_noexcept() noexcept {
  // Destructors: bounded wait, errors swallowed (the context may be lost).
  try {
    WaitLimits bounded = wait_limits();
    if (bounded.timeout_seconds <= 0 || bounded.timeout_seconds > 60) bounded.timeout_seconds = 60;
    bounded.abort = nullptr;
    for (cudaStream_t s : {stream_.get(), copy_stream_.get()}) {
      if (s == nullptr || idle_.get() == nullptr) continue;
      if (cudaEventRecord(idle_, s) != cudaSuccess) return false;
      cuda_wait_event(idle_, ordinal_, bounded, who(), "its queued work before shutting down");
    }
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace mr
