// Cropping2D: each sample's spatial axes with cropped borders (Keras' Cropping2D); the class
// is spatial_window.h's, shared with the other padding and cropping layers.
#include "nn/layers/spatial_window.h"

namespace mr {

MR_REGISTER_SHARED_LAYER(Cropping2D, SpatialWindow<2>, "Cropping2D", false, 0, true)

}  // namespace mr
