// cuDNN's convolutions for the CUDA backend (cuda_conv_cudnn.cu). The class is
// complete in every CUDA build (CudaBackend holds a unique_ptr to it); it has
// members only when the build found cuDNN (MR_WITH_CUDNN), and a backend
// creates one only then.
//
// Invariants:
// - one cuDNN handle per backend, bound to the backend's compute stream: every
//   cuDNN call is stream-ordered with the other ops of the replica;
// - plans (descriptors and algorithms) are made by prepare() outside steps;
//   a pass only sets the batch size of its tensor descriptors (host state);
// - one workspace per backend, shared by all plans (the passes run one after
//   another on one stream), grown by prepare() only: no pass allocates;
// - only deterministic algorithms (cuDNN's determinism flag) of the GEMM
//   family (no FFT / Winograd: their rounding differs from a direct sum), so
//   replicas stay bit-identical and runs repeat.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "build_config.h"
#include "core/backend.h"
#include "core/conv_geometry.h"

#if MR_WITH_CUDNN
#include <cudnn.h>
#endif

namespace mr {

#if MR_WITH_CUDNN

// Throws mr::Error (device) naming the call unless st is a success.
void cudnn_check(cudnnStatus_t st, const char* call, int ordinal);
#define MR_CUDNN_CALL(call, ordinal) ::mr::cudnn_check((call), #call, (ordinal))

// One convolution geometry's cuDNN state. The descriptors are owned (RAII);
// x_desc / y_desc carry the batch size last set by CudnnConv::ready().
struct CudnnPlan {
  explicit CudnnPlan(int ordinal);
  ~CudnnPlan();
  CudnnPlan(const CudnnPlan&) = delete;
  CudnnPlan& operator=(const CudnnPlan&) = delete;
  void destroy() noexcept;

  int ordinal;
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  cudnnConvolutionFwdAlgo_t fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  bool usable = false;    // cuDNN runs this geometry (else: im2col)
  int64_t max_rows = 0;   // the rows it was prepared for
  int64_t set_rows = -1;  // the batch size now in x_desc / y_desc
  bool fits = false;      // the three passes at set_rows fit checked_bytes
  size_t checked_bytes = 0;
};

class CudnnConv {
 public:
  using Key = std::array<int64_t, 15>;
  static Key key_of(const ConvGeometry& g);

  CudnnConv(int ordinal, cudaStream_t stream);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  cudnnHandle_t handle() const { return handle_; }
  // Plans g for up to max_rows (a larger max_rows than before re-plans) in
  // the given math mode; returns the algorithm workspace bytes it needs (0
  // when cuDNN cannot run g: asymmetric "same" padding, dimensions beyond
  // int, no deterministic algorithm).
  size_t prepare(const ConvGeometry& g, int64_t max_rows, bool tf32);
  // Chooses every plan's algorithms again for a new math mode; returns the
  // largest workspace any needs.
  size_t replan(bool tf32);
  // The plan for (g, rows) with its descriptors set to `rows`, when it is
  // usable, rows <= max_rows and its passes fit `workspace_bytes`; else null.
  CudnnPlan* ready(const ConvGeometry& g, int64_t rows, size_t workspace_bytes);

  // The shared workspace (grown by the backend in prepare_conv()): the
  // transposed kernel first, then cuDNN's algorithm workspace.
  DeviceBuffer workspace{nullptr, DeviceFree{}};
  size_t workspace_bytes = 0;

 private:
  int ordinal_;
  cudnnHandle_t handle_ = nullptr;
  std::map<Key, std::unique_ptr<CudnnPlan>> plans_;
};

#else

class CudnnConv {};  // never created without cuDNN

#endif

}  // namespace mr
