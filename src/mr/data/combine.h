// tf.data's transforms that reshape the stream of elements or combine
// datasets: unbatch, enumerate, filter, zip, concatenate and padded_batch.
// Like the transforms of transforms.h they hold no pass state: iterate()
// starts one pass over every input with the same key.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/dataset.h"

namespace mr {

// Each element's rows along its first axis as elements of their own (the
// inverse of batch). Every component must have that axis, of one size.
DatasetPtr make_unbatch(DatasetPtr input);

// Prepends a scalar component holding the element's position in the pass,
// counted from `start`.
DatasetPtr make_enumerate(DatasetPtr input, int64_t start);

// Whether an element is kept (dataset_filter()'s predicate).
class ElementPredicate {
 public:
  virtual ~ElementPredicate() = default;
  virtual bool keep(const Element& e) = 0;
  virtual std::string label() const = 0;
  virtual bool needs_caller_thread() const { return false; }
};

// The elements `predicate` keeps, in order.
DatasetPtr make_filter(DatasetPtr input, std::shared_ptr<ElementPredicate> predicate);

// Elements made of one element of each input, side by side (their
// components in order); a pass ends with the shortest input. Names are
// dropped (the R layer keeps the grouping).
DatasetPtr make_zip(std::vector<DatasetPtr> inputs);

// The elements of `first`, then those of `second`, which must have as many
// components (shapes may differ where they are unknown).
DatasetPtr make_concatenate(DatasetPtr first, DatasetPtr second);

// batch() of elements whose shapes may differ: each component is padded at
// the end of every axis to `padded_shapes[k]` (-1 in a dim: the batch's
// longest) with `padding_values[k]`. An empty `padded_shapes` pads every
// axis to the batch's longest; an element longer than a fixed padded dim is
// an error.
DatasetPtr make_padded_batch(DatasetPtr input, int64_t batch_size,
                             std::vector<std::vector<int64_t>> padded_shapes,
                             std::vector<float> padding_values, bool drop_remainder);

}  // namespace mr
