// dataset_prefetch(): a background thread runs the input pipeline ahead of
// the consumer into a bounded buffer.
//
// Invariants: the thread only ever runs C++ stages (an input that needs the
// caller's thread — an R map — is iterated synchronously instead, in next(),
// so R is never entered from a thread); an exception on the thread is stored
// and rethrown by next() on the consumer's thread, after the elements produced
// before it; the destructor stops and joins the thread, so no thread outlives
// its iterator.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "data/dataset.h"

namespace mr {

// tf.data's AUTOTUNE (-1). mirrored does not tune: it buffers this many elements.
constexpr int64_t kAutotune = -1;
constexpr int64_t kAutotuneBuffer = 8;

class PrefetchIterator final : public Iterator {
 public:
  PrefetchIterator(std::unique_ptr<Iterator> input, int64_t capacity);
  ~PrefetchIterator() override;
  PrefetchIterator(const PrefetchIterator&) = delete;
  PrefetchIterator& operator=(const PrefetchIterator&) = delete;
  bool next(Element& out) override;

 private:
  void run() noexcept;

  std::unique_ptr<Iterator> input_;  // used by the thread only, destroyed after the join
  size_t capacity_;
  std::mutex mu_;
  std::condition_variable has_item_, has_space_;
  std::deque<Element> queue_;
  bool stop_ = false, finished_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last member: started once everything above exists
};

// buffer_size: elements to buffer, or kAutotune. 0 makes prefetch a no-op.
DatasetPtr make_prefetch(DatasetPtr input, int64_t buffer_size);

}  // namespace mr
