#include "train/device_input.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/wait.h"
#include "dist/batch_split.h"

namespace mr {

DeviceInput::DeviceInput(ReplicaSet& replicas)
    : replicas_(replicas), reps_(static_cast<size_t>(replicas.size())) {
  for (int r = 0; r < replicas.size(); ++r)
    for (Slot& s : reps_[static_cast<size_t>(r)].slots) {
      s.filled = replicas.backend(r).create_event();
      s.consumed = replicas.backend(r).create_event();
    }
}

DeviceInput::~DeviceInput() = default;

bool DeviceInput::fits(int slot, const HostBatch& batch) const {
  const int64_t rows = largest_slice(batch.rows, replicas_.size());
  for (const Replica& rep : reps_) {
    const Slot& s = rep.slots[static_cast<size_t>(slot)];
    if (s.capacity.size() < batch.parts.size()) return false;
    for (size_t p = 0; p < batch.parts.size(); ++p)
      if (rows * batch.parts[p].width > s.capacity[p]) return false;
  }
  return true;
}

void DeviceInput::reserve(int slot, const HostBatch& batch) {
  if (fits(slot, batch)) return;
  const int64_t rows = largest_slice(batch.rows, replicas_.size());
  for (int r = 0; r < replicas_.size(); ++r) {
    Slot& s = slot_of(r, slot);
    Backend& be = replicas_.backend(r);
    // The slot's old buffers may still be written by an upload on the copy
    // lane (a batch staged ahead of a pass that stopped early) or read by a
    // step's copy on the compute lane. The backend's allocator orders a
    // freed block's reuse after the compute lane's queued work, so the
    // compute lane first waits for the slot's last upload.
    be.wait_event(*s.filled, Lane::compute);
    const bool grows = [&] {
      if (s.parts.size() < batch.parts.size()) return true;
      for (size_t p = 0; p < batch.parts.size(); ++p)
        if (rows * std::max<int64_t>(1, batch.parts[p].width) > s.capacity[p]) return true;
      return false;
    }();
    if (s.parts.size() < batch.parts.size()) {
      while (s.parts.size() < batch.parts.size()) s.parts.emplace_back(nullptr, DeviceFree{});
      s.capacity.resize(batch.parts.size(), 0);
    }
    for (size_t p = 0; p < batch.parts.size(); ++p) {
      const int64_t need = rows * std::max<int64_t>(1, batch.parts[p].width);
      if (need <= s.capacity[p]) continue;
      s.parts[p] = be.allocate(static_cast<size_t>(need) * sizeof(float));
      s.capacity[p] = need;
    }
    // The allocator hands out blocks ordered for the COMPUTE lane only: a
    // new block may be zeroed by a memset queued there (CUDA's allocate) or
    // be a cached block that kernels of a step still queued there read. The
    // next stage() orders the copy lane after `consumed` only, so `consumed`
    // is recorded on the compute lane after all that: the first upload into
    // the new buffers then runs after the memset and after every earlier
    // user of the blocks (otherwise the memset could zero batch i + 2 after
    // its upload, or the upload overwrite a block a running step reads).
    // The slot holds no batch still to be taken (the precondition), so
    // `consumed` loses nothing it promised.
    if (grows) be.record_event(*s.consumed, Lane::compute);
  }
}

void DeviceInput::describe(int slot, const HostBatch& batch) {
  HostBatch& d = desc_[static_cast<size_t>(slot)];
  d.rows = batch.rows;
  d.parts = batch.parts;  // reuses the vector's capacity after the first batch
  for (HostComponent& c : d.parts) c.data = nullptr;
}

void DeviceInput::stage(int rank, int slot, const HostBatch& batch) {
  Slot& s = slot_of(rank, slot);
  Backend& be = replicas_.backend(rank);
  int64_t begin = 0, count = 0;
  replicas_.slice(batch.rows, rank, false, begin, count);
  MR_CHECK(s.parts.size() >= batch.parts.size(), internal, "input slot ", slot,
           " not reserved for ", batch.parts.size(), " parts");
  // The step that read this slot last has copied it out (or, at the first
  // use, the event is complete).
  be.wait_event(*s.consumed, Lane::copy);
  for (size_t p = 0; p < batch.parts.size(); ++p) {
    const HostComponent& c = batch.parts[p];
    MR_CHECK(count * c.width <= s.capacity[p], internal, "a slice of ", count,
             " rows exceeds input slot ", slot);
    be.upload_on(Lane::copy, s.parts[p].get(), c.data + begin * c.width,
                 static_cast<size_t>(count * c.width) * sizeof(float));
  }
  be.record_event(*s.filled, Lane::copy);
  ++reps_[static_cast<size_t>(rank)].staged;
}

void DeviceInput::begin_take(int rank, int slot) {
  replicas_.backend(rank).wait_event(*slot_of(rank, slot).filled, Lane::compute);
}

void DeviceInput::copy_part(int rank, int slot, size_t p, void* dst, size_t bytes) {
  Slot& s = slot_of(rank, slot);
  MR_CHECK(p < s.parts.size() && bytes <= static_cast<size_t>(s.capacity[p]) * sizeof(float),
           internal, "input slot ", slot, " has no part ", p, " of ", bytes, " bytes");
  replicas_.backend(rank).copy_on(Lane::compute, dst, s.parts[p].get(), bytes);
}

void DeviceInput::end_take(int rank, int slot) {
  replicas_.backend(rank).record_event(*slot_of(rank, slot).consumed, Lane::compute);
  ++reps_[static_cast<size_t>(rank)].taken;
}

int64_t DeviceInput::staged() const {
  int64_t n = 0;
  for (const Replica& r : reps_) n += r.staged;
  return n;
}

int64_t DeviceInput::taken() const {
  int64_t n = 0;
  for (const Replica& r : reps_) n += r.taken;
  return n;
}

DeviceInput::Order DeviceInput::probe_order(int rank, int slot) {
  Backend& be = replicas_.backend(rank);
  Replica& rep = reps_[static_cast<size_t>(rank)];
  if (rep.marker == nullptr) rep.marker = be.create_event();
  be.record_event(*rep.marker, Lane::compute);
  const Event& filled = *slot_of(rank, slot).filled;
  // Both events are read in one poll, so "upload first" means the upload
  // was seen complete while the step's compute was not. The wait is bound by
  // the backend's wait limits (the model's timeout and interrupts), and
  // poll_until backs off instead of spinning.
  bool up = false, done = false;
  poll_until(
      [&] {
        up = be.event_done(filled);
        done = be.event_done(*rep.marker);
        return done || up;
      },
      be.wait_limits(), "replica " + std::to_string(rank), "a device-input probe");
  if (up && !done) return Order::upload_first;
  if (up) return Order::undetermined;  // both finished between two polls
  be.wait_host(filled, "a staged input upload");
  return Order::compute_first;
}

}  // namespace mr
