// ZeroPadding1D: each sample's spatial axes with zero borders (Keras' ZeroPadding1D); the class
// is spatial_window.h's, shared with the other padding and cropping layers.
#include "nn/layers/spatial_window.h"

namespace mr {

MR_REGISTER_SHARED_LAYER(ZeroPadding1D, SpatialWindow<1>, "ZeroPadding1D", true, 1, true)

}  // namespace mr
