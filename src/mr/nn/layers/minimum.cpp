// Minimum: the element-wise minimum of two or more inputs of one shape; the
// gradient goes to the first minimal input (extremum_merge.h).
#include "nn/layers/extremum_merge.h"

namespace mr {

namespace {

class Minimum final : public Layer {
 public:
  explicit Minimum(ConfigReader& r) : impl_(r, "Minimum", false) {}
  const char* class_name() const override { return impl_.class_name(); }
  Shape output_shape(const std::vector<Shape>& in) const override { return impl_.output_shape(in); }
  int64_t aux_per_row(const std::vector<Shape>& in) const override { return impl_.aux_per_row(in); }
  void forward(const ForwardArgs& a) const override { impl_.forward(a); }
  void backward(const BackwardArgs& a) const override { impl_.backward(a); }
  Json config() const override { return impl_.config(); }

 private:
  ExtremumMerge impl_;
};

}  // namespace

MR_REGISTER_LAYER(Minimum, Minimum)

}  // namespace mr
