// The CUDA form of mr::Event (core/backend.h): a cudaEvent_t on one device.
// Communicators that hand work to NCCL record and wait these on their own
// streams; everything else uses them through the Backend interface only.
#pragma once

#include <cuda_runtime.h>

#include "core/backend.h"

namespace mr {

class CudaEvent final : public Event {
 public:
  explicit CudaEvent(int ordinal);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return ev_; }
  int ordinal() const { return ordinal_; }

 private:
  int ordinal_;
  cudaEvent_t ev_ = nullptr;
};

// The cudaEvent_t of an event made by a CUDA backend; Error(internal) for an
// event of another backend kind (a CPU event handed to a GPU communicator).
cudaEvent_t cuda_event_of(const Event& e);

// True for the errors after which the CUDA context is unusable (an illegal
// address, a failed launch, ...): every later call in the process fails the
// same way, and only a new process (a restarted R session) recovers.
bool cuda_error_is_sticky(cudaError_t st);

// Polls `ev` (never cudaEventSynchronize) within `limits`; `who` and `what`
// name the device and the wait in a timeout's message.
void cuda_wait_event(cudaEvent_t ev, int ordinal, const WaitLimits& limits, const std::string& who,
                     const std::string& what);

}  // namespace mr
