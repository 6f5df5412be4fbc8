// GlobalMaxPooling2D: Keras 3's GlobalMaxPooling2D, channels_last (nn/layers/pooling_layer.h).
#include "nn/layers/pooling_layer.h"

namespace mr {

namespace {

class GlobalMaxPooling2D final : public GlobalPoolingLayer {
 public:
  explicit GlobalMaxPooling2D(ConfigReader& r) : GlobalPoolingLayer(r, 2, PoolMode::max) {}
  const char* class_name() const override { return "GlobalMaxPooling2D"; }
};

}  // namespace

MR_REGISTER_LAYER(GlobalMaxPooling2D, GlobalMaxPooling2D)

}  // namespace mr
