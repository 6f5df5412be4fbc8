// The dataset graph. A Dataset is an immutable definition (a source or a
// transform of another dataset); iterate() starts one pass over it and
// returns an Iterator that owns everything the pass needs, so an iterator may
// outlive the R objects of its definition and may run on a prefetch thread.
//
// Threads: next() of an iterator runs on one thread at a time. Nodes whose
// needs_caller_thread() is true (an R map somewhere in their inputs) must be
// iterated on the thread that owns R; prefetch honours that (prefetch.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "data/element.h"

namespace mr {

// Cardinalities as tf.data reports them.
constexpr int64_t kInfinite = -1;
constexpr int64_t kUnknown = -2;

class Iterator {
 public:
  virtual ~Iterator() = default;
  // The next element of the pass; false at its end (and on every later call).
  virtual bool next(Element& out) = 0;
};

class Dataset;
using DatasetPtr = std::shared_ptr<const Dataset>;

class Dataset {
 public:
  virtual ~Dataset() = default;
  // One pass. `key` identifies the pass: shuffles that reshuffle each
  // iteration derive their order from (seed, key).
  virtual std::unique_ptr<Iterator> iterate(uint64_t key) const = 0;
  // Elements in one pass, kInfinite or kUnknown.
  virtual int64_t cardinality() const = 0;
  virtual ElementSpec spec() const = 0;
  // This node alone, for print(): "batch(batch_size = 64, drop_remainder = FALSE)".
  virtual std::string label() const = 0;
  virtual DatasetPtr input() const { return nullptr; }
  virtual bool needs_caller_thread() const {
    return input() != nullptr && input()->needs_caller_thread();
  }
  // i16: whether a shard() of a multi-worker job's data is in the chain:
  // each worker then batches its own rows (train/loop.cpp).
  virtual bool sharded() const { return input() != nullptr && input()->sharded(); }
  // Bytes this node holds itself (a source's arrays, a filled memory cache).
  virtual int64_t memory_bytes() const { return 0; }
  // i16: this transform over another input, with the same arguments (a
  // multi-worker job rebuilds a chain over a worker's files, data/auto_shard.h).
  // Sources have no input and throw.
  virtual DatasetPtr with_input(DatasetPtr input) const;
  // i16: batch()'s arguments (false for other nodes).
  virtual bool batching(int64_t& /*batch_size*/, bool& /*drop_remainder*/) const { return false; }
  // i16: a file cache's path (empty for other nodes and memory caches).
  virtual std::string cache_file() const { return {}; }
  // Adds the definition of this node and its inputs (not its pass state).
  virtual void fingerprint(Hasher& h) const;

  // Keys of successive passes started by iterators and fit() epochs: a
  // fresh dataset with the same seeds replays the same orders.
  uint64_t next_iteration_key() const { return iterations_.fetch_add(1); }

 private:
  mutable std::atomic<uint64_t> iterations_{0};
};

// The key of repetition `rep` of pass `key` (repeat() starts one pass of its
// input per repetition).
uint64_t derive_key(uint64_t key, uint64_t rep);

// Adds up memory_bytes() along the chain of inputs.
int64_t total_memory_bytes(const Dataset& ds);

}  // namespace mr
