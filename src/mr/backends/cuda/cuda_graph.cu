// CUDA graphs of the compute stream (Backend::graph_capture_begin and
// friends; what is capture-safe is listed in cuda_backend.h). A replica's
// thread captures its own stream while the other replicas capture theirs, so
// the capture is per stream and relaxed: it never blocks or invalidates
// another thread's work. Nothing here waits for the GPU: a launch is queued
// like a kernel, and the step's results are observed by the next download(),
// whose wait polls with the model's deadline (core/wait.h), as without graphs.
#include <cuda_runtime.h>

#include <memory>

#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

bool CudaBackend::graph_capture_begin() {
  MR_CHECK(!capturing_, internal, "graph_capture_begin on ", name(), " while a capture is open");
  use_device(ordinal_);
  MR_CUDA_CALL(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), ordinal_);
  capturing_ = true;
  // The recorded ops do not run now: the status word is armed by the
  // graph's launch (graph_launch), not by the capture.
  armed_before_capture_ = status_armed_;
  status_armed_ = false;
  return true;
}

bool CudaBackend::graph_capture_end(int slot) {
  MR_CHECK(capturing_, internal, "graph_capture_end on ", name(), " without a capture");
  MR_CHECK(slot >= 0 && slot < 64, internal, "graph slot ", slot, " out of range");
  use_device(ordinal_);
  capturing_ = false;
  auto g = std::make_unique<CapturedGraph>();
  g->arms_status = status_armed_;
  g->status_cols = status_cols_;
  g->status_input_dim = status_input_dim_;
  status_armed_ = armed_before_capture_;
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
  bool ok = end == cudaSuccess && graph != nullptr;
  if (ok) ok = cudaGraphInstantiate(&g->exec, graph, 0) == cudaSuccess && g->exec != nullptr;
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (!ok) {
    // An invalidated capture leaves a non-sticky error behind: clear it so
    // that the next op's launch check does not report it as its own.
    (void)cudaGetLastError();
    return false;
  }
  if (graphs_.size() <= static_cast<size_t>(slot)) graphs_.resize(static_cast<size_t>(slot) + 1);
  // Replacing a graph that may still be running is safe: CUDA frees an
  // in-flight executable graph once it completes.
  graphs_[static_cast<size_t>(slot)] = std::move(g);
  return true;
}

bool CudaBackend::graph_launch(int slot) {
  if (slot < 0 || static_cast<size_t>(slot) >= graphs_.size()) return false;
  const CapturedGraph* g = graphs_[static_cast<size_t>(slot)].get();
  if (g == nullptr) return false;
  use_device(ordinal_);
  MR_CUDA_CALL(cudaGraphLaunch(g->exec, stream_), ordinal_);
  if (g->arms_status) {
    status_armed_ = true;
    status_cols_ = g->status_cols;
    status_input_dim_ = g->status_input_dim;
  }
  return true;
}

void CudaBackend::graph_reset() {
  // Never throws: an aborting communicator reset relies on the graphs being
  // gone (cudaGraphExecDestroy needs no current device; an in-flight graph
  // is freed once it completes).
  (void)cudaSetDevice(ordinal_);
  graphs_.clear();
}

}  // namespace mr
