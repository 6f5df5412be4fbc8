// Reshape: gives each sample a new shape with the same number of values
// (target_shape; one entry may be -1, inferred). Row-major reshaping moves no
// data, so forward and backward are plain copies.
#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class Reshape final : public Layer {
 public:
  explicit Reshape(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    const Json* t = r.take("target_shape");
    if (t == nullptr || !t->is_array() || t->empty())
      r.bad("target_shape", "a non-empty list of integers (one of them may be -1)");
    int unknown = 0;
    for (const Json& d : *t) {
      if (!d.is_number_integer() || (d.get<int64_t>() < 1 && d.get<int64_t>() != -1))
        r.bad("target_shape", "a list of positive integers, one of them may be -1");
      unknown += d.get<int64_t>() == -1;
      target_.push_back(d.get<int64_t>());
    }
    if (unknown > 1) r.bad("target_shape", "a list with at most one -1");
  }
  const char* class_name() const override { return "Reshape"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    const int64_t n = in[0].numel();
    int64_t known = 1;
    for (int64_t d : target_) known *= d == -1 ? 1 : d;
    std::vector<int64_t> out = target_;
    for (int64_t& d : out)
      if (d == -1) {
        MR_CHECK(known > 0 && n % known == 0, shape, who_, ": cannot reshape inputs of shape ",
                 in[0].str_with_batch(), " to ", Shape(target_).str_with_batch());
        d = n / known;
        known *= d;
      }
    MR_CHECK(known == n, shape, who_, ": cannot reshape inputs of shape ", in[0].str_with_batch(),
             " (", n, " values per sample) to ", Shape(target_).str_with_batch(), " (", known,
             " values)");
    return Shape(out);
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
    c["target_shape"] = target_;
    return c;
  }

 private:
  std::string name_, who_;
  std::vector<int64_t> target_;
};

}  // namespace

MR_REGISTER_LAYER(Reshape, Reshape)

}  // namespace mr
