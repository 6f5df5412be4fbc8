// RepeatVector: (batch, features) -> (batch, n, features), each sample's
// vector repeated n times (a stride-0 copy); backward sums the n gradients.
#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class RepeatVector final : public Layer {
 public:
  explicit RepeatVector(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    if (r.take("n") == nullptr) r.bad("n", "a positive integer");
    n_ = r.integer("n", 1, 1);
  }
  const char* class_name() const override { return "RepeatVector"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    MR_CHECK(in[0].rank() == 1, shape, who_, " needs inputs of rank 2 (batch, features), got ",
             in[0].str_with_batch());
    return Shape{n_, in[0][0]};
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t f = a.in_shapes[0][0];
    a.be.strided_copy(make_box(a.rows, {n_, f}, {f, 0, 1}, {n_ * f, f, 1}), a.in[0], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] == nullptr) return;
    const int64_t f = a.in_shapes[0][0];
    StridedCopy c = make_box(a.rows, {f}, {n_ * f, 1}, {f, 1});
    c.sum_rank = 1;
    c.sum_dims[0] = n_;
    c.sum_stride[0] = f;
    a.be.strided_copy(c, a.d_out, a.d_in[0]);
  }
  Json config() const override {
    Json c = base_config(name_);
    c["n"] = n_;
    return c;
  }

 private:
  std::string name_, who_;
  int64_t n_ = 1;
};

}  // namespace

MR_REGISTER_LAYER(RepeatVector, RepeatVector)

}  // namespace mr
