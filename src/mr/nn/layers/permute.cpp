// Permute: reorders the per-sample axes; dims is a permutation of 1..rank
// (1-based, the batch axis not counted), output axis k = input axis dims[k].
// Forward gathers through the permuted strides; backward is the inverse
// permutation of the gradient.
#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class Permute final : public Layer {
 public:
  explicit Permute(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    const Json* d = r.take("dims");
    if (d == nullptr || !d->is_array() || d->empty()) r.bad("dims", "a permutation of 1..rank");
    std::vector<bool> seen(d->size(), false);
    for (const Json& x : *d) {
      if (!x.is_number_integer() || x.get<int64_t>() < 1 ||
          x.get<int64_t>() > static_cast<int64_t>(d->size()) ||
          seen[static_cast<size_t>(x.get<int64_t>() - 1)])
        r.bad("dims", "a permutation of 1.." + std::to_string(d->size()));
      seen[static_cast<size_t>(x.get<int64_t>() - 1)] = true;
      dims_.push_back(x.get<int64_t>());
    }
  }
  const char* class_name() const override { return "Permute"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    MR_CHECK(in[0].rank() == static_cast<int>(dims_.size()), shape, who_, ": dims ",
             Shape(dims_).str(), " need inputs of rank ", dims_.size() + 1,
             " (batch axis included), got ", in[0].str_with_batch());
    std::vector<int64_t> out;
    for (int64_t d : dims_) out.push_back(in[0][static_cast<int>(d - 1)]);
    return Shape(out);
  }
  void forward(const ForwardArgs& a) const override {
    const Shape& s = a.in_shapes[0];
    const Shape o = output_shape(a.in_shapes);
    const std::vector<int64_t> is = batched_strides(s), os = batched_strides(o);
    // Box over the output's axes: output axis k reads input axis dims[k].
    std::vector<int64_t> src{is[0]};
    for (int64_t d : dims_) src.push_back(is[static_cast<size_t>(d)]);
    a.be.strided_copy(make_box(a.rows, o.dims(), src, os), a.in[0], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] == nullptr) return;
    const Shape& s = a.in_shapes[0];
    const Shape o = output_shape(a.in_shapes);
    const std::vector<int64_t> is = batched_strides(s), os = batched_strides(o);
    // Box over the input's axes: input axis dims[k] - 1 is output axis k.
    std::vector<int64_t> src(is.size());
    src[0] = os[0];
    for (size_t k = 0; k < dims_.size(); ++k) src[static_cast<size_t>(dims_[k])] = os[k + 1];
    a.be.strided_copy(make_box(a.rows, s.dims(), src, is), a.d_out, a.d_in[0]);
  }
  Json config() const override {
    Json c = base_config(name_);
    c["dims"] = dims_;
    return c;
  }

 private:
  std::string name_, who_;
  std::vector<int64_t> dims_;
};

}  // namespace

MR_REGISTER_LAYER(Permute, Permute)

}  // namespace mr
