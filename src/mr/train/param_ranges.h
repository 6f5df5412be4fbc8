// The parts of the flat parameter buffer that training updates. A frozen
// variable (Keras' trainable = FALSE on its layer) keeps its place in the
// buffer, so the layout, the saved files and every replica agree whatever is
// frozen; the post-backward pipeline (all-reduce, clipping, the optimizer)
// then walks only these ranges, so a frozen variable is never reduced nor
// updated and its optimizer slots stay as they were.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/graph.h"

namespace mr {

// [offset, offset + size) in floats, into the parameter buffer (and the
// gradient and slot buffers, which share its layout).
struct ParamRange {
  int64_t offset;
  int64_t size;
};

// The maximal contiguous runs of the parameter buffer that hold trainable
// variables, in increasing offset order. `trainable` has one flag per
// Graph::params() index (non-zero: trainable); empty means every variable is.
// Consecutive trainable variables form one run: the alignment padding between
// them is inside it (it stays zero in parameters, gradients and slots alike,
// so updating it is harmless and saves a call per variable). A run ends at
// the end of its last variable, never in trailing padding. No variable
// trainable gives no range.
std::vector<ParamRange> trainable_ranges(const Graph& g, const std::vector<char>& trainable);

// Floats covered by the ranges.
int64_t range_floats(const std::vector<ParamRange>& ranges);

}  // namespace mr
