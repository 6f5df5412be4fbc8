// A small source shared by the dataset tests.
#pragma once

#include <cstdint>
#include <memory>

#include "data/sources.h"

namespace mr {

// n rows; component 0 holds (offset + i, offset + 100 + i) per row,
// component 1 holds offset + i (an integer label: the row id).
inline DatasetPtr range_source(int64_t n, float offset = 0) {
  auto data = std::make_shared<SourceData>();
  data->rows = n;
  Column x, y;
  x.shape = {2};
  y.shape = {};
  y.rtype = RType::integer;
  for (int64_t i = 0; i < n; ++i) {
    x.f32.push_back(offset + static_cast<float>(i));
    x.f32.push_back(offset + static_cast<float>(100 + i));
    y.f32.push_back(offset + static_cast<float>(i));
  }
  data->cols = {x, y};
  return std::make_shared<TensorSlicesDataset>(data);
}

}  // namespace mr
