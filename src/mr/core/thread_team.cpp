#include "core/thread_team.h"

#include <algorithm>

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

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// How long a member (for the next job) and the caller (for the members'
// parts) spin before sleeping on a condition variable. The ops of a step come
// every ~10-100 us with longer gaps around the loss, the update and the next
// batch; a member that sleeps there is woken through a futex and, on a VM, a
// halted vCPU, which costs more than the op it is woken for. Measured on an
// Intel Xeon Sapphire Rapids VM (2 cores; `build/bench_mlp_cpu 2 1500 200`,
// the vignette's MLP, 4 alternating runs): a 20 us spin (2000 pauses) gave
// 554-577 us/step and first steps up to 1.5 ms, a ~500 us spin 495-521
// us/step. An idle team (between fit() calls) still sleeps and burns no core.
// Timed rather than counted: a pause takes 10 ns on that machine and up to
// ~50 ns on others.
constexpr auto kSpinWindow = microseconds(500);
// A spinning thread gives its core away (sched_yield) this often: on a core
// another process wants, that process runs instead of the spin (the spinner's
// part, if a job comes, is taken by a running member); on an idle core the
// call returns at once (~0.3 us).
constexpr auto kYieldEvery = microseconds(20);

// A hand-off whose caller waited this long for the members, and longer than
// its own share took, waited for a member that was not running: parts take
// microseconds, a descheduled thread gets its core back after a scheduler
// tick (1-4 ms).
constexpr auto kStall = microseconds(250);
// The team judges its members over windows of this many hand-offs or this
// much time, whichever comes first.
constexpr int64_t kWindowJobs = 256;
constexpr auto kWindowTime = milliseconds(50);
// A window is bad when it saw at least kBadStalls stalls and the caller's
// waits took at least 1 / kBadShare of its time: then one member leaves the
// work. The full team is tried again after kFirstProbe, twice as long after
// each trial that fails (at most kLastProbe).
constexpr int64_t kBadStalls = 2;
constexpr int64_t kBadShare = 5;
constexpr auto kFirstProbe = milliseconds(250);
constexpr auto kLastProbe = milliseconds(8000);

constexpr int kEpochShift = 48;  // a region word's epoch bits (thread_team.h)

// Spins until done() holds (true) or kSpinWindow has passed (done()'s last
// answer); the clock is read once every 64 pauses, the core given away every
// kYieldEvery.
template <class Done>
bool spin_until(Done&& done) {
  const auto start = Clock::now();
  const auto end = start + kSpinWindow;
  auto next_yield = start + kYieldEvery;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      MR_CPU_RELAX();
    }
    const auto now = Clock::now();
    if (now >= end) return done();
    if (now >= next_yield) {
      std::this_thread::yield();
      next_yield = now + kYieldEvery;
    }
  }
}

double to_ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

ThreadTeam::ThreadTeam(int threads) : size_(threads), active_(threads) {
  MR_CHECK(threads >= 1, value, "a thread team needs at least 1 thread, got ", threads);
  regions_ = std::make_unique<Region[]>(static_cast<size_t>(threads));
  probe_after_ = kFirstProbe;
  threads_.reserve(static_cast<size_t>(threads - 1));
  try {
    for (int m = 1; m < threads; ++m) threads_.emplace_back([this, m] { worker(m); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_.store(true);
    }
    wake_.notify_all();
    park_.notify_all();
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
  park_.notify_all();
  for (auto& t : threads_) t.join();
}

TeamStatus ThreadTeam::status() const {
  TeamStatus s;
  s.size = size_;
  s.active = active();
  std::lock_guard<std::mutex> lk(status_mu_);
  s.why = s.active < s.size ? why_ : std::string();
  s.stalls = stalls_;
  s.reductions = reductions_;
  return s;
}

void ThreadTeam::record_error(std::exception_ptr e) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!error_) error_ = std::move(e);
}

bool ThreadTeam::claim(int member, uint64_t epoch, int64_t* part) {
  for (int i = 0; i < size_; ++i) {
    const bool own = i == 0;
    std::atomic<uint64_t>& word = regions_[static_cast<size_t>((member + i) % size_)].word;
    uint64_t w = word.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t next = w & kPartMask, end = (w >> kPartBits) & kPartMask;
      if ((w >> kEpochShift) != epoch || next >= end) break;
      // The owner takes the region's next part, a thief its last.
      const uint64_t claimed = own ? w + 1 : w - (uint64_t{1} << kPartBits);
      if (word.compare_exchange_weak(w, claimed, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
        *part = static_cast<int64_t>(own ? next : end - 1);
        return true;
      }
    }
  }
  return false;
}

void ThreadTeam::run_claimed(const std::function<void(int64_t, int)>* caller_fn, int member) {
  const uint64_t epoch = generation_.load(std::memory_order_acquire);
  int64_t part = 0;
  while (claim(member, epoch, &part)) {
    // A member reads the job after its claim: the caller published job_ and
    // parts_ before the region it claimed from, and cannot replace them
    // while a claimed part is unfinished.
    const std::function<void(int64_t, int)>& fn = member == 0 ? *caller_fn : *job_;
    const int64_t parts = parts_.load(std::memory_order_relaxed);
    try {
      fn(part, member);
    } catch (...) {
      record_error(std::current_exception());
    }
    if (finished_.fetch_add(1) + 1 == parts && member != 0 && caller_sleeping_.load()) {
      // The caller may be about to sleep: taking the mutex orders this
      // notification after its predicate check.
      { std::lock_guard<std::mutex> lk(mu_); }
      done_.notify_one();
    }
  }
}

uint64_t ThreadTeam::wait_for_job(int member, uint64_t seen) {
  for (;;) {
    if (member >= active_.load(std::memory_order_acquire)) {
      // Out of the work: sleep until the team takes this member back.
      std::unique_lock<std::mutex> lk(mu_);
      park_.wait(lk, [&] { return stop_.load() || member < active_.load(); });
      if (stop_.load()) return 0;
    }
    uint64_t s = 0;
    const bool fresh = spin_until([&] {
      s = generation_.load(std::memory_order_acquire);
      return s != seen || stop_.load(std::memory_order_relaxed) ||
             member >= active_.load(std::memory_order_relaxed);
    });
    if (!fresh) {
      std::unique_lock<std::mutex> lk(mu_);
      // Announced before the predicate is checked (both seq_cst): either
      // run_parts() sees this sleeper and notifies, or this check sees its
      // new epoch.
      sleepers_.fetch_add(1);
      wake_.wait(lk, [&] {
        return stop_.load() || generation_.load() != seen || member >= active_.load();
      });
      sleepers_.fetch_sub(1);
      s = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return 0;
    if (member >= active_.load(std::memory_order_acquire)) continue;
    return s;
  }
}

void ThreadTeam::worker(int member) {
  FlushToZeroGuard ftz;  // for the thread's lifetime
  uint64_t seen = 0;
  for (;;) {
    const uint64_t s = wait_for_job(member, seen);
    if (stop_.load()) return;
    seen = s;
    run_claimed(nullptr, member);
  }
}

void ThreadTeam::run_parts(int64_t parts, const std::function<void(int64_t, int)>& fn) {
  if (parts <= 0) return;
  FlushToZeroGuard ftz;
  if (size_ == 1 || parts == 1 || active() == 1) {
    if (size_ > 1 && active() == 1) maybe_probe();
    for (int64_t p = 0; p < parts; ++p) fn(p, 0);
    return;
  }
  MR_CHECK(static_cast<uint64_t>(parts) <= kPartMask, value, "a thread team job has at most ",
           kPartMask, " parts, got ", parts);
  const auto t0 = Clock::now();
  finished_.store(0, std::memory_order_relaxed);
  parts_.store(parts, std::memory_order_relaxed);
  job_ = &fn;
  const uint64_t epoch = (generation_.load(std::memory_order_relaxed) + 1) & 0xFFFF;
  // Region r (of the working members) holds parts [parts r / n, parts (r + 1) / n).
  const int64_t working = active();
  for (int r = 0; r < size_; ++r) {
    const int64_t begin = r < working ? parts * r / working : 0;
    const int64_t end = r < working ? parts * (r + 1) / working : 0;
    regions_[static_cast<size_t>(r)].word.store((epoch << kEpochShift) |
                                                    (static_cast<uint64_t>(end) << kPartBits) |
                                                    static_cast<uint64_t>(begin),
                                                std::memory_order_relaxed);
  }
  // seq_cst: releases the above, and is ordered before the sleepers_ load.
  generation_.store(epoch);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    wake_.notify_all();
  }
  run_claimed(&fn, 0);
  const auto t1 = Clock::now();
  const bool finished =
      spin_until([&] { return finished_.load(std::memory_order_acquire) == parts; });
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (!finished) {
      // Announced before the predicate is checked (both seq_cst): either the
      // last member sees it and notifies, or the check sees every part done.
      caller_sleeping_.store(true);
      done_.wait(lk, [&] { return finished_.load() == parts; });
      caller_sleeping_.store(false);
    }
    error = std::move(error_);
    error_ = nullptr;
  }
  if (adaptive_) {
    const auto t2 = Clock::now();
    account(t2 - t0, t2 - t1, t1 - t0);
  }
  if (error) std::rethrow_exception(error);
}

void ThreadTeam::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t begin, int64_t end)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int members = active();
  if (members == 1 || n <= grain) {
    if (members == 1 && size_ > 1) maybe_probe();
    FlushToZeroGuard ftz;
    fn(0, n);
    return;
  }
  // Chunk length: n / members rounded up to a multiple of grain.
  const int64_t per = (n + members - 1) / members;
  const int64_t chunk = (per + grain - 1) / grain * grain;
  const int64_t parts = (n + chunk - 1) / chunk;
  // The part lambda captures one pointer so that std::function stores it in
  // place: no heap allocation per op.
  struct Split {
    int64_t n, chunk;
    const std::function<void(int64_t, int64_t)>* fn;
  } split{n, chunk, &fn};
  run_parts(parts, [s = &split](int64_t part, int) {
    const int64_t begin = s->chunk * part;
    const int64_t end = begin + s->chunk < s->n ? begin + s->chunk : s->n;
    (*s->fn)(begin, end);
  });
}

// ---- adaptation ---------------------------------------------------------------

void ThreadTeam::set_active(int n, std::string why) {
  {
    std::lock_guard<std::mutex> lk(status_mu_);
    why_ = std::move(why);
  }
  {
    // Under mu_: a parked member checks active_ under it before it sleeps.
    std::lock_guard<std::mutex> lk(mu_);
    active_.store(n);
  }
  park_.notify_all();
}

void ThreadTeam::account(Clock::duration job, Clock::duration wait, Clock::duration own) {
  window_.jobs += 1;
  window_.busy += job;
  window_.waited += wait;
  if (wait >= kStall && wait >= 2 * own) {
    window_.stalls += 1;
    std::lock_guard<std::mutex> lk(status_mu_);
    stalls_ += 1;
  }
  if (window_.jobs >= kWindowJobs || window_.busy >= kWindowTime) decide(Clock::now());
}

void ThreadTeam::decide(Clock::time_point now) {
  const Window w = window_;
  window_ = Window{};
  const bool bad = w.stalls >= kBadStalls && w.waited * kBadShare >= w.busy;
  if (probing_) {
    probing_ = false;
    if (!bad) {  // the full team works again: keep it
      probe_after_ = kFirstProbe;
      set_active(size_, std::string());
      return;
    }
    probe_after_ = std::min<Clock::duration>(probe_after_ * 2, kLastProbe);
    cut(w, now, before_probe_);
    return;
  }
  if (bad && active() > 1) {
    cut(w, now, active() - 1);
    return;
  }
  if (active() < size_ && now >= next_probe_) start_probe();
}

void ThreadTeam::cut(const Window& w, Clock::time_point now, int members) {
  {
    std::lock_guard<std::mutex> lk(status_mu_);
    reductions_ += 1;
  }
  const double share = w.busy.count() > 0 ? 100.0 * to_ms(w.waited) / to_ms(w.busy) : 0.0;
  set_active(members, "another process is using the cores: over " + std::to_string(w.jobs) +
                          " ops the replica waited " + std::to_string(w.stalls) +
                          " times >= 0.25 ms for descheduled threads (" +
                          std::to_string(static_cast<int>(share + 0.5)) +
                          "% of its time); the whole team is tried again every " +
                          std::to_string(static_cast<int>(to_ms(probe_after_) + 0.5)) + " ms");
  next_probe_ = now + probe_after_;
}

void ThreadTeam::start_probe() {
  probing_ = true;
  before_probe_ = active();
  window_ = Window{};
  std::string why;
  {
    std::lock_guard<std::mutex> lk(status_mu_);
    why = why_;
  }
  set_active(size_, std::move(why));
}

void ThreadTeam::maybe_probe() {
  // A cut team reads the clock once every 64 inline calls.
  if (!adaptive_ || probing_ || ++inline_calls_ < 64) return;
  inline_calls_ = 0;
  if (Clock::now() >= next_probe_) start_probe();
}

}  // namespace mr
