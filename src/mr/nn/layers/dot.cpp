// Dot: the per-sample dot product of two inputs along one axis of each
// (Keras' batch_dot), for inputs of equal rank 2 or 3 (batch axis included):
// - (batch, n) . (batch, n), axes 1 or -1: output (batch, 1), row r being
//   sum_c x[r, c] y[r, c] (a product, then a strided_copy sum);
// - (batch, p, q) . (batch, s, t): each sample a matrix product, output
//   (batch, x's free axis, y's free axis), one gemm per sample with the
//   transposes the axes ask for.
// normalize = TRUE l2-normalizes each input along its axis first, as Keras
// does; for rank 3 mirrored supports it along the last axes only. Other
// ranks, mixed ranks and those normalize cases are classed not-yet errors.
//
// aux per row: the normalized inputs (normalize) and one scratch block (the
// product row for rank 2, a normalized input's gradient for rank 3).
#include <algorithm>

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
    const Geo g = geometry(in);
    return g.rank == 1 ? Shape{1} : Shape{g.f0, g.f1};
  }
  int64_t aux_per_row(const std::vector<Shape>& in) const override {
    const int64_t nx = in[0].numel(), ny = in[1].numel();
    if (geometry(in).rank == 1) return nx * (normalize_ ? 3 : 1);
    return normalize_ ? nx + ny + std::max(nx, ny) : 0;
  }
  void forward(const ForwardArgs& a) const override {
    const Geo g = geometry(a.in_shapes);
    const int64_t rows = a.rows;
    if (rows == 0) return;
    const float* x = a.in[0];
    const float* y = a.in[1];
    if (normalize_) {
      float* xn = normalized(a.aux, g, rows, 0);
      float* yn = normalized(a.aux, g, rows, 1);
      a.be.l2_normalize_rows(rows * g.nx / g.k, g.k, x, xn);
      a.be.l2_normalize_rows(rows * g.ny / g.k, g.k, y, yn);
      x = xn;
      y = yn;
    }
    if (g.rank == 1) {
      a.be.multiply(rows * g.k, x, y, a.aux);
      StridedCopy c;
      c.rank = 1;
      c.dims[0] = rows;
      c.src_stride[0] = g.k;
      c.dst_stride[0] = 1;
      c.sum_rank = 1;
      c.sum_dims[0] = g.k;
      c.sum_stride[0] = 1;
      a.be.strided_copy(c, a.aux, a.out);
      return;
    }
    for (int64_t r = 0; r < rows; ++r)
      a.be.gemm(g.ta, g.tb, g.f0, g.f1, g.k, 1.0f, x + r * g.nx, g.ldx, y + r * g.ny, g.ldy, 0.0f,
                a.out + r * g.f0 * g.f1, g.f1);
  }
  void backward(const BackwardArgs& a) const override {
    const Geo g = geometry(a.in_shapes);
    const int64_t rows = a.rows;
    if (rows == 0) return;
    const float* x = normalize_ ? normalized(a.aux, g, rows, 0) : a.in[0];
    const float* y = normalize_ ? normalized(a.aux, g, rows, 1) : a.in[1];
    for (int k = 0; k < 2; ++k) {
      float* d = a.d_in[static_cast<size_t>(k)];
      if (d == nullptr) continue;
      const int64_t n = k == 0 ? g.nx : g.ny;
      // The gradient of the (normalized) input, into scratch when normalize
      // still has to carry it back through the l2 normalisation.
      float* dn = normalize_ ? scratch(a.aux, g, rows) : d;
      if (g.rank == 1) {
        // d(out[r]) / d(x[r, c]) = y[r, c]: broadcast dy over the row, times y.
        float* t = normalize_ ? dn : a.aux;
        a.be.strided_copy(make_box(rows, {g.k}, {1, 0}, {g.k, 1}), a.d_out, t);
        a.be.multiply(rows * g.k, t, k == 0 ? y : x, dn);
      } else {
        for (int64_t r = 0; r < rows; ++r) {
          const float* dout = a.d_out + r * g.f0 * g.f1;
          const float* xr = x + r * g.nx;
          const float* yr = y + r * g.ny;
          float* dr = dn + r * n;
          // out = op(X) op(Y): d op(X) = dout op(Y)^T, d op(Y) = op(X)^T dout.
          if (k == 0 && !g.ta)
            a.be.gemm(false, !g.tb, g.f0, g.k, g.f1, 1.0f, dout, g.f1, yr, g.ldy, 0.0f, dr, g.k);
          else if (k == 0)
            a.be.gemm(g.tb, true, g.k, g.f0, g.f1, 1.0f, yr, g.ldy, dout, g.f1, 0.0f, dr, g.f0);
          else if (!g.tb)
            a.be.gemm(!g.ta, false, g.k, g.f1, g.f0, 1.0f, xr, g.ldx, dout, g.f1, 0.0f, dr, g.f1);
          else
            a.be.gemm(true, g.ta, g.f1, g.k, g.f0, 1.0f, dout, g.f1, xr, g.ldx, 0.0f, dr, g.k);
        }
      }
      if (normalize_)
        a.be.l2_normalize_rows_backward(rows * n / g.k, g.k, a.in[static_cast<size_t>(k)], dn, d);
    }
  }
  Json config() const override {
    Json c = base_config(name_);
    c["axes"] = axes_json_;
    c["normalize"] = normalize_;
    return c;
  }

 private:
  // Sizes of one sample: rank 1 or 2 (per sample); nx, ny values; k the
  // contracted length; rank 2: out = op(X) op(Y) of f0 x f1, X stored with
  // leading dimension ldx, op(X) = X^T when ta (likewise Y, tb).
  struct Geo {
    int rank = 1;
    int64_t nx = 0, ny = 0, k = 0, f0 = 1, f1 = 1, ldx = 0, ldy = 0;
    bool ta = false, tb = false;
  };
  Geo geometry(const std::vector<Shape>& in) const {
    expect_inputs(who_, in, 2);
    const int rank = in[0].rank();
    MR_CHECK(rank == in[1].rank() && (rank == 1 || rank == 2), value, who_,
             ": inputs of equal rank 2 or 3 (batch axis included) are supported, got ",
             in[0].str_with_batch(), " and ", in[1].str_with_batch(), " (others: not yet)");
    int64_t ax[2];
    for (int i = 0; i < 2; ++i) {
      // Keras: a negative axis is taken modulo the rank (batch axis included).
      const int64_t v = axes_[static_cast<size_t>(i)];
      ax[i] = v < 0 ? v + rank + 1 : v;
      MR_CHECK(ax[i] >= 1 && ax[i] <= rank, shape, who_, ": axes ", axes_json_.dump(),
               " are out of range for inputs ", in[0].str_with_batch(), " and ",
               in[1].str_with_batch());
    }
    const int64_t kx = in[0][static_cast<int>(ax[0] - 1)], ky = in[1][static_cast<int>(ax[1] - 1)];
    MR_CHECK(kx == ky, shape, who_, ": axes ", axes_json_.dump(), " join lengths ", kx, " and ", ky,
             " of inputs ", in[0].str_with_batch(), " and ", in[1].str_with_batch());
    Geo g;
    g.rank = rank;
    g.nx = in[0].numel();
    g.ny = in[1].numel();
    g.k = kx;
    if (rank == 2) {
      MR_CHECK(!normalize_ || (ax[0] == 2 && ax[1] == 2), value, who_,
               ": normalize = TRUE along axes other than the last is not supported yet for "
               "inputs of rank 3");
      g.ta = ax[0] == 1;
      g.tb = ax[1] == 2;
      g.f0 = g.ta ? in[0][1] : in[0][0];
      g.f1 = g.tb ? in[1][0] : in[1][1];
      g.ldx = in[0][1];
      g.ldy = in[1][1];
    }
    return g;
  }
  // aux layout (normalize): rank 1: [product row | xn | yn]; rank 2: [xn | yn | scratch].
  float* normalized(float* aux, const Geo& g, int64_t rows, int which) const {
    const int64_t base = g.rank == 1 ? rows * g.k : 0;
    return aux + base + (which == 0 ? 0 : rows * g.nx);
  }
  float* scratch(float* aux, const Geo& g, int64_t rows) const {
    return g.rank == 1 ? aux : aux + rows * (g.nx + g.ny);
  }

  std::string name_, who_;
  std::vector<int64_t> axes_;
  Json axes_json_;
  bool normalize_ = false;
};

}  // namespace

MR_REGISTER_LAYER(Dot, Dot)

}  // namespace mr
