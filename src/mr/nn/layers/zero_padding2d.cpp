// ZeroPadding2D: each sample's spatial axes with zero borders (Keras' ZeroPadding2D); the class
// is spatial_window.h's, shared with the other padding and cropping layers.
#include "nn/layers/spatial_window.h"

namespace mr {

namespace {

class ZeroPadding2D final : public Layer {
 public:
  explicit ZeroPadding2D(ConfigReader& r) : impl_(r, "ZeroPadding2D", true, 1, true) {}
  const char* class_name() const override { return impl_.class_name(); }
  Shape output_shape(const std::vector<Shape>& in) const override { return impl_.output_shape(in); }
  void forward(const ForwardArgs& a) const override { impl_.forward(a); }
  void backward(const BackwardArgs& a) const override { impl_.backward(a); }
  Json config() const override { return impl_.config(); }

 private:
  SpatialWindow<2> impl_;
};

}  // namespace

MR_REGISTER_LAYER(ZeroPadding2D, ZeroPadding2D)

}  // namespace mr
