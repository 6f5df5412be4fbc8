// UpSampling1D: nearest-neighbour upsampling of 1 spatial axis; the class is
// up_sampling.h's, shared with UpSampling2D.
#include "nn/layers/up_sampling.h"

namespace mr {

namespace {

class UpSampling1D final : public Layer {
 public:
  explicit UpSampling1D(ConfigReader& r) : impl_(r, "UpSampling1D") {}
  const char* class_name() const override { return impl_.class_name(); }
  Shape output_shape(const std::vector<Shape>& in) const override { return impl_.output_shape(in); }
  void forward(const ForwardArgs& a) const override { impl_.forward(a); }
  void backward(const BackwardArgs& a) const override { impl_.backward(a); }
  Json config() const override { return impl_.config(); }

 private:
  UpSampling<1> impl_;
};

}  // namespace

MR_REGISTER_LAYER(UpSampling1D, UpSampling1D)

}  // namespace mr
