#include "dist/comm_threads.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MR_PAUSE() _mm_pause()
#else
#define MR_PAUSE() std::this_thread::yield()
#endif

namespace mr {

ThreadCommunicator::ThreadCommunicator(int size, double timeout_seconds)
    : size_(size),
      timeout_(timeout_seconds),
      here_(static_cast<size_t>(size), 0),
      slots_(static_cast<size_t>(size), nullptr),
      oversubscribed_(static_cast<unsigned>(size) >
                      std::max(1u, std::thread::hardware_concurrency())),
      spin_(oversubscribed_ ? 200 : 4000) {
  MR_CHECK(size >= 1, value, "a communicator needs at least one rank, got ", size);
  MR_CHECK(timeout_seconds > 0, value, "collective timeout must be positive, got ",
           timeout_seconds);
}

void ThreadCommunicator::set_timeout(double seconds) {
  MR_CHECK(seconds > 0, value, "collective timeout must be positive, got ", seconds);
  std::lock_guard<std::mutex> lock(mu_);
  timeout_ = std::chrono::duration<double>(seconds);
}

void ThreadCommunicator::request_abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_) abort_reason_ = why;
  aborted_ = true;
  cv_.notify_all();
}

void ThreadCommunicator::finish_abort(bool) {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = false;
  abort_reason_.clear();
  arrived_ = 0;
  std::fill(here_.begin(), here_.end(), 0);
  ++generation_;
}

void ThreadCommunicator::wait_all(int rank, const char* what) {
  if (size_ == 1) return;
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_) throw CollectiveAborted(std::string(what) + " abandoned: " + abort_reason_);
  const uint64_t gen = generation_.load();
  here_[static_cast<size_t>(rank)] = 1;
  if (++arrived_ == size_) {
    arrived_ = 0;
    std::fill(here_.begin(), here_.end(), 0);
    generation_.fetch_add(1);
    cv_.notify_all();
    return;
  }
  // A step's collectives follow each other closely: spin briefly before
  // sleeping, since a condition-variable wake-up costs tens of microseconds.
  // With more ranks than cores, spinning would take the core a peer needs,
  // so the waiting rank yields instead.
  lock.unlock();
  for (int i = 0; i < spin_ && generation_.load(std::memory_order_acquire) == gen; ++i) {
    if (oversubscribed_)
      std::this_thread::yield();
    else
      MR_PAUSE();
  }
  lock.lock();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout_);
  while (generation_.load() == gen && !aborted_) {
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && generation_.load() == gen &&
        !aborted_) {
      std::ostringstream missing;
      for (int r = 0, k = 0; r < size_; ++r)
        if (!here_[static_cast<size_t>(r)]) missing << (k++ ? ", " : "") << r;
      const std::string msg = std::string(what) + " timed out after " +
                              std::to_string(timeout_.count()) + " s on replica " +
                              std::to_string(rank) + ", waiting for replica(s) " + missing.str();
      aborted_ = true;
      abort_reason_ = msg;
      cv_.notify_all();
      throw Error(ErrorKind::timeout, msg);
    }
  }
  if (generation_.load() == gen)
    throw CollectiveAborted(std::string(what) + " abandoned: " + abort_reason_);
}

void ThreadCommunicator::all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) {
  MR_CHECK(be.kind() == DeviceKind::cpu, device, "the thread all-reduce needs host memory, got ",
           be.name());
  all_reduce_host(rank, buf, n);
}

void ThreadCommunicator::all_reduce_host(int rank, float* buf, int64_t n) {
  if (size_ == 1) return;
  slots_[static_cast<size_t>(rank)] = buf;
  wait_all(rank, "all-reduce");
  // Reduce-scatter: rank r owns chunk r and sums it over ranks in rank order.
  const int64_t begin = n * rank / size_, end = n * (rank + 1) / size_;
  // Blocks of a few KB keep the partial sums in L1 and the loops vectorised;
  // each element is still summed as ((x0 + x1) + x2) + ...
  constexpr int64_t kBlock = 2048;
  alignas(64) float acc[kBlock];
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t len = std::min(kBlock, end - b);
    const float* __restrict first = slots_[0] + b;
    for (int64_t i = 0; i < len; ++i) acc[i] = first[i];
    for (int k = 1; k < size_; ++k) {
      const float* __restrict src = slots_[static_cast<size_t>(k)] + b;
      for (int64_t i = 0; i < len; ++i) acc[i] += src[i];
    }
    std::memcpy(buf + b, acc, static_cast<size_t>(len) * sizeof(float));
  }
  wait_all(rank, "all-reduce");
  // All-gather: copy every other rank's finished chunk.
  for (int k = 0; k < size_; ++k) {
    if (k == rank) continue;
    const int64_t b = n * k / size_, e = n * (k + 1) / size_;
    std::memcpy(buf + b, slots_[static_cast<size_t>(k)] + b,
                static_cast<size_t>(e - b) * sizeof(float));
  }
  // Nobody may reuse its buffer while others still copy from it.
  wait_all(rank, "all-reduce");
}

void ThreadCommunicator::broadcast(int rank, int root, Backend& be, float* buf, int64_t n) {
  MR_CHECK(be.kind() == DeviceKind::cpu, device, "the thread broadcast needs host memory, got ",
           be.name());
  broadcast_host(rank, root, buf, n);
}

void ThreadCommunicator::broadcast_host(int rank, int root, float* buf, int64_t n) {
  if (size_ == 1) return;
  MR_CHECK(root >= 0 && root < size_, value, "broadcast root ", root, " is not a rank");
  slots_[static_cast<size_t>(rank)] = buf;
  wait_all(rank, "broadcast");
  if (rank != root)
    std::memcpy(buf, slots_[static_cast<size_t>(root)], static_cast<size_t>(n) * sizeof(float));
  wait_all(rank, "broadcast");
}

}  // namespace mr
