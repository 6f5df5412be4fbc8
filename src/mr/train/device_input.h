// Input on the device (i14-devinput): per replica two device slots, each
// holding the replica's slice of one batch (every part: inputs, targets,
// sample weights), filled on the backend's copy lane while the compute lane
// runs an earlier step.
//
// The protocol of a slot, per replica (only the replica's own thread calls
// stage() and take(): backends are not thread-safe):
//   stage(): the copy lane waits for the slot's `consumed` event (the step
//     that read the slot's previous batch has copied it out), uploads the
//     slice host -> pinned staging -> slot on the copy lane
//     (Backend::upload_on), then records `filled` on the copy lane.
//   take():  the compute lane waits for `filled` (a device-side wait, the host
//     does not block), copies the slot's parts device-to-device into the
//     step's own input buffers on the compute lane, then records `consumed`.
// Events start complete (Backend::create_event), so the first stage() of a
// slot does not wait. On the CPU every lane is the caller's thread and both
// copies are memcpys, so the numbers are those of a direct upload.
//
// Why the step copies the slot into its own buffers instead of reading the
// slot: the executor's inputs, targets and weights stay at one address, so a
// captured CUDA graph (train/step_graphs.h) keeps reading fixed addresses and
// needs no second capture per slot parity; the copy is one device-to-device
// transfer per part (device bandwidth, microseconds for a batch), issued
// outside the captured region like the per-step uploads were. It also frees
// the slot as soon as the step's copies ran, so the next batch but one can
// be uploaded into it while the step computes (Step::stage_ahead issues
// that upload after the step's own work is queued).
//
// Host side: a slot also keeps the batch's descriptor (rows and the parts'
// widths, no data pointers), which the step reads after the host batch may
// have been invalidated (data/batch.h's validity rule).
//
// Invariant: buffers are sized by reserve() outside steps; stage() and take()
// never allocate.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "data/batch.h"
#include "dist/replica_set.h"

namespace mr {

class DeviceInput {
 public:
  static constexpr int kSlots = 2;

  explicit DeviceInput(ReplicaSet& replicas);
  ~DeviceInput();
  DeviceInput(const DeviceInput&) = delete;
  DeviceInput& operator=(const DeviceInput&) = delete;

  // Whether `slot` of every replica can hold its slice of `batch`.
  bool fits(int slot, const HostBatch& batch) const;
  // Grows `slot` of every replica to hold its slice of `batch` (outside
  // steps, on the caller's thread; the slot must not hold a batch still to
  // be taken, since growth drops its contents).
  void reserve(int slot, const HostBatch& batch);
  // Records `batch`'s descriptor as the slot's (caller's thread).
  void describe(int slot, const HostBatch& batch);
  // The descriptor of the batch last described in `slot`: rows and parts
  // with their widths and shapes; data pointers are null.
  const HostBatch& descriptor(int slot) const { return desc_[static_cast<size_t>(slot)]; }

  // Replica `rank`'s thread: queues the upload of its slice of `batch` into
  // `slot` on the copy lane (see the protocol above). `batch` must fit.
  void stage(int rank, int slot, const HostBatch& batch);
  // Replica `rank`'s thread: makes the compute lane wait for the slot's
  // upload; part `p` of the slice (count rows of `width` floats) is then
  // copied to `dst` by copy_part(), and end_take() releases the slot.
  void begin_take(int rank, int slot);
  void copy_part(int rank, int slot, size_t p, void* dst, size_t bytes);
  void end_take(int rank, int slot);

  // Slots staged and taken so far (for tests and input_pipeline()).
  int64_t staged() const;
  int64_t taken() const;

  // For tests (a timeline probe, between steps, on the caller's thread while
  // the replica is idle): records a marker after the work queued so far on
  // replica `rank`'s compute lane (the end of the last step) and polls it and
  // `slot`'s "filled" event until one completes, within the backend's wait
  // limits: which finished first.
  enum class Order { upload_first, compute_first, undetermined };
  Order probe_order(int rank, int slot);

 private:
  struct Slot {
    std::vector<DeviceBuffer> parts;
    std::vector<int64_t> capacity;  // floats per part
    std::unique_ptr<Event> filled, consumed;
  };
  struct Replica {
    std::array<Slot, kSlots> slots;
    int64_t staged = 0, taken = 0;  // written by the replica's thread only
    std::unique_ptr<Event> marker;  // probe_order()'s
  };
  Slot& slot_of(int rank, int slot) {
    return reps_[static_cast<size_t>(rank)].slots[static_cast<size_t>(slot)];
  }

  ReplicaSet& replicas_;
  std::vector<Replica> reps_;
  std::array<HostBatch, kSlots> desc_;
};

}  // namespace mr
