// All-reduce, broadcast and barrier between the replica threads of one
// process whose devices share host memory (CPU replicas). The all-reduce is a
// reduce-scatter followed by an all-gather: rank r sums chunk r of every
// rank's buffer (always in rank order 0..N-1, so the result does not depend
// on timing) into its own buffer, then every rank copies the other chunks
// from their owners. Every rank thus ends with bit-identical values.
//
// Every wait has a deadline: a rank that waits longer than `timeout` throws
// mr::Error(timeout) naming the collective and the ranks it waited for. A
// failing replica calls abort(), which wakes every waiting rank with a
// CollectiveAborted error so that nobody waits for a peer that will never
// come; reset() makes the communicator usable again once all ranks stopped.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/wait.h"  // CollectiveAborted
#include "dist/communicator.h"

namespace mr {

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(int size, double timeout_seconds);
  int size() const override { return size_; }
  void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) override;
  void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) override;
  void barrier(int rank) override { wait_all(rank, "barrier"); }
  std::string name() const override { return comm_kind_name(CommKind::threads); }
  // The same collectives on host buffers, whatever device the data came from
  // (the host-staged communicator sums its staging buffers with them).
  void all_reduce_host(int rank, float* buf, int64_t n);
  void broadcast_host(int rank, int root, float* buf, int64_t n);
  void set_timeout(double seconds);

 protected:
  void request_abort(const std::string& why) override;
  void finish_abort(bool aborted) override;

 private:
  // Blocks until all ranks arrived at this point; throws on timeout or abort.
  void wait_all(int rank, const char* what);

  const int size_;
  std::chrono::duration<double> timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  int arrived_ = 0;
  std::vector<char> here_;  // ranks that arrived in the current generation
  bool aborted_ = false;
  std::string abort_reason_;
  std::vector<float*> slots_;  // each rank's buffer during a collective
  const bool oversubscribed_;  // more ranks than hardware threads
  const int spin_;             // wait iterations before sleeping
};

}  // namespace mr
