// MaxPooling2D: Keras 3's MaxPooling2D, channels_last (nn/layers/pooling_layer.h).
#include "nn/layers/pooling_layer.h"

namespace mr {

namespace {

class MaxPooling2D final : public PoolingLayer {
 public:
  explicit MaxPooling2D(ConfigReader& r) : PoolingLayer(r, 2, PoolMode::max) {}
  const char* class_name() const override { return "MaxPooling2D"; }
};

}  // namespace

MR_REGISTER_LAYER(MaxPooling2D, MaxPooling2D)

}  // namespace mr
