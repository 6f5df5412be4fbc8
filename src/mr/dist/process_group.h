// Collectives between the worker processes of a multi-worker job, on host
// memory: one rank per process (the process's first replica thread calls
// them, or its main thread between steps, never both at once). The engine is
// Gloo over TCP (DESIGN.md §7: never a home-made all-reduce); NCCL joins the
// GPUs of every worker directly (dist/comm_nccl.cu) and needs no group.
//
// Invariants: every rank ends an all-reduce with bit-identical values (Gloo's
// ring reduces each chunk on one rank, then all-gathers it); every call has
// the group's deadline; a failure (a peer's connection closed, the deadline)
// throws Error(worker) or Error(timeout) and breaks the group for good (Gloo
// cannot resume a context after a failed operation), so every later call
// throws at once instead of exchanging garbage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mr {

class StoreClient;

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void all_reduce_sum(float* buf, int64_t n) = 0;
  virtual void all_reduce_sum(double* buf, int64_t n) = 0;
  // buf becomes rank root's buf.
  virtual void broadcast(float* buf, int64_t n, int root) = 0;
  // all (size() * bytes) receives every rank's `mine` in rank order.
  virtual void all_gather(const void* mine, size_t bytes, void* all) = 0;
  virtual void barrier() = 0;
  virtual void set_timeout(double seconds) = 0;
  // Set when a collective failed; the message of that failure.
  virtual bool broken() const = 0;
  virtual std::string name() const = 0;  // "Gloo (TCP)"
};

// Whether this build has Gloo (build_config.h).
bool built_with_gloo();

// Connects `size` processes through the store: every rank publishes its TCP
// address under `prefix` and connects to every other (a full mesh). bind_host:
// the address to listen on ("" = the host name, or GLOO_SOCKET_IFNAME's
// interface when set). Throws Error(device) when built without Gloo,
// Error(timeout) when a peer does not show up within `timeout` seconds.
std::unique_ptr<ProcessGroup> make_gloo_group(StoreClient& store, const std::string& prefix,
                                              int rank, int size, const std::string& bind_host,
                                              double timeout);

}  // namespace mr
