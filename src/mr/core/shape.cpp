#include "core/shape.h"

#include <sstream>

namespace mr {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

Shape Shape::with_batch(int64_t batch) const {
  std::vector<int64_t> d;
  d.reserve(dims_.size() + 1);
  d.push_back(batch);
  d.insert(d.end(), dims_.begin(), dims_.end());
  return Shape(std::move(d));
}

std::string Shape::str_with_batch() const {
  std::ostringstream os;
  os << "(None";
  for (int64_t d : dims_) {
    os << ", ";
    if (d < 0)
      os << "None";  // a variable-length axis
    else
      os << d;
  }
  os << ")";
  return os.str();
}

std::string Shape::str() const {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    os << (i ? ", " : "");
    if (dims_[i] < 0)
      os << "None";
    else
      os << dims_[i];
  }
  if (dims_.size() == 1) os << ",";
  os << ")";
  return os.str();
}

}  // namespace mr
