// Flatten: row-major flattening does not move data (each sample's values
// already lie contiguously), so forward and backward are plain copies.
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class Flatten final : public Layer {
 public:
  explicit Flatten(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    r.must_equal("data_format", "channels_last");
  }
  const char* class_name() const override { return "Flatten"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    return Shape{in[0].numel()};
  }
  void forward(const ForwardArgs& a) const override {
    copy_floats(a.be, a.rows * a.in_shapes[0].numel(), a.in[0], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] != nullptr)
      copy_floats(a.be, a.rows * a.in_shapes[0].numel(), a.d_out, a.d_in[0]);
  }
  Json config() const override {
    Json c = base_config(name_);
    c["data_format"] = "channels_last";
    return c;
  }

 private:
  std::string name_, who_;
};

}  // namespace

MR_REGISTER_LAYER(Flatten, Flatten)

}  // namespace mr
