// Sources over in-memory arrays, converted once (by the glue) to row-major
// storage: tensor_slices yields one element per row of the leading
// dimension, tensors yields the arrays themselves as one element.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "data/dataset.h"

namespace mr {

// One component of a source: `rows` elements of `shape` each. Integer data
// that fits 0..255 (images) is kept as bytes, 4x smaller than float32, and
// widened when an element is produced.
struct Column {
  std::vector<int64_t> shape;  // per-element shape
  RType rtype = RType::dbl;
  std::vector<float> f32;  // rows x numel(shape), or empty when u8 is used
  std::vector<uint8_t> u8;
  int64_t width() const { return numel(shape); }
  int64_t bytes() const { return static_cast<int64_t>(f32.size() * sizeof(float) + u8.size()); }
  void copy_row(int64_t row, float* dst) const;
};

struct SourceData {
  int64_t rows = 0;
  std::vector<Column> cols;
  Names names;
  // Checks that each column holds rows x width values.
  void validate() const;
  // Hash of the shapes, types and values (computed once, on first use).
  uint64_t content_hash() const;

 private:
  mutable std::once_flag hashed_;
  mutable uint64_t hash_ = 0;
};

class TensorSlicesDataset final : public Dataset {
 public:
  // whole = true: the tensors_dataset() form (data->rows == 1 and the label says so).
  TensorSlicesDataset(std::shared_ptr<const SourceData> data, bool whole = false);
  std::unique_ptr<Iterator> iterate(uint64_t key) const override;
  int64_t cardinality() const override { return data_->rows; }
  ElementSpec spec() const override;
  std::string label() const override;
  int64_t memory_bytes() const override;
  void fingerprint(Hasher& h) const override;

 private:
  std::shared_ptr<const SourceData> data_;
  bool whole_;
};

}  // namespace mr
