#include "data/transforms.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <sstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "data/unary.h"

namespace mr {

namespace {

// Philox stream id of shuffle buffers ("SB").
constexpr uint32_t kShuffleStream = 0x5342u;

using Unary = UnaryDataset;

// ---- batch ---------------------------------------------------------------

class BatchIterator final : public Iterator {
 public:
  BatchIterator(std::unique_ptr<Iterator> in, int64_t size, bool drop)
      : in_(std::move(in)), size_(size), drop_(drop) {}

  bool next(Element& out) override {
    if (done_) return false;
    int64_t n = 0;
    Element e;
    while (n < size_ && in_->next(e)) {
      if (n == 0) start(out, e);
      append(out, e, n);
      ++n;
    }
    if (n < size_) done_ = true;
    if (n == 0 || (drop_ && n < size_)) return false;
    for (Component& c : out.parts) {
      c.shape[0] = n;
      c.values.resize(static_cast<size_t>(numel(c.shape)));
    }
    return true;
  }

 private:
  void start(Element& out, const Element& first) {
    out.names = first.names;
    out.parts.resize(first.parts.size());
    for (size_t k = 0; k < first.parts.size(); ++k) {
      Component& c = out.parts[k];
      c.rtype = first.parts[k].rtype;
      c.shape.assign(1, size_);
      c.shape.insert(c.shape.end(), first.parts[k].shape.begin(), first.parts[k].shape.end());
      c.values.resize(static_cast<size_t>(numel(c.shape)));
    }
  }
  static void append(Element& out, const Element& e, int64_t row) {
    MR_CHECK(e.parts.size() == out.parts.size(), shape, "dataset_batch(): element ", row + 1,
             " of a batch has ", e.parts.size(), " components, the first had ", out.parts.size());
    for (size_t k = 0; k < e.parts.size(); ++k) {
      Component& c = out.parts[k];
      const Component& p = e.parts[k];
      const bool same = p.shape.size() + 1 == c.shape.size() &&
                        std::equal(p.shape.begin(), p.shape.end(), c.shape.begin() + 1);
      if (!same) {
        std::vector<int64_t> first(c.shape.begin() + 1, c.shape.end());
        fail(ErrorKind::shape, "dataset_batch(): component ", k + 1, " has shape ",
             shape_string(p.shape), " in element ", row + 1, " of a batch but ",
             shape_string(first), " in the first; elements of a batch must have equal shapes");
      }
      const size_t w = p.values.size();
      if (w) std::memcpy(c.values.data() + row * w, p.values.data(), w * sizeof(float));
    }
  }

  std::unique_ptr<Iterator> in_;
  int64_t size_;
  bool drop_;
  bool done_ = false;
};

class BatchDataset final : public Unary {
 public:
  BatchDataset(DatasetPtr in, int64_t size, bool drop)
      : Unary(std::move(in)), size_(size), drop_(drop) {
    MR_CHECK(size_ > 0, value, "`batch_size` must be a positive integer, got ", size_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<BatchDataset>(std::move(in), size_, drop_);
  }
  bool batching(int64_t& size, bool& drop) const override {
    size = size_;
    drop = drop_;
    return true;
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<BatchIterator>(input_->iterate(key), size_, drop_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return drop_ ? n / size_ : (n + size_ - 1) / size_;
  }
  ElementSpec spec() const override {
    ElementSpec s = input_->spec();
    for (ComponentSpec& c : s.parts) c.shape.insert(c.shape.begin(), drop_ ? size_ : -1);
    return s;
  }
  std::string label() const override {
    std::ostringstream os;
    os << "batch(batch_size = " << size_ << ", drop_remainder = " << (drop_ ? "TRUE" : "FALSE")
       << ")";
    return os.str();
  }

 private:
  int64_t size_;
  bool drop_;
};

// ---- shuffle -------------------------------------------------------------

class ShuffleIterator final : public Iterator {
 public:
  ShuffleIterator(std::unique_ptr<Iterator> in, int64_t size, uint64_t seed, uint64_t key)
      : in_(std::move(in)), size_(size), rs_(seed, key, kShuffleStream) {}

  bool next(Element& out) override {
    if (!filled_) {
      // Grows with the input: a buffer larger than the data costs only the data.
      Element e;
      while (static_cast<int64_t>(buf_.size()) < size_ && in_->next(e))
        buf_.push_back(std::move(e));
      in_done_ = static_cast<int64_t>(buf_.size()) < size_;
      filled_ = true;
    }
    if (buf_.empty()) return false;
    const size_t n = buf_.size();
    auto j = static_cast<size_t>(rs_.uniform_double(draws_++) * static_cast<double>(n));
    if (j >= n) j = n - 1;
    out = std::move(buf_[j]);
    Element e;
    if (!in_done_ && in_->next(e)) {
      buf_[j] = std::move(e);
    } else {
      in_done_ = true;
      if (j != n - 1) buf_[j] = std::move(buf_.back());
      buf_.pop_back();
    }
    return true;
  }

 private:
  std::unique_ptr<Iterator> in_;
  int64_t size_;
  RandomStream rs_;
  uint64_t draws_ = 0;
  std::vector<Element> buf_;
  bool filled_ = false, in_done_ = false;
};

class ShuffleDataset final : public Unary {
 public:
  ShuffleDataset(DatasetPtr in, int64_t size, uint64_t seed, bool reshuffle)
      : Unary(std::move(in)), size_(size), seed_(seed), reshuffle_(reshuffle) {
    MR_CHECK(size_ > 0, value, "`buffer_size` must be a positive integer, got ", size_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<ShuffleDataset>(std::move(in), size_, seed_, reshuffle_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<ShuffleIterator>(input_->iterate(key), size_, seed_,
                                             reshuffle_ ? key : 0);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string label() const override {
    std::ostringstream os;
    os << "shuffle(buffer_size = " << size_ << ", seed = " << seed_
       << ", reshuffle_each_iteration = " << (reshuffle_ ? "TRUE" : "FALSE") << ")";
    return os.str();
  }

 private:
  int64_t size_;
  uint64_t seed_;
  bool reshuffle_;
};

// ---- repeat --------------------------------------------------------------

class RepeatIterator final : public Iterator {
 public:
  RepeatIterator(DatasetPtr in, int64_t count, uint64_t key)
      : in_(std::move(in)), count_(count), key_(key) {}

  bool next(Element& out) override {
    for (;;) {
      if (done_) return false;
      if (!cur_) {
        if (count_ >= 0 && rep_ >= count_) {
          done_ = true;
          return false;
        }
        cur_ = in_->iterate(derive_key(key_, static_cast<uint64_t>(rep_)));
        got_ = false;
      }
      if (cur_->next(out)) {
        got_ = true;
        return true;
      }
      cur_.reset();
      ++rep_;
      if (!got_) done_ = true;  // an empty pass: every later one is empty too
    }
  }

 private:
  DatasetPtr in_;
  int64_t count_;
  uint64_t key_;
  int64_t rep_ = 0;
  std::unique_ptr<Iterator> cur_;
  bool got_ = false, done_ = false;
};

class RepeatDataset final : public Unary {
 public:
  RepeatDataset(DatasetPtr in, int64_t count) : Unary(std::move(in)), count_(count) {
    MR_CHECK(count_ >= -1, value, "`count` must be -1 (forever) or >= 0, got ", count_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<RepeatDataset>(std::move(in), count_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<RepeatIterator>(input_, count_, key);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (count_ < 0) return kInfinite;
    if (n < 0) return n;
    return n * count_;
  }
  std::string label() const override {
    return count_ < 0 ? "repeat(count = NULL)" : "repeat(count = " + std::to_string(count_) + ")";
  }

 private:
  int64_t count_;
};

// ---- take / skip ---------------------------------------------------------

class TakeIterator final : public Iterator {
 public:
  TakeIterator(std::unique_ptr<Iterator> in, int64_t count) : in_(std::move(in)), left_(count) {}
  bool next(Element& out) override {
    if (left_ == 0) return false;
    if (!in_->next(out)) {
      left_ = 0;
      return false;
    }
    if (left_ > 0) --left_;
    return true;
  }

 private:
  std::unique_ptr<Iterator> in_;
  int64_t left_;  // -1: unlimited
};

class SkipIterator final : public Iterator {
 public:
  SkipIterator(std::unique_ptr<Iterator> in, int64_t count) : in_(std::move(in)), skip_(count) {}
  bool next(Element& out) override {
    if (done_) return false;
    while (skip_ != 0) {
      if (!in_->next(out)) {
        done_ = true;
        return false;
      }
      if (skip_ > 0) --skip_;
    }
    if (!in_->next(out)) {
      done_ = true;
      return false;
    }
    return true;
  }

 private:
  std::unique_ptr<Iterator> in_;
  int64_t skip_;  // -1: everything
  bool done_ = false;
};

class TakeDataset final : public Unary {
 public:
  TakeDataset(DatasetPtr in, int64_t count) : Unary(std::move(in)), count_(count) {
    MR_CHECK(count_ >= -1, value, "`count` must be -1 (all) or >= 0, got ", count_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<TakeDataset>(std::move(in), count_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<TakeIterator>(input_->iterate(key), count_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ < 0) return n;
    if (n == kInfinite) return count_;
    if (n == kUnknown) return count_ == 0 ? 0 : kUnknown;
    return std::min(n, count_);
  }
  std::string label() const override { return "take(count = " + std::to_string(count_) + ")"; }

 private:
  int64_t count_;
};

class SkipDataset final : public Unary {
 public:
  SkipDataset(DatasetPtr in, int64_t count) : Unary(std::move(in)), count_(count) {
    MR_CHECK(count_ >= -1, value, "`count` must be -1 (all) or >= 0, got ", count_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<SkipDataset>(std::move(in), count_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<SkipIterator>(input_->iterate(key), count_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n == kInfinite) return count_ < 0 ? 0 : kInfinite;
    if (n == kUnknown) return kUnknown;
    if (count_ < 0) return 0;
    return std::max<int64_t>(0, n - count_);
  }
  std::string label() const override { return "skip(count = " + std::to_string(count_) + ")"; }

 private:
  int64_t count_;
};

// ---- shard (i16) -------------------------------------------------------------

class ShardIterator final : public Iterator {
 public:
  ShardIterator(std::unique_ptr<Iterator> in, int64_t n, int64_t index)
      : in_(std::move(in)), n_(n), index_(index) {}
  bool next(Element& out) override {
    while (in_->next(out))
      if (pos_++ % n_ == index_) return true;
    return false;
  }

 private:
  std::unique_ptr<Iterator> in_;
  int64_t n_, index_, pos_ = 0;
};

class ShardDataset final : public Unary {
 public:
  ShardDataset(DatasetPtr in, int64_t n, int64_t index)
      : Unary(std::move(in)), n_(n), index_(index) {
    MR_CHECK(n_ >= 1, value, "`num_shards` must be >= 1, got ", n_);
    MR_CHECK(index_ >= 0 && index_ < n_, value, "`index` must be in [0, ", n_, "), got ", index_);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<ShardDataset>(std::move(in), n_, index_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    return std::make_unique<ShardIterator>(input_->iterate(key), n_, index_);
  }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    if (c < 0) return c;  // infinite or unknown
    return c / n_ + (index_ < c % n_ ? 1 : 0);
  }
  std::string label() const override {
    return "shard(num_shards = " + std::to_string(n_) + ", index = " + std::to_string(index_) + ")";
  }
  bool sharded() const override { return true; }

 private:
  int64_t n_, index_;
};

}  // namespace

DatasetPtr make_shard(DatasetPtr input, int64_t num_shards, int64_t index) {
  return std::make_shared<ShardDataset>(std::move(input), num_shards, index);
}

DatasetPtr make_batch(DatasetPtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder);
}
DatasetPtr make_shuffle(DatasetPtr input, int64_t buffer_size, uint64_t seed, bool reshuffle) {
  return std::make_shared<ShuffleDataset>(std::move(input), buffer_size, seed, reshuffle);
}
DatasetPtr make_repeat(DatasetPtr input, int64_t count) {
  return std::make_shared<RepeatDataset>(std::move(input), count);
}
DatasetPtr make_take(DatasetPtr input, int64_t count) {
  return std::make_shared<TakeDataset>(std::move(input), count);
}
DatasetPtr make_skip(DatasetPtr input, int64_t count) {
  return std::make_shared<SkipDataset>(std::move(input), count);
}

}  // namespace mr
