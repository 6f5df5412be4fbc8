// Host waits for devices and peers. A host thread never blocks in a call that
// cannot be abandoned (cudaStreamSynchronize, cudaEventSynchronize): it polls
// a readiness test with poll_until(), which gives up at a deadline (the
// model's collective timeout), when a collective was aborted (a peer replica
// failed: that peer will never finish its part) or when an interrupt was
// requested. Abandoning a wait leaves the device work queued; whoever owns it
// (the communicator's reset(), the backend's destructor) cleans up from one
// thread once every replica thread has returned.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "core/error.h"

namespace mr {

// Thrown in ranks woken by an abort: a consequence, never the root cause (the
// model reports the failure of the replica that did not throw this).
class CollectiveAborted : public Error {
 public:
  explicit CollectiveAborted(const std::string& what) : Error(ErrorKind::internal, what) {}
};

struct WaitLimits {
  // Seconds before giving up with Error(timeout); <= 0: no deadline.
  double timeout_seconds = 0;
  // Set by Communicator::abort(): stop with CollectiveAborted.
  const std::atomic<bool>* abort = nullptr;
  // Set by whoever relays a user interrupt: stop with Error(interrupted).
  const std::atomic<bool>* interrupt = nullptr;
};

// Calls ready() until it returns true (spinning briefly, then yielding, then
// sleeping at most 200 us between polls). `who` names the device ("gpu:1
// (CUDA device 1)"), `what` the thing waited for ("the compute stream to
// finish a download"); both appear in the messages. ready() may throw.
void poll_until(const std::function<bool()>& ready, const WaitLimits& limits,
                const std::string& who, const std::string& what);

}  // namespace mr
