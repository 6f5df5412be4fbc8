// Element functions that run in C++ (on any thread, prefetchable), for the
// preprocessing that would otherwise need an R map: casts, x * scale + offset
// (rescaling, normalisation) and one-hot encoding. `components` are 0-based
// indices into the element's tuple.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/map.h"

namespace mr {

// Values become what R's as.integer() (truncation) or as.logical() (!= 0) make
// of them; the component converts back to that R type.
std::shared_ptr<ElementFunction> make_cast(std::vector<int> components, RType to);

// x * scale + offset, as double. scale and offset hold one value, or one per
// position of the component's last dimension (broadcast over the others).
// `name` is the R function that asked ("rescale", "normalize") for print().
std::shared_ptr<ElementFunction> make_affine(std::vector<int> components, std::vector<float> scale,
                                             std::vector<float> offset, std::string name);

// Integer class indices 0..num_classes-1 to one-hot rows: a component of
// shape s becomes shape (s, num_classes), as double.
std::shared_ptr<ElementFunction> make_one_hot(std::vector<int> components, int64_t num_classes);

// Sleeps `seconds` per element: an input stage of known cost, for benchmarks
// and tests of prefetch.
std::shared_ptr<ElementFunction> make_delay(double seconds);

}  // namespace mr
