// Maximum: the element-wise maximum of two or more inputs of one shape; the
// gradient goes to the first maximal input (extremum_merge.h).
#include "nn/layers/extremum_merge.h"

namespace mr {

MR_REGISTER_SHARED_LAYER(Maximum, ExtremumMerge, "Maximum", true)

}  // namespace mr
