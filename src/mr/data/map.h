// dataset_map(): a function applied to every element. Built-in functions
// (cast, rescale, one-hot; builtin_transforms.h) are C++ and run on whatever
// thread iterates. An R function (the glue's RMapFunction) must run on R's
// thread: it says so with needs_caller_thread(), which makes every prefetch
// after it a pass-through; to keep the C++ stages before it busy, its
// iterator runs its input ahead on a thread of its own (a small prefetch).
#pragma once

#include <memory>
#include <string>

#include "data/dataset.h"

namespace mr {

class ElementFunction {
 public:
  virtual ~ElementFunction() = default;
  // Transforms `e` in place (its shapes, types and even its number of
  // components may change).
  virtual void apply(Element& e) = 0;
  // What the output looks like given the input's spec (unknown if unknowable).
  virtual ElementSpec spec(const ElementSpec& in) const = 0;
  // For print() and for the fingerprint of a file cache.
  virtual std::string label() const = 0;
  virtual void fingerprint(Hasher& h) const { h.str(label()); }
  virtual bool needs_caller_thread() const { return false; }
};

// Elements the map iterator of a caller-thread function buffers ahead.
constexpr int64_t kMapLookahead = 2;

DatasetPtr make_map(DatasetPtr input, std::shared_ptr<ElementFunction> fn);

}  // namespace mr
