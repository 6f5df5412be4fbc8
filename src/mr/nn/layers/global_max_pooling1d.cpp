// GlobalMaxPooling1D: Keras 3's GlobalMaxPooling1D, channels_last (nn/layers/pooling_layer.h).
#include "nn/layers/pooling_layer.h"

namespace mr {

namespace {

class GlobalMaxPooling1D final : public GlobalPoolingLayer {
 public:
  explicit GlobalMaxPooling1D(ConfigReader& r) : GlobalPoolingLayer(r, 1, PoolMode::max) {}
  const char* class_name() const override { return "GlobalMaxPooling1D"; }
};

}  // namespace

MR_REGISTER_LAYER(GlobalMaxPooling1D, GlobalMaxPooling1D)

}  // namespace mr
