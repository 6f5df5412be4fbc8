// Batches as the training loop receives them: host memory, row-major float32,
// one component per model input followed by the targets. A source owns the
// memory; a batch stays valid until the source has produced two more.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace mr {

struct HostComponent {
  const float* data = nullptr;
  int64_t width = 0;  // floats per sample
  // The per-sample shape when the source knows it (datasets), so that a model
  // can reject samples of another shape but the same size; rank -1: unknown
  // (in-memory arrays, whose shapes R checks).
  static constexpr int kMaxRank = 8;
  int rank = -1;
  std::array<int64_t, kMaxRank> dims{};
};

struct HostBatch {
  int64_t rows = 0;
  std::vector<HostComponent> parts;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Starts a pass over the data (epoch numbers key the shuffle order).
  virtual void reset(int64_t epoch) = 0;
  // The next batch of the pass; false at its end.
  virtual bool next(HostBatch& batch) = 0;
  // Batches in one pass, or -1 when unknown.
  virtual int64_t batches() const = 0;
  // i16: the data is this worker's shard (Dataset::sharded()).
  virtual bool sharded() const { return false; }
};

// Where sources put the batches they hand out (their staging area). The CPU
// default is pageable memory aligned to 64 bytes; a device backend can supply
// page-locked (pinned) memory so that host-to-device copies of a staged batch
// can run asynchronously.
class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p, size_t bytes) noexcept = 0;
};

class AlignedHostAllocator final : public HostAllocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, size_t) noexcept override { std::free(p); }
};

// A growable float buffer from a HostAllocator (RAII; contents are not kept
// when it grows).
class StagingBuffer {
 public:
  explicit StagingBuffer(std::shared_ptr<HostAllocator> alloc) : alloc_(std::move(alloc)) {}
  ~StagingBuffer() { release(); }
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  float* reserve(size_t floats) {
    if (floats > capacity_) {
      release();
      data_ = static_cast<float*>(alloc_->allocate(floats * sizeof(float)));
      capacity_ = floats;
    }
    return data_;
  }
  size_t capacity() const { return capacity_; }

 private:
  void release() noexcept {
    if (data_ != nullptr) alloc_->deallocate(data_, capacity_ * sizeof(float));
    data_ = nullptr;
    capacity_ = 0;
  }
  std::shared_ptr<HostAllocator> alloc_;
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace mr
