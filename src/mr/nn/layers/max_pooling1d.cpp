// MaxPooling1D: Keras 3's MaxPooling1D, channels_last (nn/layers/pooling_layer.h).
#include "nn/layers/pooling_layer.h"

namespace mr {

namespace {

class MaxPooling1D final : public PoolingLayer {
 public:
  explicit MaxPooling1D(ConfigReader& r) : PoolingLayer(r, 1, PoolMode::max) {}
  const char* class_name() const override { return "MaxPooling1D"; }
};

}  // namespace

MR_REGISTER_LAYER(MaxPooling1D, MaxPooling1D)

}  // namespace mr
