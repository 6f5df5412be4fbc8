// The base of the transforms with one input dataset: it holds the input and
// passes its element spec through (a transform that changes it overrides
// spec()).
#pragma once

#include <utility>

#include "core/error.h"
#include "data/dataset.h"

namespace mr {

class UnaryDataset : public Dataset {
 public:
  explicit UnaryDataset(DatasetPtr input) : input_(std::move(input)) {
    MR_CHECK(input_ != nullptr, internal, "a transform needs an input dataset");
  }
  DatasetPtr input() const override { return input_; }
  ElementSpec spec() const override { return input_->spec(); }

 protected:
  DatasetPtr input_;
};

}  // namespace mr
