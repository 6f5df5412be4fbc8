// Collectives between the replicas of one strategy. Every replica thread calls
// the same collective with its own rank; the call returns when the result is
// in that replica's buffer. Sums are done in a fixed order, so every replica
// ends with bit-identical values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"

namespace mr {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  // buf (n floats on `be`'s device) becomes the sum over ranks.
  virtual void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) = 0;
  // buf becomes root's buf.
  virtual void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) = 0;
  virtual void barrier(int rank) = 0;
  // Wakes every rank blocked in a collective (they throw), after one replica
  // failed; reset() readies the communicator again once all ranks stopped.
  virtual void abort(const std::string& /*why*/) {}
  virtual void reset() {}
};

// One replica: every collective is the identity.
std::unique_ptr<Communicator> make_solo_communicator();

// The communicator for replicas on `devices` (one rank per device): the
// identity for one device, the thread all-reduce for CPU devices.
struct DeviceSpec;
std::unique_ptr<Communicator> make_communicator(const std::vector<DeviceSpec>& devices,
                                                double timeout_seconds);

}  // namespace mr
