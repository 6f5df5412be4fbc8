// Conv1D: the 1-D convolution of Keras 3 (nn/layers/conv_layer.h).
#include "nn/layers/conv_layer.h"

namespace mr {

namespace {

class Conv1D final : public ConvLayer {
 public:
  explicit Conv1D(ConfigReader& r) : ConvLayer(r, 1) {}
  const char* class_name() const override { return "Conv1D"; }
};

}  // namespace

MR_REGISTER_LAYER(Conv1D, Conv1D)

}  // namespace mr
