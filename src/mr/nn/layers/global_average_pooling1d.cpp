// GlobalAveragePooling1D: Keras 3's GlobalAveragePooling1D, channels_last
// (nn/layers/pooling_layer.h).
#include "nn/layers/pooling_layer.h"

namespace mr {

namespace {

class GlobalAveragePooling1D final : public GlobalPoolingLayer {
 public:
  explicit GlobalAveragePooling1D(ConfigReader& r) : GlobalPoolingLayer(r, 1, PoolMode::average) {}
  const char* class_name() const override { return "GlobalAveragePooling1D"; }
};

}  // namespace

MR_REGISTER_LAYER(GlobalAveragePooling1D, GlobalAveragePooling1D)

}  // namespace mr
