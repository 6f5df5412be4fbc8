// The host thread that drives one replica. Jobs run in order; the thread
// flushes denormals for its whole life and never touches R. An exception in a
// job is kept and rethrown by wait() on the caller's thread, so no exception
// ever crosses a thread boundary by itself.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace mr {

class Worker {
 public:
  Worker();
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Starts `job` on the worker; at most one job is in flight.
  void post(std::function<void()> job);
  // Waits for the job in flight, then rethrows its exception, if any.
  void wait();
  // Waits at most `seconds` for the job in flight; true when none is (then
  // wait() returns at once).
  bool wait_for(double seconds);
  std::thread::id id() const { return thread_.get_id(); }

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace mr
