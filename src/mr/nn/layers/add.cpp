// Add: the element-wise sum of two or more inputs of one shape (Keras' merge
// layer; broadcasting between shapes is not supported). Each input's gradient
// is the output's gradient.
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class Add final : public Layer {
 public:
  explicit Add(ConfigReader& r) : name_(r.name()), who_(r.who()) {}
  const char* class_name() const override { return "Add"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    MR_CHECK(in.size() >= 2, shape, who_, " needs at least 2 inputs, got ", in.size());
    for (size_t k = 1; k < in.size(); ++k)
      MR_CHECK(in[k] == in[0], shape, who_, " needs inputs of one shape, got ",
               in[0].str_with_batch(), " and ", in[k].str_with_batch());
    return in[0];
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (n == 0) return;
    copy_floats(a.be, n, a.in[0], a.out);
    for (size_t k = 1; k < a.in.size(); ++k) a.be.axpy(n, 1.0f, a.in[k], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    for (float* d : a.d_in)
      if (d != nullptr) copy_floats(a.be, n, a.d_out, d);
  }
  Json config() const override { return base_config(name_); }

 private:
  std::string name_, who_;
};

}  // namespace

MR_REGISTER_LAYER(Add, Add)

}  // namespace mr
