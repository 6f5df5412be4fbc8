// AveragePooling2D: Keras 3's AveragePooling2D, channels_last (nn/layers/pooling_layer.h).
#include "nn/layers/pooling_layer.h"

namespace mr {

namespace {

class AveragePooling2D final : public PoolingLayer {
 public:
  explicit AveragePooling2D(ConfigReader& r) : PoolingLayer(r, 2, PoolMode::average) {}
  const char* class_name() const override { return "AveragePooling2D"; }
};

}  // namespace

MR_REGISTER_LAYER(AveragePooling2D, AveragePooling2D)

}  // namespace mr
