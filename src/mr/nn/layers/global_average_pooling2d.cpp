// GlobalAveragePooling2D: Keras 3's GlobalAveragePooling2D, channels_last
// (nn/layers/pooling_layer.h).
#include "nn/layers/pooling_layer.h"

namespace mr {

namespace {

class GlobalAveragePooling2D final : public GlobalPoolingLayer {
 public:
  explicit GlobalAveragePooling2D(ConfigReader& r) : GlobalPoolingLayer(r, 2, PoolMode::average) {}
  const char* class_name() const override { return "GlobalAveragePooling2D"; }
};

}  // namespace

MR_REGISTER_LAYER(GlobalAveragePooling2D, GlobalAveragePooling2D)

}  // namespace mr
