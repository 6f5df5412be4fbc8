// AveragePooling1D: Keras 3's AveragePooling1D, channels_last (nn/layers/pooling_layer.h).
#include "nn/layers/pooling_layer.h"

namespace mr {

namespace {

class AveragePooling1D final : public PoolingLayer {
 public:
  explicit AveragePooling1D(ConfigReader& r) : PoolingLayer(r, 1, PoolMode::average) {}
  const char* class_name() const override { return "AveragePooling1D"; }
};

}  // namespace

MR_REGISTER_LAYER(AveragePooling1D, AveragePooling1D)

}  // namespace mr
