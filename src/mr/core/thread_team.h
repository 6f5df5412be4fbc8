// A fixed team of threads that share one replica's CPU work. The thread that
// hands out work is member 0 and works too; members 1..n-1 are owned by the
// team, flush denormals, and never touch R.
//
// Work is handed out as parts that members claim: a part runs once, on
// whichever member takes it first, so a member that is not running when the
// work comes (its core taken by another process) leaves its part to the
// others instead of holding everyone up. Results never depend on which member
// ran a part (the kernels' contract: bit-identical for any split).
//
// On a shared machine a member can still be descheduled in the middle of a
// part, and the caller then waits for the scheduler to give it its core back
// (milliseconds, against parts of microseconds). The team measures those
// waits; when they take a large share of its time it takes members out of the
// work (they sleep), and it tries the full team again after a while, longer
// each time the trial fails. status() says how many members take work and why.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mr {

// How a team works now: for print(strategy) and the device monitor.
struct TeamStatus {
  int size = 1;            // members, the caller included
  int active = 1;          // members that take work now
  std::string why;         // why active < size (empty when it is not)
  int64_t stalls = 0;      // hand-offs the caller waited >= 250 us for a descheduled member
  int64_t reductions = 0;  // times the team took a member out of the work
};

class ThreadTeam {
 public:
  explicit ThreadTeam(int threads);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return size_; }
  // Members that take work now (1 .. size()).
  int active() const { return active_.load(std::memory_order_relaxed); }
  TeamStatus status() const;
  // Off: every member always takes work (tests of the split itself).
  void set_adaptive(bool on) { adaptive_ = on; }

  // Calls fn(part, member) once for every part in [0, parts), each on the
  // member that claims it (member 0 is the caller; member < size() names the
  // thread, for per-thread scratch). Parts run concurrently and in any order.
  // Returns when every part has finished; the first exception thrown by any
  // part is rethrown then. One thread drives a team: neither re-entrant nor
  // concurrent. The caller computes with flush-to-zero set for the call.
  void run_parts(int64_t parts, const std::function<void(int64_t part, int member)>& fn);
  // Splits [0, n) into at most active() contiguous chunks whose bounds are
  // multiples of `grain` (except the end) and calls fn(begin, end) for each.
  // Runs inline when n <= grain or one member is active.
  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  using Clock = std::chrono::steady_clock;
  void worker(int member);
  // Waits for a job whose epoch differs from `seen` (returns its state), for
  // stop (returns 0 with stop_ set), or parks while the member is inactive.
  uint64_t wait_for_job(int member, uint64_t seen);
  // Claims a part of the job of `epoch` for `member`: the next of its own
  // region, else the last left in another's; false when none is left.
  bool claim(int member, uint64_t epoch, int64_t* part);
  // Runs parts until none is left to claim: the caller (member 0) its own
  // `caller_fn`, a member the published job_.
  void run_claimed(const std::function<void(int64_t, int)>* caller_fn, int member);
  void record_error(std::exception_ptr e);
  // Caller side: the hand-off just measured, and the decisions it leads to.
  void account(Clock::duration job, Clock::duration wait, Clock::duration own);
  void decide(Clock::time_point now);
  void maybe_probe();
  void start_probe();
  void set_active(int n, std::string why);

  // A job's parts are dealt in contiguous regions, one per working member
  // (region r to member r), so that a member takes the same share of an op's
  // rows op after op, as a static split would, and its data stay in its
  // caches; a member with nothing left in its region takes the last part
  // left in another's. A region is one word: epoch (16 bits) | end (24) |
  // next (24); the owner claims `next`, a thief `end - 1`, each by a
  // compare-exchange on the whole word, so a claim takes a part of whichever
  // job is current at that instant, and a job cannot finish (nor the next
  // be published) while a claimed part runs: a late member never runs a part
  // twice or a part of a job that is gone.
  static constexpr int kPartBits = 24;
  static constexpr uint64_t kPartMask = (uint64_t{1} << kPartBits) - 1;
  struct alignas(64) Region {
    std::atomic<uint64_t> word{0};
  };

  int size_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_;         // members waiting for a job
  std::condition_variable park_;         // members out of the work
  std::condition_variable done_;         // the caller waiting for the parts
  std::unique_ptr<Region[]> regions_;    // size_ of them
  std::atomic<uint64_t> generation_{0};  // the current job's epoch, published last
  std::atomic<int64_t> parts_{0};        // the current job's parts
  std::atomic<int64_t> finished_{0};     // parts of the current job that finished
  const std::function<void(int64_t, int)>* job_ = nullptr;  // published by generation_
  std::atomic<bool> stop_{false};
  std::atomic<int> active_;
  std::atomic<int> sleepers_{0};              // members waiting on wake_
  std::atomic<bool> caller_sleeping_{false};  // the caller waiting on done_
  std::exception_ptr error_;                  // guarded by mu_

  // ---- adaptation (the driving thread only, except status()) ----
  bool adaptive_ = true;
  struct Window {
    int64_t jobs = 0, stalls = 0;
    Clock::duration busy{}, waited{};
  } window_;
  void cut(const Window& w, Clock::time_point now, int members);
  bool probing_ = false;           // the full team is on trial
  int before_probe_ = 1;           // active() when the trial began
  Clock::duration probe_after_{};  // how long a cut lasts before the next trial
  Clock::time_point next_probe_{};
  int64_t inline_calls_ = 0;      // since the last look at the clock (cut teams)
  mutable std::mutex status_mu_;  // guards the fields below
  std::string why_;
  int64_t stalls_ = 0, reductions_ = 0;
};

}  // namespace mr
