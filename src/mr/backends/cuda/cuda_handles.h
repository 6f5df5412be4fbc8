// Owning handles of the CUDA runtime and cuBLAS objects a CUDA backend holds
// (streams, events, the cuBLAS handle, pinned host memory): each is destroyed
// by its deleter, so that a constructor that throws half-way frees what it
// made before the throw. The deleters ignore errors (a lost context): they run
// in destructors, which never throw. A handle converts to the raw handle
// implicitly, so that runtime calls and launches take it as they are.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace mr {
namespace cuda {

template <class H, class Free>
class Owned {
 public:
  Owned() = default;
  explicit Owned(H h) : h_(h) {}
  ~Owned() { reset(); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept : h_(o.release()) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = o.release();
    }
    return *this;
  }

  operator H() const { return h_; }  // NOLINT(google-explicit-constructor): a raw handle
  H get() const { return h_; }
  // For the runtime's create calls: frees the current handle first.
  H* out() {
    reset();
    return &h_;
  }
  // Gives up ownership (a backend whose GPU may still use it leaks it).
  H release() noexcept {
    H h = h_;
    h_ = H{};
    return h;
  }
  void reset() noexcept {
    if (h_ != H{}) Free{}(h_);
    h_ = H{};
  }

 private:
  H h_{};
};

struct StreamFree {
  void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
};
struct EventFree {
  void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); }
};
struct BlasFree {
  void operator()(cublasHandle_t h) const noexcept { cublasDestroy(h); }
};
struct HostFree {
  void operator()(void* p) const noexcept { cudaFreeHost(p); }
};

using OwnedStream = Owned<cudaStream_t, StreamFree>;
using OwnedEvent = Owned<cudaEvent_t, EventFree>;
using OwnedBlas = Owned<cublasHandle_t, BlasFree>;
template <class T>
using OwnedPinned = Owned<T*, HostFree>;

}  // namespace cuda
}  // namespace mr
