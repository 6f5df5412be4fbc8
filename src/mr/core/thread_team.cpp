#include "core/thread_team.h"

#include <chrono>

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
// How long a member (for the next job) and the caller (for the members'
// shares) spin before sleeping on a condition variable. The ops of a step
// come every ~10-100 us with longer gaps around the loss, the update and the
// next batch; a member that sleeps there is woken through a futex and, on a
// VM, a halted vCPU, which costs more than the op it is woken for. Measured on
// an Intel Xeon Sapphire Rapids VM (2 cores; `build/bench_mlp_cpu 2 1500
// 200`, the vignette's MLP, 4 alternating runs): a 20 us spin (2000 pauses)
// gave 554-577 us/step and first steps up to 1.5 ms, a ~500 us spin 495-521
// us/step. An idle team (between fit() calls) still sleeps and burns no core.
// Timed rather than counted: a pause takes 10 ns on that machine and up to
// ~50 ns on others.
constexpr auto kSpinWindow = std::chrono::microseconds(500);

// Spins until done() holds (true) or kSpinWindow has passed (done()'s last
// answer); the clock is read once every 64 pauses.
template <class Done>
bool spin_until(Done&& done) {
  const auto end = std::chrono::steady_clock::now() + kSpinWindow;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      MR_CPU_RELAX();
    }
    if (std::chrono::steady_clock::now() >= end) return done();
  }
}
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
    uint64_t gen = seen;
    spin_until([&] {
      gen = generation_.load(std::memory_order_acquire);
      return gen != seen || stop_.load(std::memory_order_relaxed);
    });
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
  const bool finished = spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
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
