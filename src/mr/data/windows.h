// tf.data's datasets of datasets: window(), whose elements are windows of
// consecutive input elements, and flat_map() / interleave(), which map each
// element to a dataset and yield that dataset's elements (one after the
// other, or `cycle_length` of them in turn). A window is held as one
// element whose components are the window's elements stacked on a new
// first axis (the R layer hands each component to the user as a dataset of
// its rows, which is what tf.data's window gives).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset.h"

namespace mr {

// Windows of `size` elements starting every `shift` elements, taking every
// `stride`-th element; windows at the end are shorter unless
// drop_remainder. Elements of a window must have equal shapes.
DatasetPtr make_window(DatasetPtr input, int64_t size, int64_t shift, int64_t stride,
                       bool drop_remainder);

// The dataset an element maps to (dataset_flat_map()'s function).
class DatasetFunction {
 public:
  virtual ~DatasetFunction() = default;
  virtual DatasetPtr apply(const Element& e) = 0;
  virtual std::string label() const = 0;
  virtual bool needs_caller_thread() const { return false; }
};

// The elements of fn(e) for every input element e, in order.
DatasetPtr make_flat_map(DatasetPtr input, std::shared_ptr<DatasetFunction> fn);

// tf.data's interleave(): fn's datasets of `cycle_length` consecutive input
// elements are read in turn, `block_length` elements at a time; one that
// ends is replaced by the dataset of the next input element.
DatasetPtr make_interleave(DatasetPtr input, std::shared_ptr<DatasetFunction> fn,
                           int64_t cycle_length, int64_t block_length);

}  // namespace mr
