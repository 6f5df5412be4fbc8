// UpSampling2D: nearest-neighbour upsampling of 2 spatial axises; the class is
// up_sampling.h's, shared with UpSampling1D.
#include "nn/layers/up_sampling.h"

namespace mr {

MR_REGISTER_SHARED_LAYER(UpSampling2D, UpSampling<2>, "UpSampling2D")

}  // namespace mr
