// Dot: the dot product of two inputs along an axis, per sample (Keras'
// batch_dot). mirrored supports inputs of shape (batch, n) (axes 1 or -1),
// whose output is (batch, 1); normalize = TRUE l2-normalizes each input along
// the axis first, as Keras does (so the output is the cosine similarity).
// Inputs of higher rank are a classed not-yet error.
//
// aux per row: the two normalized inputs (when normalize) and one product
// row; the output row r is sum_c a[r, c] b[r, c] (a strided_copy sum).
#include "nn/layers/layer_util.h"
#include "nn/layers/shape_util.h"

namespace mr {

namespace {

class Dot final : public Layer {
 public:
  explicit Dot(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    const Json* v = r.take("axes");
    if (v == nullptr || v->is_null()) r.bad("axes", "an integer or a list of 2 integers");
    if (v->is_number_integer()) {
      axes_ = {v->get<int64_t>(), v->get<int64_t>()};
    } else if (v->is_array() && v->size() == 2 && (*v)[0].is_number_integer() &&
               (*v)[1].is_number_integer()) {
      axes_ = {(*v)[0].get<int64_t>(), (*v)[1].get<int64_t>()};
    } else {
      r.bad("axes", "an integer or a list of 2 integers");
    }
    axes_json_ = *v;
    normalize_ = r.boolean("normalize", false);
  }
  const char* class_name() const override { return "Dot"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 2);
    for (const Shape& s : in)
      MR_CHECK(s.rank() == 1, value, who_,
               ": inputs of rank > 2 (batch axis included) are not supported yet, got ",
               in[0].str_with_batch(), " and ", in[1].str_with_batch());
    for (int64_t a : axes_)
      MR_CHECK(a == 1 || a == -1, shape, who_, ": axes ", axes_json_.dump(),
               " must name axis 1 (or -1) of inputs of rank 2, got inputs ", in[0].str_with_batch(),
               " and ", in[1].str_with_batch());
    MR_CHECK(in[0] == in[1], shape, who_, " needs inputs of one length along the axes, got ",
             in[0].str_with_batch(), " and ", in[1].str_with_batch());
    return Shape{1};
  }
  int64_t aux_per_row(const std::vector<Shape>& in) const override {
    return in[0][0] * (normalize_ ? 3 : 1);
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t rows = a.rows, n = a.in_shapes[0][0];
    if (rows == 0) return;
    const float* x = a.in[0];
    const float* y = a.in[1];
    float* prod = a.aux;
    if (normalize_) {
      float* xn = a.aux + rows * n;
      float* yn = xn + rows * n;
      a.be.l2_normalize_rows(rows, n, x, xn);
      a.be.l2_normalize_rows(rows, n, y, yn);
      x = xn;
      y = yn;
    }
    a.be.multiply(rows * n, x, y, prod);
    a.be.strided_copy(row_sum(rows, n), prod, a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t rows = a.rows, n = a.in_shapes[0][0];
    if (rows == 0) return;
    const float* x = normalize_ ? a.aux + rows * n : a.in[0];
    const float* y = normalize_ ? a.aux + 2 * rows * n : a.in[1];
    float* tmp = a.aux;  // the product row is not needed any more
    for (int k = 0; k < 2; ++k) {
      float* d = a.d_in[static_cast<size_t>(k)];
      if (d == nullptr) continue;
      // d(out[r]) / d(x[r, c]) = y[r, c]: broadcast dy over the row, times y.
      a.be.strided_copy(make_box(rows, {n}, {1, 0}, {n, 1}), a.d_out, tmp);
      a.be.multiply(rows * n, tmp, k == 0 ? y : x, tmp);
      if (normalize_)
        a.be.l2_normalize_rows_backward(rows, n, a.in[static_cast<size_t>(k)], tmp, d);
      else
        copy_floats(a.be, rows * n, tmp, d);
    }
  }
  Json config() const override {
    Json c = base_config(name_);
    c["axes"] = axes_json_;
    c["normalize"] = normalize_;
    return c;
  }

 private:
  // out[r] = sum_c src[r, c].
  static StridedCopy row_sum(int64_t rows, int64_t n) {
    StridedCopy c;
    c.rank = 1;
    c.dims[0] = rows;
    c.src_stride[0] = n;
    c.dst_stride[0] = 1;
    c.sum_rank = 1;
    c.sum_dims[0] = n;
    c.sum_stride[0] = 1;
    return c;
  }

  std::string name_, who_;
  std::vector<int64_t> axes_;
  Json axes_json_;
  bool normalize_ = false;
};

}  // namespace

MR_REGISTER_LAYER(Dot, Dot)

}  // namespace mr
