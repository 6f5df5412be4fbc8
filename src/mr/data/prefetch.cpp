#include "data/prefetch.h"

#include "core/error.h"

namespace mr {

PrefetchIterator::PrefetchIterator(std::unique_ptr<Iterator> input, int64_t capacity)
    : input_(std::move(input)), capacity_(static_cast<size_t>(capacity < 1 ? 1 : capacity)) {
  thread_ = std::thread([this] { run(); });
}

PrefetchIterator::~PrefetchIterator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  has_space_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PrefetchIterator::run() noexcept {
  try {
    for (;;) {
      Element e;
      if (!input_->next(e)) break;
      std::unique_lock<std::mutex> lock(mu_);
      has_space_.wait(lock, [&] { return stop_ || queue_.size() < capacity_; });
      if (stop_) return;
      queue_.push_back(std::move(e));
      lock.unlock();
      has_item_.notify_one();
      lock.lock();
      if (stop_) return;
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
  }
  has_item_.notify_all();
}

bool PrefetchIterator::next(Element& out) {
  std::unique_lock<std::mutex> lock(mu_);
  has_item_.wait(lock, [&] { return !queue_.empty() || finished_; });
  if (!queue_.empty()) {
    out = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    has_space_.notify_one();
    return true;
  }
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;  // reported once; later calls see the end
    std::rethrow_exception(e);
  }
  return false;
}

namespace {

class PrefetchDataset final : public Dataset {
 public:
  PrefetchDataset(DatasetPtr in, int64_t size) : input_(std::move(in)), size_(size) {
    MR_CHECK(input_ != nullptr, internal, "prefetch needs an input");
    MR_CHECK(size_ >= 0 || size_ == kAutotune, value,
             "`buffer_size` must be a non-negative integer or AUTOTUNE (-1), got ", size_);
  }
  DatasetPtr input() const override { return input_; }
  ElementSpec spec() const override { return input_->spec(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string label() const override {
    return size_ == kAutotune ? "prefetch(buffer_size = AUTOTUNE)"
                              : "prefetch(buffer_size = " + std::to_string(size_) + ")";
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<PrefetchDataset>(std::move(in), size_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    // R code cannot run on another thread: behind an R map, prefetch is a
    // pass-through (the map itself runs its C++ input ahead, see map.h).
    if (size_ == 0 || input_->needs_caller_thread()) return input_->iterate(key);
    return std::make_unique<PrefetchIterator>(input_->iterate(key),
                                              size_ == kAutotune ? kAutotuneBuffer : size_);
  }

 private:
  DatasetPtr input_;
  int64_t size_;
};

}  // namespace

DatasetPtr make_prefetch(DatasetPtr input, int64_t buffer_size) {
  return std::make_shared<PrefetchDataset>(std::move(input), buffer_size);
}

}  // namespace mr
