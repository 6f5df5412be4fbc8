#include "data/array_source.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace mr {

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const RandomStream rs(seed, static_cast<uint64_t>(epoch), 0x5348u);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rs.uniform_double(static_cast<uint64_t>(i)) *
                                        static_cast<double>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

ArraySource::ArraySource(std::shared_ptr<const ArrayData> data, int64_t batch_size, bool shuffle,
                         uint64_t seed, bool within_batches)
    : data_(std::move(data)),
      batch_size_(batch_size),
      shuffle_(shuffle),
      seed_(seed),
      within_batches_(within_batches) {
  MR_CHECK(data_ != nullptr, internal, "no data");
  MR_CHECK(batch_size_ > 0, value, "batch_size must be a positive integer, got ", batch_size_);
  for (size_t k = 0; k < data_->parts.size(); ++k)
    MR_CHECK(static_cast<int64_t>(data_->parts[k].size()) == data_->rows * data_->widths[k],
             internal, "array component ", k, " has the wrong length");
  reset(0);
}

void ArraySource::reset(int64_t epoch) {
  pos_ = 0;
  if (shuffle_ && !within_batches_) {
    order_ = shuffled_order(data_->rows, seed_, epoch);
    return;
  }
  order_.resize(static_cast<size_t>(data_->rows));
  std::iota(order_.begin(), order_.end(), 0);
  if (!shuffle_) return;
  // Each batch's rows permuted among themselves, by a permutation keyed by
  // (seed, epoch, batch).
  for (int64_t start = 0, b = 0; start < data_->rows; start += batch_size_, ++b) {
    const int64_t n = std::min(batch_size_, data_->rows - start);
    const std::vector<int64_t> perm = shuffled_order(n, seed_ + static_cast<uint64_t>(b), epoch);
    for (int64_t i = 0; i < n; ++i)
      order_[static_cast<size_t>(start + i)] = start + perm[static_cast<size_t>(i)];
  }
}

bool ArraySource::next(HostBatch& batch) {
  if (pos_ >= data_->rows) return false;
  const int64_t rows = std::min(batch_size_, data_->rows - pos_);
  int64_t total = 0;
  for (int64_t w : data_->widths) total += rows * w;
  std::vector<float>& buf = staging_[flip_];
  flip_ ^= 1;
  if (static_cast<int64_t>(buf.size()) < total) buf.resize(static_cast<size_t>(total));
  batch.rows = rows;
  batch.parts.clear();
  float* dst = buf.data();
  for (size_t k = 0; k < data_->parts.size(); ++k) {
    const int64_t w = data_->widths[k];
    const float* src = data_->parts[k].data();
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + r * w, src + order_[static_cast<size_t>(pos_ + r)] * w,
                  static_cast<size_t>(w) * sizeof(float));
    batch.parts.push_back({dst, w});
    dst += rows * w;
  }
  pos_ += rows;
  return true;
}

bool ArraySource::next_rows(const int64_t*& order, int64_t& rows) {
  if (pos_ >= data_->rows) return false;
  rows = std::min(batch_size_, data_->rows - pos_);
  order = order_.data() + pos_;
  pos_ += rows;
  return true;
}

int64_t ArraySource::batches() const { return (data_->rows + batch_size_ - 1) / batch_size_; }

}  // namespace mr
