// Writes to a peer that died raise SIGPIPE, and Gloo writes without
// MSG_NOSIGNAL. R installs its own SIGPIPE handler, which raises an R error:
// on a replica thread or Gloo's I/O thread that would unwind R's stack from a
// thread that is not R's. So every thread that may write to a peer blocks
// SIGPIPE: replica threads and Gloo's own threads for their whole life (a
// thread inherits the mask of the thread that creates it), R's thread for
// the duration of a collective. A write then fails with EPIPE, which Gloo
// turns into an exception.
#pragma once

#include <signal.h>
#include <time.h>

namespace mr {

// Blocks SIGPIPE in this thread until destroyed; a SIGPIPE raised meanwhile is
// consumed before the old mask returns, so it never reaches R's handler.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~SigpipeGuard() {
    if (!blocked_) return;
    if (!was_pending_) {
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

// For threads that live for a job (replica threads): SIGPIPE stays blocked.
inline void block_sigpipe_in_this_thread() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
}

}  // namespace mr
