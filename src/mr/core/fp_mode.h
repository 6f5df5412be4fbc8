// Flush-to-zero / denormals-are-zero for threads that compute. With unscaled
// 0..255 inputs many softmax outputs are subnormal and x86 cores slow down by up
// to 5x on them; TensorFlow flushes them too. The guard restores the previous
// mode so that a thread we borrow (never R's: R's thread does not compute) comes
// back unchanged.
#pragma once

namespace mr {

class FlushToZeroGuard {
 public:
  FlushToZeroGuard();
  ~FlushToZeroGuard();
  FlushToZeroGuard(const FlushToZeroGuard&) = delete;
  FlushToZeroGuard& operator=(const FlushToZeroGuard&) = delete;

 private:
  unsigned int saved_ = 0;
};

// True when the calling thread flushes denormals (for tests).
bool flush_to_zero_enabled();

}  // namespace mr
