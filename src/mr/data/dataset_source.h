// A batched dataset as the training loop's BatchSource. Each element must be
// a batch: every component has the same leading dimension (the rows); the
// components are the HostBatch parts in order — (x, y) for fit()/evaluate(),
// x alone for predict(). Elements are copied into two alternating staging
// buffers from a HostAllocator (see batch.h), which keeps a batch valid while
// the next one is drawn and lets a device backend stage into pinned memory.
#pragma once

#include <memory>

#include "data/batch.h"
#include "data/dataset.h"

namespace mr {

class DatasetSource final : public BatchSource {
 public:
  // continue_passes: reset() keeps the current pass going until it ends (Keras
  // with steps_per_epoch); otherwise every reset() starts a new pass.
  DatasetSource(DatasetPtr dataset, bool continue_passes,
                std::shared_ptr<HostAllocator> alloc = std::make_shared<AlignedHostAllocator>());
  void reset(int64_t epoch) override;
  bool next(HostBatch& batch) override;
  int64_t batches() const override;
  // Components per element seen in the last batch.
  size_t components() const { return components_; }

 private:
  DatasetPtr dataset_;
  bool continue_;
  std::unique_ptr<Iterator> it_;
  bool ended_ = true;
  Element element_;
  StagingBuffer staging_[2];
  int flip_ = 0;
  size_t components_ = 0;
};

}  // namespace mr
