// A batched dataset as the training loop's BatchSource. Each element must be
// a batch: every component has the same leading dimension (the rows); the
// components are the HostBatch parts in order — (x, y) for fit()/evaluate(),
// x alone for predict(). Elements are copied into two alternating staging
// buffers from a HostAllocator (see batch.h), which keeps a batch valid while
// the next one is drawn and lets a device backend stage into pinned memory.
// While copying, every component used is checked for NaN and Inf (one pass
// over its floats, data/finite_check.h): a non-finite value is an error that
// names the argument, the component, the batch and the row.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  bool sharded() const override;
  // i16: a worker's own part of a multi-worker job's data: the job's steps
  // per pass (the most of any worker), which batches() then reports.
  void set_job_batches(int64_t n) { job_batches_ = n; }
  // Components per element seen in the last batch.
  size_t components() const { return components_; }
  // How errors name the data: `arg` is the user's argument ("x",
  // "validation_data"), roles[k] what component k is ("the features", "the
  // targets", "the sample weights"; components beyond `roles` are named by
  // position). Only the first `used` components are checked (predict() does
  // not use the targets); -1: all.
  void describe(std::string arg, std::vector<std::string> roles, int64_t used = -1);
  // What values component k may hold: kinds[k] is 0 for any finite float, 1
  // for whole numbers of magnitude <= 2^24 (an int32/int64 input), 2 for 0
  // and 1 (a bool input); components beyond `kinds` are floats.
  void set_value_kinds(std::vector<int> kinds) { kinds_ = std::move(kinds); }

 private:
  DatasetPtr dataset_;
  bool continue_;
  std::unique_ptr<Iterator> it_;
  bool ended_ = true;
  Element element_;
  StagingBuffer staging_[2];
  int flip_ = 0;
  size_t components_ = 0;
  int64_t batch_ = 0;  // batches drawn in the current pass
  std::string arg_ = "the dataset";
  std::vector<std::string> roles_;
  int64_t used_ = -1;
  std::vector<int> kinds_;
  void check_kind(size_t k, const float* p, size_t n, int64_t width) const;
  std::optional<int64_t> job_batches_;
};

}  // namespace mr
