#include "train/resident_input.h"

#include <algorithm>
#include <limits>
#include <map>
#include <new>

#include "core/device_info.h"
#include "core/error.h"
#include "dist/batch_split.h"

namespace mr {

ResidentInput::ResidentInput(ReplicaSet& replicas)
    : replicas_(replicas), reps_(static_cast<size_t>(replicas.size())) {}

ResidentInput::~ResidentInput() = default;

int64_t ResidentInput::free_bytes(int r) const {
  const DeviceSpec& d = replicas_.devices().at(static_cast<size_t>(r));
  if (d.kind != DeviceKind::cuda) return -1;
  int64_t free = 0, total = 0;
  cuda_memory(d.cuda_ordinal(), &free, &total);
  // Blocks cached by the allocators of the replicas on this GPU (the
  // arrays of an earlier call released, say) are free to a new allocation,
  // though the driver counts them as used.
  for (int q = 0; q < replicas_.size(); ++q) {
    const DeviceSpec& e = replicas_.devices()[static_cast<size_t>(q)];
    if (e.kind == DeviceKind::cuda && e.cuda_ordinal() == d.cuda_ordinal())
      free += replicas_.backend(q).cached_free_bytes();
  }
  return free;
}

bool ResidentInput::attach(const std::shared_ptr<const ArrayData>& data, int64_t budget) {
  MR_CHECK(data != nullptr, internal, "no data");
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].data != data) continue;
    std::rotate(entries_.begin() + static_cast<std::ptrdiff_t>(i),
                entries_.begin() + static_cast<std::ptrdiff_t>(i) + 1, entries_.end());
    return true;
  }
  batch_entry_ = nullptr;
  // Row numbers travel as int32 (gather_rows).
  if (data->rows > std::numeric_limits<int32_t>::max()) return false;
  int64_t bytes = 0;
  for (const auto& p : data->parts) bytes += static_cast<int64_t>(p.size() * sizeof(float));
  // Every dataset attached during this fit() or evaluate() call stays until
  // release() (the end of the call): one that does not fit beside them is
  // streamed instead. Evicting the training data for the validation data
  // would re-upload both every epoch.
  int64_t used = 0;
  for (const Entry& e : entries_) used += e.bytes;
  if (used + bytes > budget) return false;
  const bool on_gpu = replicas_.backend(0).kind() == DeviceKind::cuda;
  if (on_gpu) {
    // Replicas sharing one physical GPU (logical_per_gpu > 1) each hold a
    // copy: their copies together must stay within half of what that GPU
    // has free now (the steps' own buffers and the caching allocator's
    // growth keep the rest). Free: what the driver reports plus the blocks
    // the replicas' caching allocators keep (free_bytes()).
    std::map<int, int> copies_on;
    for (const DeviceSpec& d : replicas_.devices())
      if (d.kind == DeviceKind::cuda) ++copies_on[d.cuda_ordinal()];
    for (int r = 0; r < replicas_.size(); ++r) {
      const int64_t free = free_bytes(r);
      const int k = copies_on[replicas_.devices()[static_cast<size_t>(r)].cuda_ordinal()];
      if (free >= 0 && bytes > free / 2 / k) return false;
    }
  }
  Entry e;
  e.data = data;
  e.bytes = bytes;
  try {
    for (int r = 0; r < replicas_.size(); ++r) {
      Backend& be = replicas_.backend(r);
      std::vector<DeviceBuffer> copies;
      std::vector<const float*> src;
      for (const auto& p : data->parts) {
        if (be.kind() == DeviceKind::cpu) {  // the host array is the device's memory
          src.push_back(p.data());
          continue;
        }
        DeviceBuffer b = be.allocate(p.size() * sizeof(float));
        be.upload(b.get(), p.data(), p.size() * sizeof(float));
        src.push_back(static_cast<const float*>(b.get()));
        copies.push_back(std::move(b));
      }
      e.copies.push_back(std::move(copies));
      e.src.push_back(std::move(src));
    }
  } catch (const Error& err) {
    // Out of device memory after all (another process, fragmentation): the
    // partial copies are freed with `e`, and the pass streams from the host.
    // An interrupt or a deadline still stops the call.
    if (err.kind() != ErrorKind::device) throw;
    return false;
  } catch (const std::bad_alloc&) {
    return false;
  }
  entries_.push_back(std::move(e));
  return true;
}

void ResidentInput::release() {
  batch_entry_ = nullptr;
  order_ = nullptr;
  entries_.clear();
}

void ResidentInput::set_batch(const ArrayData* data, const int64_t* order, int64_t rows) {
  batch_entry_ = nullptr;
  for (const Entry& e : entries_)
    if (e.data.get() == data) batch_entry_ = &e;
  MR_CHECK(batch_entry_ != nullptr, internal, "the batch's data are not resident");
  order_ = order;
  reserve(largest_slice(rows, replicas_.size()));
}

void ResidentInput::reserve(int64_t slice_rows) {
  for (int r = 0; r < replicas_.size(); ++r) {
    Replica& rep = reps_[static_cast<size_t>(r)];
    if (slice_rows <= rep.capacity) continue;
    rep.host_index.resize(static_cast<size_t>(slice_rows));
    rep.index = replicas_.backend(r).allocate(static_cast<size_t>(slice_rows) * sizeof(int32_t));
    rep.capacity = slice_rows;
  }
}

void ResidentInput::load_index(int rank, int64_t begin, int64_t count) {
  Replica& rep = reps_[static_cast<size_t>(rank)];
  MR_CHECK(count <= rep.capacity, internal, "a slice of ", count, " rows exceeds the ",
           rep.capacity, " reserved row numbers");
  for (int64_t i = 0; i < count; ++i)
    rep.host_index[static_cast<size_t>(i)] = static_cast<int32_t>(order_[begin + i]);
  // upload() has read the host buffer when it returns (pinned staging on a
  // GPU), so the next step may overwrite it.
  replicas_.backend(rank).upload(rep.index.get(), rep.host_index.data(),
                                 static_cast<size_t>(count) * sizeof(int32_t));
  ++rep.gathered;
}

void ResidentInput::gather(int rank, size_t part, int64_t count, float* dst) {
  const Entry& e = *batch_entry_;
  MR_CHECK(part < e.data->widths.size(), internal, "the resident data have no part ", part);
  replicas_.backend(rank).gather_rows(
      count, e.data->widths[part], e.src[static_cast<size_t>(rank)][part],
      static_cast<const int32_t*>(reps_[static_cast<size_t>(rank)].index.get()), dst);
}

int64_t ResidentInput::resident_bytes() const {
  int64_t n = 0;
  for (const Entry& e : entries_) n += e.bytes;
  return n;
}

int64_t ResidentInput::gathered() const {
  int64_t n = 0;
  for (const Replica& r : reps_) n += r.gathered;
  return n;
}

}  // namespace mr
