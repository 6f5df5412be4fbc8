// What a layer may ask of the replica set it runs in, without knowing it: the
// replica count and a sum across replicas. Synchronized batch normalization
// uses it; nn/ never includes dist/ (DESIGN §2), the step passes an
// implementation in.
//
// Invariant: a collective is entered by every replica in the same order, also
// by a replica whose slice of the batch is empty (it contributes zeros), or
// the others wait until the collective deadline.
#pragma once

#include <cstdint>

namespace mr {

class ReplicaContext {
 public:
  virtual ~ReplicaContext() = default;
  virtual int replicas() const = 0;
  virtual int rank() const = 0;
  // data[0..n) := the element-wise sum of every replica's data (device memory of
  // this replica's backend).
  virtual void all_reduce_sum(float* data, int64_t n) = 0;
};

// The context of a replica that is alone: the sum is the value itself.
class SoloContext final : public ReplicaContext {
 public:
  int replicas() const override { return 1; }
  int rank() const override { return 0; }
  void all_reduce_sum(float*, int64_t) override {}
};

}  // namespace mr
