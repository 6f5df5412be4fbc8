// Minimum: the element-wise minimum of two or more inputs of one shape; the
// gradient goes to the first minimal input (extremum_merge.h).
#include "nn/layers/extremum_merge.h"

namespace mr {

MR_REGISTER_SHARED_LAYER(Minimum, ExtremumMerge, "Minimum", false)

}  // namespace mr
