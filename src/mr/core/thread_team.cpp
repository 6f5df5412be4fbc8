#include "core/thread_team.h"

#include "core/error.h"
#include "core/fp_mode.h"

#if defined(__x86_64__) || defined(__SSE2__)
#include <immintrin.h>
#define MR_CPU_RELAX() _mm_pause()
#else
#define MR_CPU_RELAX() ((void)0)
#endif

namespace mr {

namespace {
// Spin this many pause iterations before sleeping. The ops of a training step
// come every ~10-100 us, so a short spin hands the next op to a member without
// a futex wake-up, while an idle team (between fit() calls) sleeps on the
// condition variable and burns no core.
constexpr int kSpinIterations = 2000;
}  // namespace

ThreadTeam::ThreadTeam(int threads) : size_(threads) {
  MR_CHECK(threads >= 1, value, "a thread team needs at least 1 thread, got ", threads);
  threads_.reserve(static_cast<size_t>(threads - 1));
  try {
    for (int m = 1; m < threads; ++m) threads_.emplace_back([this, m] { worker(m); });
  } catch (...) {
    stop_.store(true);
    { std::lock_guard<std::mutex> lk(mu_); }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

ThreadTeam::~ThreadTeam() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadTeam::record_error(std::exception_ptr e) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!error_) error_ = std::move(e);
}

void ThreadTeam::worker(int member) {
  FlushToZeroGuard ftz;  // for the thread's lifetime
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int i = 0; i < kSpinIterations && gen == seen && !stop_.load(std::memory_order_relaxed);
         ++i) {
      MR_CPU_RELAX();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      // Announced before the predicate is checked (both seq_cst): either
      // run() sees this sleeper and notifies, or this check sees its new
      // generation.
      sleepers_.fetch_add(1);
      wake_.wait(lk, [&] { return stop_.load() || generation_.load() != seen; });
      sleepers_.fetch_sub(1);
      gen = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = gen;
    try {
      (*job_)(member, size_);
    } catch (...) {
      record_error(std::current_exception());
    }
    if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      // The caller may be about to sleep: taking the mutex orders this
      // notification after its predicate check.
      { std::lock_guard<std::mutex> lk(mu_); }
      done_.notify_one();
    }
  }
}

void ThreadTeam::run(const std::function<void(int member, int size)>& fn) {
  FlushToZeroGuard ftz;
  if (size_ == 1) {
    fn(0, 1);
    return;
  }
  // Members that still spin see the new generation without the mutex; only
  // sleeping members need it and the wake-up (the previous run() left error_
  // null under mu_, so nothing else is reset here).
  job_ = &fn;
  pending_.store(size_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: ordered before the sleepers_ load
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    wake_.notify_all();
  }
  try {
    fn(0, size_);
  } catch (...) {
    record_error(std::current_exception());
  }
  bool finished = false;
  for (int i = 0; i < kSpinIterations; ++i) {
    if (pending_.load(std::memory_order_acquire) == 0) {
      finished = true;
      break;
    }
    MR_CPU_RELAX();
  }
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (!finished) {
      // Announced before the predicate is checked (both seq_cst): either the
      // last member sees it and notifies, or the check sees pending_ == 0.
      caller_sleeping_.store(true);
      done_.wait(lk, [&] { return pending_.load() == 0; });
      caller_sleeping_.store(false);
    }
    error = std::move(error_);
    error_ = nullptr;
    job_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadTeam::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t begin, int64_t end)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (size_ == 1 || n <= grain) {
    FlushToZeroGuard ftz;
    fn(0, n);
    return;
  }
  // Chunk length: n / size rounded up to a multiple of grain.
  const int64_t per = (n + size_ - 1) / size_;
  const int64_t chunk = (per + grain - 1) / grain * grain;
  // The member lambda captures one pointer so that std::function stores it
  // in place: no heap allocation per op.
  struct Split {
    int64_t n, chunk;
    const std::function<void(int64_t, int64_t)>* fn;
  } split{n, chunk, &fn};
  run([s = &split](int member, int) {
    const int64_t begin = s->chunk * member;
    if (begin >= s->n) return;
    const int64_t end = begin + s->chunk < s->n ? begin + s->chunk : s->n;
    (*s->fn)(begin, end);
  });
}

}  // namespace mr
