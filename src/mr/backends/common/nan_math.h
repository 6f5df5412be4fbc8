// NaN-propagating comparisons, shared by the CPU and CUDA kernels (MR_HD:
// core/hd.h). A plain `a > b ? a : b` (and std::max, fmaxf) drops a NaN
// operand; TensorFlow's maximum / minimum / reduce_max and Keras' Maximum and
// Minimum layers return NaN when an operand is NaN, so a NaN that reaches a
// max pooling window or a Maximum/Minimum merge must come out as NaN
// (mirrored never silently turns a NaN into a finite number).
#pragma once

#include "core/hd.h"

namespace mr {
namespace nanmath {

MR_HD bool is_nan(float x) { return x != x; }

// The running maximum after seeing x: NaN once any value seen was NaN (a NaN
// accumulator stays: x > NaN is false and x is then not NaN, or is NaN).
MR_HD float max_nan(float acc, float x) { return (x > acc || is_nan(x)) ? x : acc; }
MR_HD float min_nan(float acc, float x) { return (x < acc || is_nan(x)) ? x : acc; }

// Whether x is the value an extremum returned: equal, or both NaN (the
// gradient of a NaN maximum goes to the first NaN, as it would to the first
// element equal to a finite maximum).
MR_HD bool same_or_nan(float x, float y) { return x == y || (is_nan(x) && is_nan(y)); }

// Dropout's output: x * m where kept, exactly 0 where dropped (m == 0), as
// TensorFlow's dropout selects (a NaN input that is dropped gives 0, not
// NaN * 0 = NaN).
MR_HD float dropout_value(float x, float m) { return m != 0.0f ? x * m : 0.0f; }

}  // namespace nanmath
}  // namespace mr
