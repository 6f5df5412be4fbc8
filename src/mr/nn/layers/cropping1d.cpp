// Cropping1D: each sample's spatial axes with cropped borders (Keras' Cropping1D); the class
// is spatial_window.h's, shared with the other padding and cropping layers.
#include "nn/layers/spatial_window.h"

namespace mr {

MR_REGISTER_SHARED_LAYER(Cropping1D, SpatialWindow<1>, "Cropping1D", false, 1, false)

}  // namespace mr
