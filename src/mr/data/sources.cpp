#include "data/sources.h"

#include <cstring>
#include <sstream>

#include "core/error.h"

namespace mr {

void Column::copy_row(int64_t row, float* dst) const {
  const int64_t w = width();
  if (!u8.empty()) {
    const uint8_t* src = u8.data() + row * w;
    for (int64_t i = 0; i < w; ++i) dst[i] = static_cast<float>(src[i]);
  } else if (w > 0) {
    std::memcpy(dst, f32.data() + row * w, static_cast<size_t>(w) * sizeof(float));
  }
}

void SourceData::validate() const {
  MR_CHECK(rows >= 0, internal, "negative row count");
  for (size_t k = 0; k < cols.size(); ++k) {
    const Column& c = cols[k];
    const auto want = static_cast<size_t>(rows * c.width());
    MR_CHECK((c.u8.empty() ? c.f32.size() : c.u8.size()) == want && (c.u8.empty() || c.f32.empty()),
             internal, "source component ", k + 1, " holds the wrong number of values");
  }
}

uint64_t SourceData::content_hash() const {
  std::call_once(hashed_, [this] {
    Hasher h;
    h.u64(static_cast<uint64_t>(rows));
    for (const Column& c : cols) {
      h.u64(c.shape.size());
      for (int64_t d : c.shape) h.u64(static_cast<uint64_t>(d));
      h.u64(static_cast<uint64_t>(c.rtype));
      // Bytes and floats of equal values hash alike: the storage is an
      // implementation detail, the values define the dataset.
      if (!c.u8.empty()) {
        std::vector<float> row(static_cast<size_t>(c.width()));
        for (int64_t r = 0; r < rows; ++r) {
          c.copy_row(r, row.data());
          h.bytes(row.data(), row.size() * sizeof(float));
        }
      } else {
        h.bytes(c.f32.data(), c.f32.size() * sizeof(float));
      }
    }
    hash_ = h.value();
  });
  return hash_;
}

namespace {

class SliceIterator final : public Iterator {
 public:
  explicit SliceIterator(std::shared_ptr<const SourceData> data) : data_(std::move(data)) {}
  bool next(Element& out) override {
    if (row_ >= data_->rows) return false;
    out.parts.resize(data_->cols.size());
    out.names = data_->names;
    for (size_t k = 0; k < data_->cols.size(); ++k) {
      const Column& c = data_->cols[k];
      Component& p = out.parts[k];
      p.shape = c.shape;
      p.rtype = c.rtype;
      p.values.resize(static_cast<size_t>(c.width()));
      c.copy_row(row_, p.values.data());
    }
    ++row_;
    return true;
  }

 private:
  std::shared_ptr<const SourceData> data_;
  int64_t row_ = 0;
};

}  // namespace

TensorSlicesDataset::TensorSlicesDataset(std::shared_ptr<const SourceData> data, bool whole)
    : data_(std::move(data)), whole_(whole) {
  MR_CHECK(data_ != nullptr, internal, "no source data");
  data_->validate();
}

std::unique_ptr<Iterator> TensorSlicesDataset::iterate(uint64_t) const {
  return std::make_unique<SliceIterator>(data_);
}

ElementSpec TensorSlicesDataset::spec() const {
  ElementSpec s;
  for (const Column& c : data_->cols) s.parts.push_back({c.shape, c.rtype});
  s.names = data_->names;
  return s;
}

std::string TensorSlicesDataset::label() const {
  std::ostringstream os;
  os << (whole_ ? "tensors_dataset(" : "tensor_slices_dataset(") << data_->cols.size()
     << (data_->cols.size() == 1 ? " component" : " components");
  if (!whole_) os << ", " << data_->rows << " rows";
  os << ")";
  return os.str();
}

int64_t TensorSlicesDataset::memory_bytes() const {
  int64_t n = 0;
  for (const Column& c : data_->cols) n += c.bytes();
  return n;
}

void TensorSlicesDataset::fingerprint(Hasher& h) const {
  h.str(label());
  h.u64(data_->content_hash());
  if (data_->names)
    for (const std::string& s : *data_->names) h.str(s);
}

}  // namespace mr
