// Concatenate: joins two or more inputs along `axis` (Keras' numbering: the
// batch axis is 0, negative counts from the end, default -1); the inputs'
// other axes must agree. Each input is a window of the output: forward
// copies it in, backward copies its gradient out.
#include <sstream>

#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class Concatenate final : public Layer {
 public:
  explicit Concatenate(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    const Json* v = r.take("axis");
    if (v != nullptr && !v->is_null()) {
      if (!v->is_number_integer()) r.bad("axis", "an integer");
      axis_ = v->get<int64_t>();
    }
    if (axis_ == 0) r.bad("axis", "an axis other than the batch axis 0");
  }
  const char* class_name() const override { return "Concatenate"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    MR_CHECK(in.size() >= 2, shape, who_, " needs at least 2 inputs, got ", in.size());
    const int rank = in[0].rank();
    const int ax = per_sample_axis(who_, "axis", axis_, rank);
    std::vector<int64_t> out = in[0].dims();
    for (size_t k = 1; k < in.size(); ++k) {
      bool ok = in[k].rank() == rank;
      for (int j = 0; ok && j < rank; ++j) ok = j == ax || in[k][j] == in[0][j];
      if (!ok) {
        std::ostringstream shapes;
        for (size_t i = 0; i < in.size(); ++i) shapes << (i ? ", " : "") << in[i].str_with_batch();
        fail(ErrorKind::shape, who_, " needs inputs that differ only along axis ", axis_, ", got ",
             shapes.str());
      }
      out[static_cast<size_t>(ax)] += in[k][ax];
    }
    return Shape(out);
  }
  void forward(const ForwardArgs& a) const override { move(a.rows, a.in_shapes, &a, nullptr); }
  void backward(const BackwardArgs& a) const override { move(a.rows, a.in_shapes, nullptr, &a); }
  Json config() const override {
    Json c = base_config(name_);
    c["axis"] = axis_;
    return c;
  }

 private:
  // Input k is the window at offset o_k along the axis of the output: with
  // outer = rows * (product of the axes before it), each is a block of
  // (outer, width_k) floats inside the output's (outer, width) rows.
  void move(int64_t rows, const std::vector<Shape>& in, const ForwardArgs* f,
            const BackwardArgs* b) const {
    const Shape o = output_shape(in);
    const int ax = per_sample_axis(who_, "axis", axis_, o.rank());
    int64_t outer = rows, inner = 1;
    for (int j = 0; j < ax; ++j) outer *= o[j];
    for (int j = ax + 1; j < o.rank(); ++j) inner *= o[j];
    const int64_t width = o[ax] * inner;
    Backend& be = f ? f->be : b->be;
    int64_t off = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t wk = in[k][ax] * inner;
      StridedCopy c;
      c.rank = 2;
      c.dims[0] = outer;
      c.dims[1] = wk;
      if (f) {
        c.src_stride[0] = wk;
        c.src_stride[1] = 1;
        c.dst_stride[0] = width;
        c.dst_stride[1] = 1;
        be.strided_copy(c, f->in[k], f->out + off);
      } else if (b->d_in[k] != nullptr) {
        c.src_stride[0] = width;
        c.src_stride[1] = 1;
        c.dst_stride[0] = wk;
        c.dst_stride[1] = 1;
        be.strided_copy(c, b->d_out + off, b->d_in[k]);
      }
      off += wk;
    }
  }

  std::string name_, who_;
  int64_t axis_ = -1;
};

}  // namespace

MR_REGISTER_LAYER(Concatenate, Concatenate)

}  // namespace mr
