#include "core/wait.h"

#include <chrono>
#include <thread>

namespace mr {

void poll_until(const std::function<bool()>& ready, const WaitLimits& limits,
                const std::string& who, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Most device waits end within microseconds (a step's last kernels):
  // yield a few times before sleeping, and keep sleeps short so a finished
  // wait is noticed quickly.
  for (int i = 0;; ++i) {
    if (ready()) return;
    if (limits.abort != nullptr && limits.abort->load(std::memory_order_acquire))
      throw CollectiveAborted(who + " stopped waiting for " + what +
                              ": the collective was aborted");
    if (limits.interrupt != nullptr && limits.interrupt->load(std::memory_order_acquire))
      fail(ErrorKind::interrupted, who, " stopped waiting for ", what, ": interrupted");
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (limits.timeout_seconds > 0 && waited > limits.timeout_seconds)
      fail(ErrorKind::timeout, who, " waited more than ", limits.timeout_seconds, " s for ", what,
           " (the collective timeout); the device may be hung");
    if (i < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(i < 1024 ? 20 : 200));
  }
}

}  // namespace mr
