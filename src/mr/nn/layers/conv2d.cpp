// Conv2D: the 2-D convolution of Keras 3 (nn/layers/conv_layer.h).
#include "nn/layers/conv_layer.h"

namespace mr {

namespace {

class Conv2D final : public ConvLayer {
 public:
  explicit Conv2D(ConfigReader& r) : ConvLayer(r, 2) {}
  const char* class_name() const override { return "Conv2D"; }
};

}  // namespace

MR_REGISTER_LAYER(Conv2D, Conv2D)

}  // namespace mr
