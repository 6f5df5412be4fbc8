// Batches drawn from in-memory row-major arrays, optionally shuffled once per
// epoch with a permutation keyed by (seed, epoch): of all rows, or (Keras'
// shuffle = "batch") of the rows inside each batch, the batches themselves
// staying contiguous and in order.
#pragma once

#include <memory>
#include <vector>

#include "data/batch.h"

namespace mr {

struct ArrayData {
  int64_t rows = 0;
  std::vector<std::vector<float>> parts;  // row-major, rows x widths[k]
  std::vector<int64_t> widths;
};

class ArraySource final : public BatchSource {
 public:
  ArraySource(std::shared_ptr<const ArrayData> data, int64_t batch_size, bool shuffle,
              uint64_t seed, bool within_batches = false);
  void reset(int64_t epoch) override;
  bool next(HostBatch& batch) override;
  int64_t batches() const override;

  // ---- i14-devinput: datasets resident on the device (train/resident_input.h) ----
  const std::shared_ptr<const ArrayData>& data() const { return data_; }
  // The next batch of the pass as `rows` row numbers into data() at `order`
  // (valid until the next reset()), in next()'s order; false at the pass's
  // end. Advances the pass as next() does, without gathering the rows.
  bool next_rows(const int64_t*& order, int64_t& rows);

 private:
  std::shared_ptr<const ArrayData> data_;
  int64_t batch_size_;
  bool shuffle_;
  uint64_t seed_;
  bool within_batches_;
  std::vector<int64_t> order_;
  int64_t pos_ = 0;
  int flip_ = 0;
  std::vector<float> staging_[2];  // alternating, see HostBatch's validity rule
};

// A permutation of 0..n-1 (Fisher-Yates driven by Philox keyed by seed, epoch).
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace mr
