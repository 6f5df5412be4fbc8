// Shapes of tensors. Dimensions are int64_t; a per-sample shape leaves out the
// batch dimension (Keras' `shape = 784` is Shape{784}), a batch shape puts it first.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace mr {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_.at(static_cast<size_t>(i)); }
  const std::vector<int64_t>& dims() const { return dims_; }
  // Product of all dimensions; 1 for a scalar (rank 0).
  int64_t numel() const;
  // Last dimension, or 1 for a scalar: the "columns" of a row-major 2-D view.
  int64_t last() const { return dims_.empty() ? 1 : dims_.back(); }
  // The same shape with `batch` put in front.
  Shape with_batch(int64_t batch) const;
  // "(None, 784)" style text, with the batch dimension shown as None.
  std::string str_with_batch() const;
  // "(784)" style text.
  std::string str() const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace mr
