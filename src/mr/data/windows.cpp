#include "data/windows.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <sstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "data/unary.h"

namespace mr {

namespace {

// ---- window ----------------------------------------------------------------

class WindowIterator final : public Iterator {
 public:
  WindowIterator(std::unique_ptr<Iterator> in, int64_t size, int64_t shift, int64_t stride,
                 bool drop)
      : in_(std::move(in)), size_(size), shift_(shift), stride_(stride), drop_(drop) {}

  bool next(Element& out) override {
    // The input positions of this window: start_ + j * stride_, j < size_.
    const int64_t last = start_ + (size_ - 1) * stride_;
    while (!ended_ && base_ + static_cast<int64_t>(buf_.size()) <= last) {
      Element e;
      if (!in_->next(e)) {
        ended_ = true;
        break;
      }
      if (base_ + static_cast<int64_t>(buf_.size()) < start_) {
        ++base_;  // between windows (shift > size * stride): never used
        continue;
      }
      buf_.push_back(std::move(e));
    }
    const int64_t end = base_ + static_cast<int64_t>(buf_.size());  // one past the last read
    if (start_ >= end) return false;
    int64_t len = 0;
    while (len < size_ && start_ + len * stride_ < end) ++len;
    if (drop_ && len < size_) return false;
    stack(out, len);
    start_ += shift_;
    while (!buf_.empty() && base_ < start_) {
      buf_.pop_front();
      ++base_;
    }
    return true;
  }

 private:
  void stack(Element& out, int64_t len) {
    const Element& first = at(start_);
    out.names = first.names;
    out.parts.resize(first.parts.size());
    for (size_t k = 0; k < first.parts.size(); ++k) {
      Component& c = out.parts[k];
      const Component& p0 = first.parts[k];
      c.rtype = p0.rtype;
      c.shape.assign(1, len);
      c.shape.insert(c.shape.end(), p0.shape.begin(), p0.shape.end());
      const size_t w = p0.values.size();
      c.values.resize(static_cast<size_t>(len) * w);
      for (int64_t j = 0; j < len; ++j) {
        const Element& e = at(start_ + j * stride_);
        MR_CHECK(e.parts.size() == first.parts.size() && e.parts[k].shape == p0.shape, shape,
                 "dataset_window(): the elements of a window must have equal shapes; component ",
                 k + 1, " is ", shape_string(e.parts.size() > k ? e.parts[k].shape : p0.shape),
                 " in element ", j + 1, " but ", shape_string(p0.shape), " in the first");
        if (w) std::memcpy(c.values.data() + j * w, e.parts[k].values.data(), w * sizeof(float));
      }
    }
  }
  const Element& at(int64_t pos) const { return buf_[static_cast<size_t>(pos - base_)]; }

  std::unique_ptr<Iterator> in_;
  int64_t size_, shift_, stride_;
  bool drop_;
  std::deque<Element> buf_;  // input elements base_, base_ + 1, ...
  int64_t base_ = 0, start_ = 0;
  bool ended_ = false;
};

class WindowDataset final : public UnaryDataset {
 public:
  WindowDataset(DatasetPtr in, int64_t size, int64_t shift, int64_t stride, bool drop)
      : UnaryDataset(std::move(in)), size_(size), shift_(shift), stride_(stride), drop_(drop) {
    MR_CHECK(size_ > 0 && shift_ > 0 && stride_ > 0, value,
             "dataset_window(): `size`, `shift` and `stride` must be positive, got ", size_, ", ",
             shift_, " and ", stride_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<WindowDataset>(std::move(in), size_, shift_, stride_, drop_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<WindowIterator>(input_->iterate(key), size_, shift_, stride_, drop_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    if (!drop_) return (n + shift_ - 1) / shift_;
    const int64_t span = (size_ - 1) * stride_ + 1;
    return n < span ? 0 : (n - span) / shift_ + 1;
  }
  ElementSpec spec() const override {
    ElementSpec s = input_->spec();
    for (ComponentSpec& c : s.parts) c.shape.insert(c.shape.begin(), drop_ ? size_ : -1);
    return s;
  }
  std::string label() const override {
    std::ostringstream os;
    os << "window(size = " << size_ << ", shift = " << shift_ << ", stride = " << stride_
       << ", drop_remainder = " << (drop_ ? "TRUE" : "FALSE") << ")";
    return os.str();
  }

 private:
  int64_t size_, shift_, stride_;
  bool drop_;
};

// ---- flat_map / interleave -----------------------------------------------------

class Mapped : public UnaryDataset {
 public:
  Mapped(DatasetPtr in, std::shared_ptr<DatasetFunction> fn)
      : UnaryDataset(std::move(in)), fn_(std::move(fn)) {
    MR_CHECK(fn_ != nullptr, internal, "a transform needs its function");
  }
  int64_t cardinality() const override { return input_->cardinality() == 0 ? 0 : kUnknown; }
  ElementSpec spec() const override { return ElementSpec{false, {}, nullptr}; }
  bool needs_caller_thread() const override {
    return fn_->needs_caller_thread() || input_->needs_caller_thread();
  }

 protected:
  std::shared_ptr<DatasetFunction> fn_;
};

class FlatMapIterator final : public Iterator {
 public:
  FlatMapIterator(std::unique_ptr<Iterator> in, std::shared_ptr<DatasetFunction> fn, uint64_t key)
      : in_(std::move(in)), fn_(std::move(fn)), key_(key) {}
  bool next(Element& out) override {
    for (;;) {
      if (inner_ && inner_->next(out)) return true;
      inner_.reset();
      if (!in_->next(e_)) return false;
      inner_ = fn_->apply(e_)->iterate(derive_key(key_, count_++));
    }
  }

 private:
  std::unique_ptr<Iterator> in_, inner_;
  std::shared_ptr<DatasetFunction> fn_;
  uint64_t key_, count_ = 0;
  Element e_;
};

class FlatMapDataset final : public Mapped {
 public:
  using Mapped::Mapped;
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<FlatMapDataset>(std::move(in), fn_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<FlatMapIterator>(input_->iterate(key), fn_, key);
  }
  std::string label() const override { return fn_->label(); }
};

// tf.data's deterministic interleave: slot `cycle_` gives up to `block`
// elements, then the next slot; an empty slot takes the dataset of the
// next input element; an exhausted one is emptied and the cycle moves on.
class InterleaveIterator final : public Iterator {
 public:
  InterleaveIterator(std::unique_ptr<Iterator> in, std::shared_ptr<DatasetFunction> fn,
                     uint64_t key, int64_t cycle, int64_t block)
      : in_(std::move(in)),
        fn_(std::move(fn)),
        key_(key),
        slots_(static_cast<size_t>(cycle)),
        block_(block) {}
  bool next(Element& out) override {
    while (!input_ended_ || open_ > 0) {
      std::unique_ptr<Iterator>& slot = slots_[cycle_];
      if (slot) {
        if (slot->next(out)) {
          if (++taken_ >= block_) advance();
          return true;
        }
        slot.reset();
        --open_;
        advance();
      } else if (!input_ended_) {
        if (in_->next(e_)) {
          slot = fn_->apply(e_)->iterate(derive_key(key_, count_++));
          ++open_;
        } else {
          input_ended_ = true;
        }
      } else {
        advance();
      }
    }
    return false;
  }

 private:
  void advance() {
    taken_ = 0;
    cycle_ = (cycle_ + 1) % slots_.size();
  }

  std::unique_ptr<Iterator> in_;
  std::shared_ptr<DatasetFunction> fn_;
  uint64_t key_, count_ = 0;
  std::vector<std::unique_ptr<Iterator>> slots_;
  int64_t block_, taken_ = 0, open_ = 0;
  size_t cycle_ = 0;
  bool input_ended_ = false;
  Element e_;
};

class InterleaveDataset final : public Mapped {
 public:
  InterleaveDataset(DatasetPtr in, std::shared_ptr<DatasetFunction> fn, int64_t cycle,
                    int64_t block)
      : Mapped(std::move(in), std::move(fn)), cycle_(cycle), block_(block) {
    MR_CHECK(cycle_ > 0 && block_ > 0, value,
             "dataset_interleave(): `cycle_length` and `block_length` must be positive, got ",
             cycle_, " and ", block_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<InterleaveDataset>(std::move(in), fn_, cycle_, block_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<InterleaveIterator>(input_->iterate(key), fn_, key, cycle_, block_);
  }
  std::string label() const override {
    return fn_->label() + " (interleave, cycle_length = " + std::to_string(cycle_) +
           ", block_length = " + std::to_string(block_) + ")";
  }

 private:
  int64_t cycle_, block_;
};

}  // namespace

DatasetPtr make_window(DatasetPtr input, int64_t size, int64_t shift, int64_t stride,
                       bool drop_remainder) {
  return std::make_shared<WindowDataset>(std::move(input), size, shift, stride, drop_remainder);
}

DatasetPtr make_flat_map(DatasetPtr input, std::shared_ptr<DatasetFunction> fn) {
  return std::make_shared<FlatMapDataset>(std::move(input), std::move(fn));
}

DatasetPtr make_interleave(DatasetPtr input, std::shared_ptr<DatasetFunction> fn,
                           int64_t cycle_length, int64_t block_length) {
  return std::make_shared<InterleaveDataset>(std::move(input), std::move(fn), cycle_length,
                                             block_length);
}

}  // namespace mr
