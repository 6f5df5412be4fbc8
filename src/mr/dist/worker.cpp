#include "dist/worker.h"

#include <chrono>

#include "core/error.h"
#include "core/fp_mode.h"
#include "dist/sigpipe_guard.h"

namespace mr {

Worker::Worker() : thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Worker::post(std::function<void()> job) {
  std::lock_guard<std::mutex> lock(mu_);
  MR_CHECK(!busy_, internal, "a replica worker got a job while busy");
  job_ = std::move(job);
  busy_ = true;
  error_ = nullptr;
  cv_.notify_all();
}

void Worker::wait() {
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !busy_; });
    err = error_;
    error_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

bool Worker::wait_for(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return !busy_; });
}

void Worker::loop() {
  FlushToZeroGuard ftz;
  // i16: a replica may write to another worker that died (dist/sigpipe_guard.h).
  block_sigpipe_in_this_thread();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || busy_; });
    if (busy_) {
      std::function<void()> job = std::move(job_);
      lock.unlock();
      std::exception_ptr err;
      try {
        job();
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      error_ = err;
      busy_ = false;
      cv_.notify_all();
    } else if (stop_) {
      return;
    }
  }
}

}  // namespace mr
