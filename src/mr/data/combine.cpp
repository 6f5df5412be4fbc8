#include "data/combine.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "data/unary.h"

namespace mr {

namespace {

// ---- unbatch -------------------------------------------------------------

class UnbatchIterator final : public Iterator {
 public:
  explicit UnbatchIterator(std::unique_ptr<Iterator> in) : in_(std::move(in)) {}

  bool next(Element& out) override {
    while (row_ >= rows_) {
      if (!in_->next(cur_)) return false;
      rows_ = check_rows(cur_);
      row_ = 0;
    }
    out.names = cur_.names;
    out.parts.resize(cur_.parts.size());
    for (size_t k = 0; k < cur_.parts.size(); ++k) {
      const Component& p = cur_.parts[k];
      Component& c = out.parts[k];
      c.rtype = p.rtype;
      c.shape.assign(p.shape.begin() + 1, p.shape.end());
      const size_t w = static_cast<size_t>(numel(c.shape));
      c.values.assign(p.values.begin() + static_cast<std::ptrdiff_t>(row_ * w),
                      p.values.begin() + static_cast<std::ptrdiff_t>((row_ + 1) * w));
    }
    ++row_;
    return true;
  }

 private:
  static int64_t check_rows(const Element& e) {
    int64_t rows = -1;
    for (size_t k = 0; k < e.parts.size(); ++k) {
      const Component& p = e.parts[k];
      MR_CHECK(!p.shape.empty(), shape, "dataset_unbatch(): component ", k + 1,
               " is a scalar; every component needs a first axis to split");
      if (rows < 0) rows = p.shape[0];
      MR_CHECK(p.shape[0] == rows, shape, "dataset_unbatch(): component ", k + 1, " has ",
               p.shape[0], " rows but component 1 has ", rows,
               "; the components' first axes must be equal");
    }
    return std::max<int64_t>(rows, 0);
  }

  std::unique_ptr<Iterator> in_;
  Element cur_;
  int64_t rows_ = 0, row_ = 0;
};

using Unary = UnaryDataset;

class UnbatchDataset final : public Unary {
 public:
  explicit UnbatchDataset(DatasetPtr in) : Unary(std::move(in)) {
    const ElementSpec s = input_->spec();
    if (s.known)
      for (size_t k = 0; k < s.parts.size(); ++k)
        MR_CHECK(!s.parts[k].shape.empty(), shape, "dataset_unbatch(): component ", k + 1,
                 " is a scalar; every component needs a first axis to split");
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<UnbatchDataset>(std::move(in));
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<UnbatchIterator>(input_->iterate(key));
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n == kInfinite || n == 0) return n;
    const ElementSpec s = input_->spec();
    if (n < 0 || !s.known || s.parts.empty() || s.parts[0].shape.empty() || s.parts[0].shape[0] < 0)
      return kUnknown;
    return n * s.parts[0].shape[0];
  }
  ElementSpec spec() const override {
    ElementSpec s = input_->spec();
    for (ComponentSpec& c : s.parts)
      if (!c.shape.empty()) c.shape.erase(c.shape.begin());
    return s;
  }
  std::string label() const override { return "unbatch()"; }
};

// ---- enumerate -----------------------------------------------------------

class EnumerateIterator final : public Iterator {
 public:
  EnumerateIterator(std::unique_ptr<Iterator> in, int64_t start)
      : in_(std::move(in)), next_(start) {}
  bool next(Element& out) override {
    if (!in_->next(e_)) return false;
    out.names = nullptr;
    out.parts.resize(e_.parts.size() + 1);
    Component& i = out.parts[0];
    i.shape.clear();
    i.values.assign(1, static_cast<float>(next_++));
    i.rtype = RType::integer;
    for (size_t k = 0; k < e_.parts.size(); ++k) std::swap(out.parts[k + 1], e_.parts[k]);
    return true;
  }

 private:
  std::unique_ptr<Iterator> in_;
  Element e_;
  int64_t next_;
};

class EnumerateDataset final : public Unary {
 public:
  EnumerateDataset(DatasetPtr in, int64_t start) : Unary(std::move(in)), start_(start) {
    MR_CHECK(start_ >= -(int64_t{1} << 24) && start_ <= (int64_t{1} << 24), value,
             "dataset_enumerate(): `start` must be within +-2^24 (components are float32), got ",
             start_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<EnumerateDataset>(std::move(in), start_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<EnumerateIterator>(input_->iterate(key), start_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  ElementSpec spec() const override {
    ElementSpec s = input_->spec();
    s.names = nullptr;
    s.parts.insert(s.parts.begin(), ComponentSpec{{}, RType::integer});
    return s;
  }
  std::string label() const override { return "enumerate(start = " + std::to_string(start_) + ")"; }

 private:
  int64_t start_;
};

// ---- filter --------------------------------------------------------------

class FilterIterator final : public Iterator {
 public:
  FilterIterator(std::unique_ptr<Iterator> in, std::shared_ptr<ElementPredicate> p)
      : in_(std::move(in)), p_(std::move(p)) {}
  bool next(Element& out) override {
    while (in_->next(out))
      if (p_->keep(out)) return true;
    return false;
  }

 private:
  std::unique_ptr<Iterator> in_;
  std::shared_ptr<ElementPredicate> p_;
};

class FilterDataset final : public Unary {
 public:
  FilterDataset(DatasetPtr in, std::shared_ptr<ElementPredicate> p)
      : Unary(std::move(in)), p_(std::move(p)) {
    MR_CHECK(p_ != nullptr, internal, "dataset_filter() needs a predicate");
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<FilterDataset>(std::move(in), p_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<FilterIterator>(input_->iterate(key), p_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    return n == 0 || n == kInfinite ? n : kUnknown;
  }
  std::string label() const override { return p_->label(); }
  bool needs_caller_thread() const override {
    return p_->needs_caller_thread() || input_->needs_caller_thread();
  }

 private:
  std::shared_ptr<ElementPredicate> p_;
};

// ---- datasets of several inputs --------------------------------------------

class Several : public Dataset {
 public:
  explicit Several(std::vector<DatasetPtr> inputs) : inputs_(std::move(inputs)) {
    for (const DatasetPtr& d : inputs_)
      MR_CHECK(d != nullptr, internal, "a transform needs its input datasets");
  }
  bool needs_caller_thread() const override {
    return std::any_of(inputs_.begin(), inputs_.end(),
                       [](const DatasetPtr& d) { return d->needs_caller_thread(); });
  }
  bool sharded() const override {
    return std::any_of(inputs_.begin(), inputs_.end(),
                       [](const DatasetPtr& d) { return d->sharded(); });
  }
  void fingerprint(Hasher& h) const override {
    h.str(label());
    for (const DatasetPtr& d : inputs_) d->fingerprint(h);
  }

 protected:
  std::vector<DatasetPtr> inputs_;
};

class ZipIterator final : public Iterator {
 public:
  explicit ZipIterator(std::vector<std::unique_ptr<Iterator>> ins) : ins_(std::move(ins)) {}
  bool next(Element& out) override {
    if (done_) return false;
    out.names = nullptr;
    size_t n = 0;
    for (auto& in : ins_) {
      if (!in->next(e_)) {
        done_ = true;
        return false;
      }
      out.parts.resize(n + e_.parts.size());
      for (Component& c : e_.parts) std::swap(out.parts[n++], c);
    }
    out.parts.resize(n);
    return true;
  }

 private:
  std::vector<std::unique_ptr<Iterator>> ins_;
  Element e_;
  bool done_ = false;
};

class ZipDataset final : public Several {
 public:
  explicit ZipDataset(std::vector<DatasetPtr> inputs) : Several(std::move(inputs)) {
    MR_CHECK(!inputs_.empty(), value, "dataset_zip() needs at least one dataset");
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    std::vector<std::unique_ptr<Iterator>> ins;
    for (const DatasetPtr& d : inputs_) ins.push_back(d->iterate(key));
    return std::make_unique<ZipIterator>(std::move(ins));
  }
  int64_t cardinality() const override {
    // The shortest: a finite known count bounds it; otherwise unknown
    // unless every input is infinite.
    int64_t best = kInfinite;
    bool unknown = false;
    for (const DatasetPtr& d : inputs_) {
      const int64_t n = d->cardinality();
      if (n == kUnknown) unknown = true;
      if (n >= 0) best = best == kInfinite ? n : std::min(best, n);
    }
    if (best == 0) return 0;
    return unknown ? kUnknown : best;
  }
  ElementSpec spec() const override {
    ElementSpec s;
    for (const DatasetPtr& d : inputs_) {
      const ElementSpec one = d->spec();
      if (!one.known) return ElementSpec{false, {}, nullptr};
      s.parts.insert(s.parts.end(), one.parts.begin(), one.parts.end());
    }
    return s;
  }
  std::string label() const override {
    return "zip(" + std::to_string(inputs_.size()) + " datasets)";
  }
};

class ConcatenateIterator final : public Iterator {
 public:
  ConcatenateIterator(std::unique_ptr<Iterator> first, DatasetPtr second, uint64_t key)
      : in_(std::move(first)), second_(std::move(second)), key_(key) {}
  bool next(Element& out) override {
    while (in_) {
      if (in_->next(out)) {
        if (parts_ < 0) parts_ = static_cast<int64_t>(out.parts.size());
        MR_CHECK(static_cast<int64_t>(out.parts.size()) == parts_, shape,
                 "dataset_concatenate(): an element of the second dataset has ", out.parts.size(),
                 " components but those of the first have ", parts_);
        return true;
      }
      in_ = second_ ? second_->iterate(key_) : nullptr;
      second_ = nullptr;
    }
    return false;
  }

 private:
  std::unique_ptr<Iterator> in_;
  DatasetPtr second_;
  uint64_t key_;
  int64_t parts_ = -1;
};

class ConcatenateDataset final : public Several {
 public:
  ConcatenateDataset(DatasetPtr first, DatasetPtr second)
      : Several({std::move(first), std::move(second)}) {
    const ElementSpec a = inputs_[0]->spec(), b = inputs_[1]->spec();
    if (a.known && b.known) {
      MR_CHECK(a.parts.size() == b.parts.size(), shape,
               "dataset_concatenate(): the datasets' elements have ", a.parts.size(), " and ",
               b.parts.size(), " components; they must have as many");
      for (size_t k = 0; k < a.parts.size(); ++k)
        MR_CHECK(a.parts[k].shape.size() == b.parts[k].shape.size(), shape,
                 "dataset_concatenate(): component ", k + 1, " has shape ",
                 shape_string(a.parts[k].shape), " in the first dataset and ",
                 shape_string(b.parts[k].shape), " in the second; their ranks must agree");
    }
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<ConcatenateIterator>(inputs_[0]->iterate(key), inputs_[1], key);
  }
  int64_t cardinality() const override {
    const int64_t a = inputs_[0]->cardinality(), b = inputs_[1]->cardinality();
    if (a == kInfinite || b == kInfinite) return kInfinite;
    if (a == kUnknown || b == kUnknown) return kUnknown;
    return a + b;
  }
  ElementSpec spec() const override {
    ElementSpec a = inputs_[0]->spec();
    const ElementSpec b = inputs_[1]->spec();
    if (!a.known || !b.known) return ElementSpec{false, {}, nullptr};
    for (size_t k = 0; k < a.parts.size() && k < b.parts.size(); ++k)
      for (size_t d = 0; d < a.parts[k].shape.size() && d < b.parts[k].shape.size(); ++d)
        if (a.parts[k].shape[d] != b.parts[k].shape[d]) a.parts[k].shape[d] = -1;
    return a;
  }
  std::string label() const override { return "concatenate(2 datasets)"; }
};

// ---- padded_batch ----------------------------------------------------------

class PaddedBatchIterator final : public Iterator {
 public:
  using Shapes = std::shared_ptr<const std::vector<std::vector<int64_t>>>;
  using Values = std::shared_ptr<const std::vector<float>>;
  // The shapes and values are shared with the dataset (an iterator may
  // outlive the R objects of its definition).
  PaddedBatchIterator(std::unique_ptr<Iterator> in, int64_t size, bool drop, Shapes shapes,
                      Values values)
      : in_(std::move(in)),
        size_(size),
        drop_(drop),
        shapes_(std::move(shapes)),
        values_(std::move(values)) {}

  bool next(Element& out) override {
    if (done_) return false;
    rows_.resize(static_cast<size_t>(size_));
    int64_t n = 0;
    while (n < size_ && in_->next(rows_[static_cast<size_t>(n)])) ++n;
    if (n < size_) done_ = true;
    if (n == 0 || (drop_ && n < size_)) return false;
    const Element& first = rows_[0];
    out.names = first.names;
    out.parts.resize(first.parts.size());
    for (size_t k = 0; k < first.parts.size(); ++k) {
      const std::vector<int64_t> target = padded_shape(k, n);
      Component& c = out.parts[k];
      c.rtype = first.parts[k].rtype;
      c.shape.assign(1, n);
      c.shape.insert(c.shape.end(), target.begin(), target.end());
      const float pad = values_->empty() ? 0.0f : (*values_)[values_->size() == 1 ? 0 : k];
      c.values.assign(static_cast<size_t>(numel(c.shape)), pad);
      const int64_t w = numel(target);
      for (int64_t r = 0; r < n; ++r) {
        const Component& p = rows_[static_cast<size_t>(r)].parts[k];
        copy_padded(p, shape_as(p, target.size()), target, c.values.data() + r * w);
      }
    }
    return true;
  }

 private:
  // R has no scalars apart from vectors of length 1: in a batch whose
  // component k has rank 1 somewhere, a scalar there is a vector of one.
  static std::vector<int64_t> shape_as(const Component& p, size_t rank) {
    if (p.shape.empty() && rank == 1) return {1};
    return p.shape;
  }

  // Component k's padded per-element shape in this batch of n elements.
  std::vector<int64_t> padded_shape(size_t k, int64_t n) const {
    size_t rank = 0;
    for (int64_t r = 0; r < n; ++r) {
      const Element& e = rows_[static_cast<size_t>(r)];
      MR_CHECK(e.parts.size() == rows_[0].parts.size(), shape, "dataset_padded_batch(): element ",
               r + 1, " of a batch has ", e.parts.size(), " components, the first had ",
               rows_[0].parts.size());
      rank = std::max(rank, e.parts[k].shape.size());
    }
    std::vector<int64_t> longest(rank, 0);
    for (int64_t r = 0; r < n; ++r) {
      const std::vector<int64_t> s = shape_as(rows_[static_cast<size_t>(r)].parts[k], rank);
      MR_CHECK(s.size() == rank, shape, "dataset_padded_batch(): component ", k + 1, " has shape ",
               shape_string(s), " in element ", r + 1, " of a batch but rank ", rank,
               " in another; ranks must agree");
      for (size_t d = 0; d < rank; ++d) longest[d] = std::max(longest[d], s[d]);
    }
    if (shapes_->empty()) return longest;
    const std::vector<int64_t>& want = (*shapes_)[k];
    MR_CHECK(want.size() == longest.size(), shape, "dataset_padded_batch(): `padded_shapes[[",
             k + 1, "]]` has ", want.size(), " dims but component ", k + 1, " has rank ",
             longest.size());
    std::vector<int64_t> out(want.size());
    for (size_t d = 0; d < want.size(); ++d) {
      MR_CHECK(want[d] < 0 || longest[d] <= want[d], shape, "dataset_padded_batch(): component ",
               k + 1, " has ", longest[d], " entries on axis ", d + 1,
               " in this batch, more than its padded shape's ", want[d]);
      out[d] = want[d] < 0 ? longest[d] : want[d];
    }
    return out;
  }

  // p's values into a row of `target` shape (row-major), at the start of
  // every axis.
  static void copy_padded(const Component& p, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& target, float* dst) {
    const size_t rank = target.size();
    if (rank == 0) {
      if (!p.values.empty()) dst[0] = p.values[0];
      return;
    }
    if (numel(shape) == 0) return;
    // Row-major strides of the target; walk p's elements in row-major order,
    // one contiguous run of its last axis at a time.
    std::vector<int64_t> stride(rank, 1), idx(rank, 0);
    for (size_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * target[d];
    const int64_t run = shape[rank - 1];
    const int64_t runs = numel(shape) / std::max<int64_t>(run, 1);
    for (int64_t r = 0; r < runs; ++r) {
      int64_t off = 0;
      for (size_t d = 0; d + 1 < rank; ++d) off += idx[d] * stride[d];
      std::memcpy(dst + off, p.values.data() + r * run, static_cast<size_t>(run) * sizeof(float));
      for (size_t d = rank - 1; d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  }

  std::unique_ptr<Iterator> in_;
  int64_t size_;
  bool drop_;
  Shapes shapes_;
  Values values_;
  std::vector<Element> rows_;
  bool done_ = false;
};

class PaddedBatchDataset final : public Unary {
 public:
  PaddedBatchDataset(DatasetPtr in, int64_t size, std::vector<std::vector<int64_t>> shapes,
                     std::vector<float> values, bool drop)
      : Unary(std::move(in)),
        size_(size),
        drop_(drop),
        shapes_(std::make_shared<const std::vector<std::vector<int64_t>>>(std::move(shapes))),
        values_(std::make_shared<const std::vector<float>>(std::move(values))) {
    MR_CHECK(size_ > 0, value, "`batch_size` must be a positive integer, got ", size_);
    const ElementSpec s = input_->spec();
    if (s.known && !shapes_->empty())
      MR_CHECK(shapes_->size() == s.parts.size(), value,
               "dataset_padded_batch(): `padded_shapes` has ", shapes_->size(),
               " shapes for elements of ", s.parts.size(), " components");
    if (s.known && values_->size() > 1)
      MR_CHECK(values_->size() == s.parts.size(), value,
               "dataset_padded_batch(): `padding_values` has ", values_->size(),
               " values for elements of ", s.parts.size(), " components");
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<PaddedBatchDataset>(std::move(in), size_, *shapes_, *values_, drop_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<PaddedBatchIterator>(input_->iterate(key), size_, drop_, shapes_,
                                                 values_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return drop_ ? n / size_ : (n + size_ - 1) / size_;
  }
  ElementSpec spec() const override {
    ElementSpec s = input_->spec();
    for (size_t k = 0; k < s.parts.size(); ++k) {
      ComponentSpec& c = s.parts[k];
      for (size_t d = 0; d < c.shape.size(); ++d) {
        const int64_t want =
            shapes_->empty() || (*shapes_)[k].size() != c.shape.size() ? -1 : (*shapes_)[k][d];
        c.shape[d] = want;
      }
      c.shape.insert(c.shape.begin(), drop_ ? size_ : -1);
    }
    return s;
  }
  std::string label() const override {
    std::ostringstream os;
    os << "padded_batch(batch_size = " << size_
       << ", drop_remainder = " << (drop_ ? "TRUE" : "FALSE") << ")";
    return os.str();
  }
  void fingerprint(Hasher& h) const override {
    h.str(label());
    for (const auto& s : *shapes_)
      for (int64_t d : s) h.u64(static_cast<uint64_t>(d));
    for (float v : *values_) h.bytes(&v, sizeof v);
    input_->fingerprint(h);
  }

 private:
  int64_t size_;
  bool drop_;
  std::shared_ptr<const std::vector<std::vector<int64_t>>> shapes_;
  std::shared_ptr<const std::vector<float>> values_;
};

}  // namespace

DatasetPtr make_unbatch(DatasetPtr input) {
  return std::make_shared<UnbatchDataset>(std::move(input));
}

DatasetPtr make_enumerate(DatasetPtr input, int64_t start) {
  return std::make_shared<EnumerateDataset>(std::move(input), start);
}

DatasetPtr make_filter(DatasetPtr input, std::shared_ptr<ElementPredicate> predicate) {
  return std::make_shared<FilterDataset>(std::move(input), std::move(predicate));
}

DatasetPtr make_zip(std::vector<DatasetPtr> inputs) {
  return std::make_shared<ZipDataset>(std::move(inputs));
}

DatasetPtr make_concatenate(DatasetPtr first, DatasetPtr second) {
  return std::make_shared<ConcatenateDataset>(std::move(first), std::move(second));
}

DatasetPtr make_padded_batch(DatasetPtr input, int64_t batch_size,
                             std::vector<std::vector<int64_t>> padded_shapes,
                             std::vector<float> padding_values, bool drop_remainder) {
  return std::make_shared<PaddedBatchDataset>(std::move(input), batch_size,
                                              std::move(padded_shapes), std::move(padding_values),
                                              drop_remainder);
}

}  // namespace mr
