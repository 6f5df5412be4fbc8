// The convolution passes through cuDNN's legacy API (cudnnConvolutionForward /
// BackwardData / BackwardFilter), NHWC, when the build found cuDNN; the
// im2col path of cuda_conv.cu runs everything a plan does not cover.
//
// Kernel layout: Keras stores (k_h, k_w, in/groups, out); cuDNN's NHWC filter
// is KRSC (out, k_h, k_w, in/groups). Read as matrices these are (RSC x K) and
// its transpose (K x RSC), so each pass transposes the kernel into the
// workspace (forward, backward-data) or the filter gradient back out of it
// (backward-filter): a gather kernel, one read and one write per element.
// Groups: cuDNN's group count with the same channel blocks as Keras.
// Padding: cuDNN pads both sides alike; Keras' "same" puts the odd zero after
// the last element. When that extra zero is read (cuDNN's output size differs
// from Keras'), the geometry stays on im2col.
// Math: with TF32 off (set_tf32(false), the default) the convolution
// descriptor says CUDNN_FMA_MATH, which restricts cuDNN to FMA kernels: no
// TF32 tensor cores, whatever NVIDIA_TF32_OVERRIDE says (CUDNN_DEFAULT_MATH
// lets cuDNN use TF32 for f32 on Ampere and newer). With TF32 on it says
// CUDNN_DEFAULT_MATH.
#include <algorithm>
#include <climits>
#include <string>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_conv_cudnn.h"
#include "backends/cuda/cuda_conv_engine.h"
#include "core/device_info.h"
#include "core/error.h"

namespace mr {

#if MR_WITH_CUDNN

namespace {

// Algorithm workspace beyond this is not worth a convolution: the plan takes
// the next deterministic algorithm instead.
constexpr size_t kMaxAlgorithmBytes = size_t{1} << 30;
// The transposed kernel's bytes, rounded up so that cuDNN's part stays
// 256-byte aligned.
size_t kernel_bytes(const ConvGeometry& g) {
  const int64_t n = g.k_h * g.k_w * (g.in_c / g.groups) * g.out_c;
  return (static_cast<size_t>(n) * sizeof(float) + 255) / 256 * 256;
}

// dst (cols x rows) = transpose of src (rows x cols), both row-major. A
// gather: each thread writes its own element.
__global__ void transpose_kernel(int64_t rows, int64_t cols, const float* __restrict__ src,
                                 float* __restrict__ dst) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t r = i % rows, c = i / rows;  // dst[c, r]
    dst[i] = src[r * cols + c];
  }
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

int to_int(int64_t v) { return static_cast<int>(v); }

// Keras' output size equals cuDNN's with pad_top / pad_left on both sides.
bool symmetric(const ConvGeometry& g) {
  auto out = [](int64_t in, int64_t pad, int64_t k, int64_t dil, int64_t stride) {
    const int64_t span = (k - 1) * dil + 1;
    return in + 2 * pad < span ? 0 : (in + 2 * pad - span) / stride + 1;
  };
  return out(g.in_h, g.pad_top, g.k_h, g.dil_h, g.stride_h) == g.out_h &&
         out(g.in_w, g.pad_left, g.k_w, g.dil_w, g.stride_w) == g.out_w;
}

// GEMM-family algorithms only (see cuda_conv_cudnn.h).
bool allowed(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}
bool allowed(cudnnConvolutionBwdDataAlgo_t a) { return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1; }
bool allowed(cudnnConvolutionBwdFilterAlgo_t a) { return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1; }

// The first (fastest by cuDNN's heuristics) result that succeeded, is
// deterministic, allowed, runs in FMA or default math (never a math type the
// descriptor does not grant) and needs at most kMaxAlgorithmBytes.
template <class Perf, class Algo>
bool pick(const Perf* perf, int n, Algo* algo) {
  for (int i = 0; i < n; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC ||
        !allowed(p.algo) || p.memory > kMaxAlgorithmBytes)
      continue;
    if (p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) continue;
    *algo = p.algo;
    return true;
  }
  return false;
}

void set_batch(CudnnPlan& p, const ConvGeometry& g, int64_t rows) {
  MR_CUDNN_CALL(
      cudnnSetTensor4dDescriptor(p.x_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, to_int(rows),
                                 to_int(g.in_c), to_int(g.in_h), to_int(g.in_w)),
      p.ordinal);
  MR_CUDNN_CALL(
      cudnnSetTensor4dDescriptor(p.y_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, to_int(rows),
                                 to_int(g.out_c), to_int(g.out_h), to_int(g.out_w)),
      p.ordinal);
  p.set_rows = rows;
}

// The algorithm workspace the plan's three passes need at its current batch
// size; false when cuDNN refuses one of them.
bool pass_bytes(cudnnHandle_t h, const CudnnPlan& p, size_t* bytes) {
  size_t f = 0, d = 0, w = 0;
  if (cudnnGetConvolutionForwardWorkspaceSize(h, p.x_desc, p.w_desc, p.conv_desc, p.y_desc, p.fwd,
                                              &f) != CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolutionBackwardDataWorkspaceSize(h, p.w_desc, p.y_desc, p.conv_desc, p.x_desc,
                                                   p.bwd_data, &d) != CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p.x_desc, p.y_desc, p.conv_desc, p.w_desc,
                                                     p.bwd_filter, &w) != CUDNN_STATUS_SUCCESS)
    return false;
  *bytes = std::max({f, d, w});
  return true;
}

// Chooses p's math mode and algorithms at its max_rows; returns the workspace
// bytes (kernel + algorithm) or 0 when cuDNN cannot run g.
size_t choose(cudnnHandle_t h, CudnnPlan& p, const ConvGeometry& g, bool tf32) {
  p.usable = false;
  p.set_rows = -1;
  if (!symmetric(g)) return 0;
  MR_CUDNN_CALL(
      cudnnSetConvolutionMathType(p.conv_desc, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
      p.ordinal);
  set_batch(p, g, p.max_rows);
  int n = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  cudnnConvolutionBwdDataAlgoPerf_t bwd_data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  if (cudnnGetConvolutionForwardAlgorithm_v7(h, p.x_desc, p.w_desc, p.conv_desc, p.y_desc,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                             fwd) != CUDNN_STATUS_SUCCESS ||
      !pick(fwd, n, &p.fwd))
    return 0;
  if (cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w_desc, p.y_desc, p.conv_desc, p.x_desc,
                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
                                                  bwd_data) != CUDNN_STATUS_SUCCESS ||
      !pick(bwd_data, n, &p.bwd_data))
    return 0;
  if (cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p.x_desc, p.y_desc, p.conv_desc, p.w_desc,
                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
                                                    bwd_filter) != CUDNN_STATUS_SUCCESS ||
      !pick(bwd_filter, n, &p.bwd_filter))
    return 0;
  size_t bytes = 0;
  if (!pass_bytes(h, p, &bytes)) return 0;
  p.usable = true;
  p.set_rows = -1;  // ready() sets the batch size and checks the workspace
  return kernel_bytes(g) + bytes;
}

}  // namespace

void cudnn_check(cudnnStatus_t st, const char* call, int ordinal) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  fail(ErrorKind::device, call, " failed on CUDA device ", ordinal, ": ", cudnnGetErrorString(st));
}

CudnnPlan::CudnnPlan(int ord) : ordinal(ord) {
  // A failed creation (out of host memory) frees what was made before it.
  cudnnStatus_t st = cudnnCreateTensorDescriptor(&x_desc);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreateTensorDescriptor(&y_desc);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreateFilterDescriptor(&w_desc);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreateConvolutionDescriptor(&conv_desc);
  if (st != CUDNN_STATUS_SUCCESS) {
    destroy();
    cudnn_check(st, "cudnnCreate*Descriptor", ordinal);
  }
}

CudnnPlan::~CudnnPlan() { destroy(); }

void CudnnPlan::destroy() noexcept {
  if (conv_desc) cudnnDestroyConvolutionDescriptor(conv_desc);
  if (w_desc) cudnnDestroyFilterDescriptor(w_desc);
  if (y_desc) cudnnDestroyTensorDescriptor(y_desc);
  if (x_desc) cudnnDestroyTensorDescriptor(x_desc);
  conv_desc = nullptr, w_desc = nullptr, y_desc = nullptr, x_desc = nullptr;
}

CudnnConv::Key CudnnConv::key_of(const ConvGeometry& g) {
  return {g.in_h,     g.in_w,     g.in_c,  g.out_h, g.out_w,   g.out_c,    g.k_h,   g.k_w,
          g.stride_h, g.stride_w, g.dil_h, g.dil_w, g.pad_top, g.pad_left, g.groups};
}

CudnnConv::CudnnConv(int ordinal, cudaStream_t stream) : ordinal_(ordinal) {
  MR_CUDNN_CALL(cudnnCreate(&handle_), ordinal_);
  const cudnnStatus_t st = cudnnSetStream(handle_, stream);
  if (st != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(handle_);
    cudnn_check(st, "cudnnSetStream(handle_, stream)", ordinal_);
  }
}

CudnnConv::~CudnnConv() {
  plans_.clear();
  workspace.reset();
  if (handle_) cudnnDestroy(handle_);
}

size_t CudnnConv::prepare(const ConvGeometry& g, int64_t max_rows, bool tf32) {
  std::unique_ptr<CudnnPlan>& slot = plans_[key_of(g)];
  if (!slot) {
    auto p = std::make_unique<CudnnPlan>(ordinal_);
    const bool ints = fits_int(max_rows * g.in_h * g.in_w * g.in_c) &&
                      fits_int(max_rows * g.out_h * g.out_w * g.out_c) &&
                      fits_int(g.k_h * g.k_w * g.in_c * g.out_c);
    if (ints) {
      MR_CUDNN_CALL(cudnnSetFilter4dDescriptor(p->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC,
                                               to_int(g.out_c), to_int(g.in_c / g.groups),
                                               to_int(g.k_h), to_int(g.k_w)),
                    ordinal_);
      MR_CUDNN_CALL(cudnnSetConvolution2dDescriptor(
                        p->conv_desc, to_int(g.pad_top), to_int(g.pad_left), to_int(g.stride_h),
                        to_int(g.stride_w), to_int(g.dil_h), to_int(g.dil_w),
                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                    ordinal_);
      MR_CUDNN_CALL(cudnnSetConvolutionGroupCount(p->conv_desc, to_int(g.groups)), ordinal_);
    }
    p->max_rows = ints ? 0 : -1;  // -1: never usable
    slot = std::move(p);
  }
  CudnnPlan& p = *slot;
  if (p.max_rows < 0) return 0;
  if (max_rows > p.max_rows) {
    if (!fits_int(max_rows * g.in_h * g.in_w * g.in_c) ||
        !fits_int(max_rows * g.out_h * g.out_w * g.out_c)) {
      p.usable = false;
      return 0;
    }
    p.max_rows = max_rows;
  }
  return choose(handle_, p, g, tf32);
}

size_t CudnnConv::replan(bool tf32) {
  size_t need = 0;
  for (auto& kv : plans_) {
    if (!kv.second || kv.second->max_rows <= 0) continue;  // not made, or never usable
    CudnnPlan& p = *kv.second;
    ConvGeometry g;
    const Key& k = kv.first;
    g.in_h = k[0], g.in_w = k[1], g.in_c = k[2], g.out_h = k[3], g.out_w = k[4], g.out_c = k[5];
    g.k_h = k[6], g.k_w = k[7], g.stride_h = k[8], g.stride_w = k[9], g.dil_h = k[10];
    g.dil_w = k[11], g.pad_top = k[12], g.pad_left = k[13], g.groups = k[14];
    need = std::max(need, choose(handle_, p, g, tf32));
  }
  return need;
}

CudnnPlan* CudnnConv::ready(const ConvGeometry& g, int64_t rows, size_t bytes) {
  const auto it = plans_.find(key_of(g));
  if (it == plans_.end() || !it->second) return nullptr;
  CudnnPlan& p = *it->second;
  if (!p.usable || rows < 1 || rows > p.max_rows) return nullptr;
  if (p.set_rows != rows || p.checked_bytes != bytes) {
    // Host state only (descriptors and the workspace query): no allocation.
    set_batch(p, g, rows);
    size_t need = 0;
    p.fits = pass_bytes(handle_, p, &need) && kernel_bytes(g) + need <= bytes;
    p.checked_bytes = bytes;
  }
  return p.fits ? &p : nullptr;
}

// ---- CudaBackend -------------------------------------------------------------

namespace {
std::unique_ptr<CudnnConv> make_cudnn(int ordinal, cudaStream_t stream) {
  return std::make_unique<CudnnConv>(ordinal, stream);
}
}  // namespace

std::string cuda_conv_engine(int ordinal) {
  use_device(ordinal);
  OptionalEngine<CudnnConv> probe{"cuDNN", "convolutions run im2col + cuBLAS"};
  if (probe.get([&] { return make_cudnn(ordinal, nullptr); }) != nullptr)
    return "convolutions: cuDNN " + cudnn_version();
  (void)cudaGetLastError();  // a failed cudnnCreate may leave a (non-sticky) error behind
  return probe.note();
}

void CudaBackend::prepare_conv(const ConvGeometry& g, int64_t max_rows) {
  if (g.pointwise() || max_rows < 1) return;
  use_device(ordinal_);
  // The first convolution makes cuDNN's handle; if that fails, cudnn_note()
  // says why and every convolution runs im2col + cuBLAS.
  CudnnConv* dnn = cudnn_.get([&] { return make_cudnn(ordinal_, stream_); });
  if (dnn == nullptr) {
    // Not the next launch's error: a failed cudnnCreate may leave one behind.
    (void)cudaGetLastError();
    return;
  }
  const size_t need = dnn->prepare(g, max_rows, tf32_);
  if (need > dnn->workspace_bytes) {
    // Outside steps (Executor::reserve): the one place the workspace grows.
    dnn->workspace = allocate(need);
    dnn->workspace_bytes = need;
  }
}

void CudaBackend::cudnn_math_changed() {
  CudnnConv* dnn = cudnn();
  if (dnn == nullptr) return;
  use_device(ordinal_);
  const size_t need = dnn->replan(tf32_);
  if (need > dnn->workspace_bytes) {
    dnn->workspace = allocate(need);
    dnn->workspace_bytes = need;
  }
}

std::string CudaBackend::conv_path(const ConvGeometry& g, int64_t rows) {
  if (g.pointwise()) return "gemm";
  CudnnConv* dnn = cudnn();
  if (dnn == nullptr) return "im2col";
  use_device(ordinal_);
  return dnn->ready(g, rows, dnn->workspace_bytes) != nullptr ? "cudnn" : "im2col";
}

bool CudaBackend::cudnn_forward(const ConvGeometry& g, int64_t rows, const float* x, const float* w,
                                float* y) {
  CudnnConv* dnn = cudnn();
  if (dnn == nullptr) return false;
  CudnnPlan* p = dnn->ready(g, rows, dnn->workspace_bytes);
  if (p == nullptr) return false;
  char* ws = static_cast<char*>(dnn->workspace.get());
  float* wt = reinterpret_cast<float*>(ws);
  const int64_t rsc = g.k_h * g.k_w * (g.in_c / g.groups);
  transpose_kernel<<<cuda::blocks_for(rsc * g.out_c, 65535), cuda::kThreads, 0, stream_>>>(
      rsc, g.out_c, w, wt);
  cuda::check_launch("transpose_kernel", ordinal_);
  const size_t kb = kernel_bytes(g);
  const float one = 1.0f, zero = 0.0f;
  MR_CUDNN_CALL(
      cudnnConvolutionForward(dnn->handle(), &one, p->x_desc, x, p->w_desc, wt, p->conv_desc,
                              p->fwd, ws + kb, dnn->workspace_bytes - kb, &zero, p->y_desc, y),
      ordinal_);
  return true;
}

bool CudaBackend::cudnn_backward_filter(const ConvGeometry& g, int64_t rows, const float* x,
                                        const float* dy, float* dw) {
  CudnnConv* dnn = cudnn();
  if (dnn == nullptr) return false;
  CudnnPlan* p = dnn->ready(g, rows, dnn->workspace_bytes);
  if (p == nullptr) return false;
  char* ws = static_cast<char*>(dnn->workspace.get());
  float* dwt = reinterpret_cast<float*>(ws);
  const size_t kb = kernel_bytes(g);
  const float one = 1.0f, zero = 0.0f;
  MR_CUDNN_CALL(cudnnConvolutionBackwardFilter(dnn->handle(), &one, p->x_desc, x, p->y_desc, dy,
                                               p->conv_desc, p->bwd_filter, ws + kb,
                                               dnn->workspace_bytes - kb, &zero, p->w_desc, dwt),
                ordinal_);
  // cuDNN's (K x RSC) gradient back to Keras' (RSC x K).
  const int64_t rsc = g.k_h * g.k_w * (g.in_c / g.groups);
  transpose_kernel<<<cuda::blocks_for(rsc * g.out_c, 65535), cuda::kThreads, 0, stream_>>>(
      g.out_c, rsc, dwt, dw);
  cuda::check_launch("transpose_kernel", ordinal_);
  return true;
}

bool CudaBackend::cudnn_backward_data(const ConvGeometry& g, int64_t rows, const float* dy,
                                      const float* w, float* dx) {
  CudnnConv* dnn = cudnn();
  if (dnn == nullptr) return false;
  CudnnPlan* p = dnn->ready(g, rows, dnn->workspace_bytes);
  if (p == nullptr) return false;
  char* ws = static_cast<char*>(dnn->workspace.get());
  float* wt = reinterpret_cast<float*>(ws);
  const int64_t rsc = g.k_h * g.k_w * (g.in_c / g.groups);
  // Again: backward-filter's gradient used this part of the workspace.
  transpose_kernel<<<cuda::blocks_for(rsc * g.out_c, 65535), cuda::kThreads, 0, stream_>>>(
      rsc, g.out_c, w, wt);
  cuda::check_launch("transpose_kernel", ordinal_);
  const size_t kb = kernel_bytes(g);
  const float one = 1.0f, zero = 0.0f;
  MR_CUDNN_CALL(cudnnConvolutionBackwardData(dnn->handle(), &one, p->w_desc, wt, p->y_desc, dy,
                                             p->conv_desc, p->bwd_data, ws + kb,
                                             dnn->workspace_bytes - kb, &zero, p->x_desc, dx),
                ordinal_);
  return true;
}

#else  // no cuDNN: every convolution runs im2col (cuda_conv.cu)

std::string cuda_conv_engine(int) { return "convolutions: im2col + cuBLAS (built without cuDNN)"; }

void CudaBackend::prepare_conv(const ConvGeometry&, int64_t) {}
void CudaBackend::cudnn_math_changed() {}
std::string CudaBackend::conv_path(const ConvGeometry& g, int64_t rows) {
  return Backend::conv_path(g, rows);
}
bool CudaBackend::cudnn_forward(const ConvGeometry&, int64_t, const float*, const float*, float*) {
  return false;
}
bool CudaBackend::cudnn_backward_filter(const ConvGeometry&, int64_t, const float*, const float*,
                                        float*) {
  return false;
}
bool CudaBackend::cudnn_backward_data(const ConvGeometry&, int64_t, const float*, const float*,
                                      float*) {
  return false;
}

#endif

}  // namespace mr
