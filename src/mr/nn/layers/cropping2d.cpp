// Cropping2D: each sample's spatial axes with cropped borders (Keras' Cropping2D); the class
// is spatial_window.h's, shared with the other padding and cropping layers.
#include "nn/layers/spatial_window.h"

namespace mr {

namespace {

class Cropping2D final : public Layer {
 public:
  explicit Cropping2D(ConfigReader& r) : impl_(r, "Cropping2D", false, 0, true) {}
  const char* class_name() const override { return impl_.class_name(); }
  Shape output_shape(const std::vector<Shape>& in) const override { return impl_.output_shape(in); }
  void forward(const ForwardArgs& a) const override { impl_.forward(a); }
  void backward(const BackwardArgs& a) const override { impl_.backward(a); }
  Json config() const override { return impl_.config(); }

 private:
  SpatialWindow<2> impl_;
};

}  // namespace

MR_REGISTER_LAYER(Cropping2D, Cropping2D)

}  // namespace mr
