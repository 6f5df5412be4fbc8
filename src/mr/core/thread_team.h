// A fixed team of threads that share one replica's CPU work. The thread that
// calls run() is member 0 and works too; members 1..n-1 are owned by the team,
// flush denormals, and never touch R. run() returns when every member has
// finished its share; the first exception thrown by any member is rethrown
// in the caller after all members stopped.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mr {

class ThreadTeam {
 public:
  explicit ThreadTeam(int threads);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return size_; }
  // Calls fn(member, size) once on every member, the caller being member 0.
  // One thread drives a team: run() is neither re-entrant nor concurrent.
  // The caller computes with flush-to-zero set for the call (restored after).
  void run(const std::function<void(int member, int size)>& fn);
  // Splits [0, n) into size() contiguous chunks whose bounds are multiples of
  // `grain` (except the end) and calls fn(begin, end) for each non-empty chunk.
  // Runs inline when n <= grain or the team has one member.
  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker(int member);
  void record_error(std::exception_ptr e);

  // generation_, pending_ and stop_ are atomics so that members and the caller
  // can spin on them briefly without the mutex. A sleeper announces itself
  // (sleepers_, caller_sleeping_) under mu_ before it checks its predicate,
  // and whoever changes what it waits for checks the announcement after the
  // change (all seq_cst) and notifies under mu_, so no wake-up is lost.
  int size_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int, int)>* job_ = nullptr;  // published by generation_
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  // ---- i14-overhead: who sleeps on the condition variables, so that run()
  // and the last member take the mutex and notify only when someone does
  // (a spinning team hands over an op with atomics alone).
  std::atomic<int> sleepers_{0};              // members waiting on wake_
  std::atomic<bool> caller_sleeping_{false};  // run()'s caller waiting on done_
  std::exception_ptr error_;                  // guarded by mu_
};

}  // namespace mr
