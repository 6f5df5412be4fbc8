// CUDA backend: device memory (caching allocator), pinned upload staging,
// transfers, the backend's life cycle and its factory. Events, host waits and
// error classification are in cuda_sync.cu.
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_column_split.h"  // kColumnPartials
#include "backends/cuda/cuda_conv_cudnn.h"
#include "backends/cuda/cuda_event.h"
#include "core/device_info.h"
#include "core/error.h"

namespace mr {

void cublas_check(cublasStatus_t st, const char* call, int ordinal) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  fail(ErrorKind::device, call, " failed on CUDA device ", ordinal, ": ",
       cublasGetStatusString(st));
}

void use_device(int ordinal) {
  int current = -1;
  MR_CUDA_CALL(cudaGetDevice(&current), ordinal);
  if (current != ordinal) MR_CUDA_CALL(cudaSetDevice(ordinal), ordinal);
}

namespace cuda {
void check_launch(const char* kernel, int ordinal) {
  const cudaError_t st = cudaGetLastError();
  if (st != cudaSuccess) cuda_check(st, kernel, ordinal);
}
}  // namespace cuda

// ---- caching allocator --------------------------------------------------------

size_t CachingAllocator::size_class(size_t bytes) {
  // 512-byte steps up to 1 MiB, then 1 MiB steps: a grown workspace reuses a
  // block of its exact class, and no class wastes more than 1 MiB.
  constexpr size_t kSmall = 512, kLarge = size_t{1} << 20;
  if (bytes == 0) return kSmall;
  if (bytes <= kLarge) return (bytes + kSmall - 1) / kSmall * kSmall;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

void* CachingAllocator::take(size_t bytes) {
  const size_t cls = size_class(bytes);
  auto it = free_.find(cls);
  if (it != free_.end()) {
    void* p = it->second;
    free_.erase(it);
    cached_ -= cls;
    live_.emplace(p, cls);
    in_use_ += cls;
    peak_ = std::max(peak_, in_use_);
    return p;
  }
  void* p = nullptr;
  ++mallocs_;
  cudaError_t st = cudaMalloc(&p, cls);
  if (st == cudaErrorMemoryAllocation) {
    // Return every cached block to CUDA and try once more.
    cudaGetLastError();
    for (auto& kv : free_) cudaFree(kv.second);
    free_.clear();
    cached_ = 0;
    st = cudaMalloc(&p, cls);
    if (st == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      fail(ErrorKind::device, "out of GPU memory on CUDA device ", ordinal_, " allocating ", bytes,
           " bytes (", in_use_, " bytes in use by this replica)");
    }
  }
  cuda_check(st, "cudaMalloc", ordinal_);
  live_.emplace(p, cls);
  in_use_ += cls;
  peak_ = std::max(peak_, in_use_);
  return p;
}

void CachingAllocator::give_back(void* p) noexcept {
  auto it = live_.find(p);
  if (it == live_.end()) return;
  free_.emplace(it->second, p);
  cached_ += it->second;
  in_use_ -= it->second;
  live_.erase(it);
}

CachingAllocator::~CachingAllocator() {
  // Destructors must not throw: errors here (a lost context) are ignored.
  if (cudaSetDevice(ordinal_) != cudaSuccess) return;
  for (auto& kv : free_) cudaFree(kv.second);
  for (auto& kv : live_) cudaFree(kv.first);
}

// ---- pinned staging -------------------------------------------------------------

PinnedRing::PinnedRing(int ordinal, int slots, size_t slot_bytes)
    : ordinal_(ordinal), slots_(static_cast<size_t>(slots)) {
  try {
    for (Slot& s : slots_)
      MR_CUDA_CALL(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), ordinal_);
    alloc_slots(slot_bytes);
  } catch (...) {
    // No destructor runs for a constructor that throws: free what was made.
    free_slots();
    destroy_events();
    throw;
  }
}

PinnedRing::~PinnedRing() {
  // The backend drained its streams before destroying the ring.
  if (cudaSetDevice(ordinal_) != cudaSuccess) return;
  free_slots();
  destroy_events();
}

void PinnedRing::destroy_events() noexcept {
  for (Slot& s : slots_) {
    if (s.done) cudaEventDestroy(s.done);
    s.done = nullptr;
  }
}

void PinnedRing::free_slots() noexcept {
  for (Slot& s : slots_) {
    if (s.host) cudaFreeHost(s.host);
    s.host = nullptr;
    s.capacity = 0;
  }
  slot_bytes_ = 0;
}

void PinnedRing::alloc_slots(size_t bytes) {
  const size_t cap = (bytes + (size_t{1} << 16) - 1) >> 16 << 16;
  for (Slot& s : slots_) {
    ++host_allocs_;
    MR_CUDA_CALL(cudaHostAlloc(&s.host, cap, cudaHostAllocPortable), ordinal_);
    s.capacity = cap;
  }
  slot_bytes_ = cap;
}

void PinnedRing::reserve(size_t bytes, const WaitLimits& limits, const std::string& who) {
  if (bytes <= slot_bytes_) return;
  for (Slot& s : slots_) {
    if (s.pending) cuda_wait_event(s.done, ordinal_, limits, who, "a staged upload to finish");
    s.pending = false;
  }
  free_slots();
  alloc_slots(bytes);
}

void PinnedRing::upload(cudaStream_t stream, void* dst, const void* src, size_t bytes,
                        const WaitLimits& limits, const std::string& who) {
  MR_CHECK(bytes <= slot_bytes_, internal, "upload of ", bytes, " bytes exceeds the pinned slots");
  Slot& s = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  if (s.pending)
    cuda_wait_event(s.done, ordinal_, limits, who,
                    "a pinned upload slot (the GPU is a ring behind)");
  s.pending = false;
  std::memcpy(s.host, src, bytes);
  MR_CUDA_CALL(cudaMemcpyAsync(dst, s.host, bytes, cudaMemcpyHostToDevice, stream), ordinal_);
  MR_CUDA_CALL(cudaEventRecord(s.done, stream), ordinal_);
  s.pending = true;
}

// ---- the backend ----------------------------------------------------------------

namespace {
// Every upload goes through the pinned ring: one larger than a slot (whole
// weight sets, or batches larger than reserve_staging() announced) in
// slot-sized chunks, so that every wait of an upload is a deadline-bound
// poll of a ring slot's event (a pageable cudaMemcpyAsync could block in the
// driver until its stream reached it, with no deadline and no interrupt).
// reserve_staging() grows slots up to kPinnedMax: larger staging would keep
// too much memory pinned.
constexpr size_t kPinnedMax = size_t{64} << 20;
constexpr size_t kPinnedDefault = size_t{1} << 20;
constexpr int kPinnedSlots = 8;

// `bytes` of host `src` to device `dst` on `stream` through `ring`, in
// chunks of at most one slot; src has been read when it returns.
void ring_upload(PinnedRing& ring, cudaStream_t stream, void* dst, const void* src, size_t bytes,
                 const WaitLimits& limits, const std::string& who) {
  const size_t chunk = ring.slot_bytes();
  MR_CHECK(chunk > 0, internal, "no pinned staging slots");
  auto* d = static_cast<char*>(dst);
  const auto* h = static_cast<const char*>(src);
  for (size_t at = 0; at < bytes; at += chunk)
    ring.upload(stream, d + at, h + at, std::min(chunk, bytes - at), limits, who);
}
}  // namespace

CudaBackend::CudaBackend(int index, int ordinal)
    : index_(index), ordinal_(ordinal), cudnn_("cuDNN", "convolutions run im2col + cuBLAS") {
  const int count = cuda_device_count();
  MR_CHECK(ordinal >= 0 && ordinal < count, device, "gpu:", index, " needs CUDA device ", ordinal,
           ", but ", count, " CUDA device(s) are visible");
  // Every handle and buffer is an owning member: if anything below throws,
  // the members' destructors free what was made before it.
  use_device(ordinal_);
  MR_CUDA_CALL(cudaStreamCreateWithFlags(stream_.out(), cudaStreamNonBlocking), ordinal_);
  MR_CUDA_CALL(cudaStreamCreateWithFlags(copy_stream_.out(), cudaStreamNonBlocking), ordinal_);
  MR_CUDA_CALL(cudaEventCreateWithFlags(idle_.out(), cudaEventDisableTiming), ordinal_);
  MR_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(status_host_.out()),
                             sizeof(unsigned long long), cudaHostAllocPortable),
               ordinal_);
  alloc_ = std::make_unique<CachingAllocator>(ordinal_);
  pinned_ = std::make_unique<PinnedRing>(ordinal_, kPinnedSlots, kPinnedDefault);
  blas_workspace_ = allocate(kBlasWorkspaceBytes);
  MR_CUBLAS_CALL(cublasCreate(blas_.out()), ordinal_);
  MR_CUBLAS_CALL(cublasSetStream(blas_, stream_), ordinal_);
  // After cublasSetStream, which resets the workspace to cuBLAS' own.
  MR_CUBLAS_CALL(cublasSetWorkspace(blas_, blas_workspace_.get(), kBlasWorkspaceBytes), ordinal_);
  MR_CUBLAS_CALL(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), ordinal_);
  status_ = allocate(sizeof(unsigned long long));
  own_scalars_ = allocate(sizeof(StepScalars));
  // Loss and metric partials for batches of up to 1M rows (4096 blocks of
  // 256 rows, 32 KB), so that no step allocates them.
  reduction_scratch(4096);
  column_partials_ = allocate(static_cast<size_t>(kColumnPartials) * sizeof(double));
  MR_CUDA_CALL(cudaMemsetAsync(status_.get(), 0xFF, sizeof(unsigned long long), stream_), ordinal_);
  // cuDNN's handle is made by the first prepare_conv() (cuda_conv_cudnn.cu).
}

CudaBackend::~CudaBackend() {
  // A failed drain (lost context, hung kernel) leaks rather than freeing
  // memory the GPU may still use.
  if (cudaSetDevice(ordinal_) != cudaSuccess || !drain_noexcept()) {
    abandon_resources();
    return;
  }
  graphs_.clear();
  blas_.reset();
  cudnn_.reset();  // its handle and workspace (back to the allocator)
  // Buffers this backend still owns go back to the allocator (members), then
  // the allocator frees everything; the streams go last (members, in
  // reverse order of declaration).
  status_.reset();
  own_scalars_.reset();
  scratch_.reset();
  column_partials_.reset();
  embed_sort_.reset();
  blas_workspace_.reset();
  pinned_.reset();
  alloc_.reset();
}

void CudaBackend::abandon_resources() noexcept {
  for (auto& g : graphs_)
    if (g) g->exec = nullptr;
  (void)blas_.release();
  cudnn_.abandon();
  for (DeviceBuffer* b :
       {&status_, &own_scalars_, &scratch_, &column_partials_, &embed_sort_, &blas_workspace_})
    (void)b->release();
  (void)pinned_.release();
  (void)alloc_.release();
  (void)status_host_.release();
  (void)idle_.release();
  (void)copy_stream_.release();
  (void)stream_.release();
}

void CudaBackend::set_tf32(bool on) {
  use_device(ordinal_);
  MR_CUBLAS_CALL(cublasSetMathMode(blas_, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                 ordinal_);
  if (tf32_ != on) {
    tf32_ = on;
    cudnn_math_changed();
    graph_reset();  // captured GEMMs used the old math mode (i14-gpu)
  }
}

const StepScalars* CudaBackend::stage_scalars(const StepScalars& s) {
  // Stream-ordered: ops queued before read the old value, ops after the new.
  upload(own_scalars_.get(), &s, sizeof(s));
  return static_cast<const StepScalars*>(own_scalars_.get());
}

DeviceBuffer CudaBackend::allocate(size_t bytes) {
  use_device(ordinal_);
  void* p = alloc_->take(bytes);
  DeviceBuffer buf(p, DeviceFree{this});
  // Zeroed in stream order: a reused block may still be read by queued work.
  MR_CUDA_CALL(cudaMemsetAsync(p, 0, CachingAllocator::size_class(bytes), stream_), ordinal_);
  return buf;
}

void CudaBackend::release(void* p) noexcept {
  // Stream order makes reuse safe: the next owner's work is queued after
  // every op that used the block.
  if (alloc_) alloc_->give_back(p);
}

MemoryUse CudaBackend::memory_use() const {
  MemoryUse m;
  m.in_use = static_cast<int64_t>(alloc_->in_use());
  m.peak = static_cast<int64_t>(alloc_->peak());
  // The whole device as the driver sees it (other processes, cuBLAS and
  // cuDNN workspaces, the context): a host call, no synchronisation.
  int64_t free_bytes = 0, total_bytes = 0;
  try {
    cuda_memory(ordinal_, &free_bytes, &total_bytes);
    m.device_used = total_bytes - free_bytes;
  } catch (const Error&) {
    m.device_used = -1;  // a report, not a reason to fail the epoch
  }
  return m;
}

void CudaBackend::reset_peak_memory() { alloc_->reset_peak(); }

void CudaBackend::upload(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  use_device(ordinal_);
  ring_upload(*pinned_, stream_, dst, host_src, bytes, wait_limits(), who());
}

// i14-devinput: the same path on the lane's stream.
void CudaBackend::upload_on(Lane lane, void* dst, const void* host_src, size_t bytes) {
  if (lane == Lane::compute) {
    upload(dst, host_src, bytes);
    return;
  }
  if (bytes == 0) return;
  use_device(ordinal_);
  ring_upload(*pinned_, copy_stream_, dst, host_src, bytes, wait_limits(), who());
}

void CudaBackend::reserve_staging(size_t bytes) {
  use_device(ordinal_);
  pinned_->reserve(std::min(bytes, kPinnedMax), wait_limits(), who());
}

void CudaBackend::download(void* host_dst, const void* src, size_t bytes) {
  ++downloads_;
  use_device(ordinal_);
  // host_dst is pageable: a copy into it returns only once the copy is done,
  // that is after everything queued before it, waiting inside the driver
  // with no deadline, abort or interrupt. So the stream is first waited for
  // by the polled, deadline-aware wait; the copy then finds it idle and only
  // takes as long as the transfer.
  wait_idle("a download");
  if (bytes > 0)
    MR_CUDA_CALL(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_), ordinal_);
  check_status();
}

void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  use_device(ordinal_);
  MR_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), ordinal_);
}

void CudaBackend::synchronize() {
  wait_idle("its queued work (synchronize)");
  check_status();
}

double* CudaBackend::reduction_scratch(int64_t blocks) {
  if (blocks > scratch_blocks_) {
    scratch_ = allocate(static_cast<size_t>(blocks) * sizeof(double));
    scratch_blocks_ = blocks;
  }
  return static_cast<double*>(scratch_.get());
}

void CudaBackend::check_status() {
  if (!status_armed_) return;
  status_armed_ = false;
  // Read and reset on the compute stream (non-blocking: the legacy default
  // stream would not be ordered with it), then poll until the word arrived.
  MR_CUDA_CALL(cudaMemcpyAsync(status_host_, status_.get(), sizeof(unsigned long long),
                               cudaMemcpyDeviceToHost, stream_),
               ordinal_);
  MR_CUDA_CALL(cudaMemsetAsync(status_.get(), 0xFF, sizeof(unsigned long long), stream_), ordinal_);
  wait_idle("the bad-label status word");
  const unsigned long long word = *status_host_.get();
  if (word == std::numeric_limits<unsigned long long>::max()) return;
  // High word: the row (the position, for an embedding index, with the top
  // bit kIndexStatusTag); low word: the value's bits (see cuda_loss.cu).
  const auto row = static_cast<int64_t>((word & ~kIndexStatusTag) >> 32);
  const auto bits = static_cast<uint32_t>(word & 0xFFFFFFFFu);
  float label = 0.0f;
  std::memcpy(&label, &bits, sizeof(label));
  // Positions of indices are saturated at kStatusMaxPosition (cuda_backend.h).
  const auto position = static_cast<int64_t>((word & ~(kIndexStatusTag | kTakeStatusTag)) >> 32);
  const char* later = position == kStatusMaxPosition ? " or later" : "";
  // i15-ops: a take_along_axis index (both tags; cuda_traced_index.cu).
  if ((word & kIndexStatusTag) != 0 && (word & kTakeStatusTag) != 0)
    fail(ErrorKind::value, "take_along_axis: index ", label, " at position ", position, later,
         " is not an integer in [", -status_take_n_, ", ", status_take_n_ - 1, "]");
  if ((word & kIndexStatusTag) != 0)
    fail(ErrorKind::value, "embedding index ", label, " at position ", position, later,
         " is not an integer in 0..", status_input_dim_ - 1);
  fail(ErrorKind::value, "label ", label, " at row ", row, " is outside 0..", status_cols_ - 1);
}

std::unique_ptr<Backend> make_cuda_backend(int index, int ordinal) {
  return std::make_unique<CudaBackend>(index, ordinal);
}

}  // namespace mr
