// UpSampling1D: nearest-neighbour upsampling of 1 spatial axis; the class is
// up_sampling.h's, shared with UpSampling2D.
#include "nn/layers/up_sampling.h"

namespace mr {

MR_REGISTER_SHARED_LAYER(UpSampling1D, UpSampling<1>, "UpSampling1D")

}  // namespace mr
