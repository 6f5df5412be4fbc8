// Datasets resident on the device (i14-devinput): in-memory arrays (fit(x,
// y)'s ArraySource) that fit a memory budget are uploaded once per replica
// at the start of a pass, outside steps; each step then uploads only its
// slice's row numbers (int32) and gathers the rows on the device
// (Backend::gather_rows) into the step's input, target and weight buffers.
// The rows are ArraySource's own order (shuffled_order(n, seed, epoch)), so
// every step sees the bytes a host gather would have given it.
//
// On CPU replicas the host arrays are the device's memory: nothing is
// copied, the gather reads the arrays themselves (which saves the source's
// host gather and the step's upload memcpy).
//
// Threads: attach(), set_batch() and reserve() run on the caller's thread
// between steps; load_index() and gather() on replica `rank`'s own thread
// inside a step. Invariant: nothing is allocated inside a step (reserve()
// sizes the index buffers before the step is posted).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "data/array_source.h"
#include "dist/replica_set.h"

namespace mr {

class ResidentInput {
 public:
  explicit ResidentInput(ReplicaSet& replicas);
  ~ResidentInput();
  ResidentInput(const ResidentInput&) = delete;
  ResidentInput& operator=(const ResidentInput&) = delete;

  // Makes `data` resident on every replica when it is not already, within
  // `budget` bytes per device for all resident datasets together (on a GPU
  // the copies of the replicas sharing it together also at most half of its
  // free memory). Nothing resident is dropped before release(): false when
  // `data` does not fit beside them (or has rows beyond int32, or the device
  // allocation fails); nothing is then resident for `data` and the caller
  // streams from the host instead.
  bool attach(const std::shared_ptr<const ArrayData>& data, int64_t budget);
  // Drops every resident dataset (the end of fit() or evaluate(), so that a
  // model does not keep the arrays of a finished call); between steps.
  void release();
  // The batch of the next step: `rows` row numbers at `order` into the data
  // attached last (valid until the step finished).
  void set_batch(const ArrayData* data, const int64_t* order, int64_t rows);
  // Sizes the index buffers for slices of up to `slice_rows` rows.
  void reserve(int64_t slice_rows);

  // Replica `rank`'s thread: uploads the row numbers of its slice
  // [begin, begin + count) of the batch.
  void load_index(int rank, int64_t begin, int64_t count);
  // Replica `rank`'s thread: dst = the slice's rows of part `part`.
  void gather(int rank, size_t part, int64_t count, float* dst);

  // Bytes resident per device now, and steps gathered on the device so far
  // (summed over replicas).
  int64_t resident_bytes() const;
  int64_t gathered() const;

 private:
  struct Entry {
    std::shared_ptr<const ArrayData> data;
    int64_t bytes = 0;
    // Per replica, per part: the part's device copy (GPU) and where the
    // gather reads it (the copy, or the host array itself on the CPU).
    std::vector<std::vector<DeviceBuffer>> copies;
    std::vector<std::vector<const float*>> src;
  };
  struct Replica {
    std::vector<int32_t> host_index;  // the slice's row numbers, converted
    DeviceBuffer index;
    int64_t capacity = 0;  // int32s
    int64_t gathered = 0;  // written by the replica's thread only
  };
  // Free bytes on replica `r`'s device (-1: no limit known, the CPU).
  int64_t free_bytes(int r) const;

  ReplicaSet& replicas_;
  std::vector<Replica> reps_;
  std::vector<Entry> entries_;  // most recently attached last
  const Entry* batch_entry_ = nullptr;
  const int64_t* order_ = nullptr;
};

}  // namespace mr
