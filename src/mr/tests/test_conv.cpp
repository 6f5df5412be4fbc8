// Conv1D/Conv2D and the poolings on the CPU: forward and every gradient
// against double-precision direct (loop) references written from the
// definitions (no im2col), for strides, both paddings, dilation, groups,
// pointwise kernels, 1-D and 2-D, odd sizes and rows = 0; a whole chain
// (conv -> pool -> dense) against finite differences; configs and the
// errors the layers raise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "nn/replica_context.h"
#include "tests/graphs.h"

namespace mr {
namespace {

std::vector<float> wave(int64_t n, double a, double b) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(std::sin(a * static_cast<double>(i) + b));
  return v;
}

// Output length and zeros before, from Keras' rule (written out here again
// on purpose: the test states the rule instead of calling the code).
int64_t out_len(int64_t in, int64_t k, int64_t s, int64_t d, bool same, int64_t* pad) {
  const int64_t span = (k - 1) * d + 1;
  if (!same) {
    *pad = 0;
    return (in - span) / s + 1;
  }
  const int64_t out = (in + s - 1) / s;
  *pad = std::max<int64_t>((out - 1) * s + span - in, 0) / 2;
  return out;
}

struct Case {
  int rank;  // 1 or 2
  int64_t h, w, c, filters, kh, kw, sh, sw, dh, dw, groups;
  bool same;
  int64_t rows;
};

// One layer's forward and backward on a CPU backend, buffers on the host.
struct LayerRun {
  std::vector<float> out, dx;
  std::vector<std::vector<float>> grads;
};

LayerRun run_layer(const Layer& layer, const Shape& in, int64_t rows, const std::vector<float>& x,
                   const std::vector<std::vector<float>>& params, const std::vector<float>& dy,
                   int threads = 2) {
  CpuBackend be(0, threads);
  SoloContext ctx;
  const Shape out = layer.output_shape({in});
  std::vector<float> aux(static_cast<size_t>(layer.aux_per_row({in}) * rows + 1));
  std::vector<float> work(static_cast<size_t>(layer.work_floats({in}) + 1));
  LayerRun r;
  r.out.assign(static_cast<size_t>(out.numel() * rows), -7.0f);
  std::vector<float*> p;
  std::vector<const float*> cp;
  std::vector<std::vector<float>> mutable_params = params;
  for (auto& v : mutable_params) {
    p.push_back(v.data());
    cp.push_back(v.data());
  }
  ForwardArgs fa{be,   rows,         rows, 0,  nullptr,    1u,          true, {x.data()},
                 {in}, r.out.data(), p,    {}, aux.data(), work.data(), ctx};
  layer.forward(fa);
  r.dx.assign(x.size(), -7.0f);
  std::vector<float> d_out = dy;
  for (const auto& v : params) r.grads.emplace_back(v.size(), -7.0f);
  std::vector<float*> gp;
  for (auto& g : r.grads) gp.push_back(g.data());
  BackwardArgs ba{be,   rows,         rows,         true,          {x.data()},
                  {in}, r.out.data(), d_out.data(), {r.dx.data()}, cp,
                  {},   gp,           aux.data(),   work.data(),   ctx};
  layer.backward(ba);
  return r;
}

Json tuple(int rank, int64_t a, int64_t b) {
  return rank == 2 ? Json::array({a, b}) : Json::array({b});
}

std::unique_ptr<Layer> conv_layer(const Case& k, const std::string& act = "linear") {
  return make_layer(k.rank == 2 ? "Conv2D" : "Conv1D",
                    Json{{"name", "conv"},
                         {"filters", k.filters},
                         {"kernel_size", tuple(k.rank, k.kh, k.kw)},
                         {"strides", tuple(k.rank, k.sh, k.sw)},
                         {"dilation_rate", tuple(k.rank, k.dh, k.dw)},
                         {"padding", k.same ? "same" : "valid"},
                         {"groups", k.groups},
                         {"activation", act}},
                    1);
}

void check_conv(const Case& k) {
  SCOPED_TRACE(testing::Message() << "rank " << k.rank << " in " << k.h << "x" << k.w << "x" << k.c
                                  << " filters " << k.filters << " kernel " << k.kh << "x" << k.kw
                                  << " strides " << k.sh << "x" << k.sw << " dilation " << k.dh
                                  << "x" << k.dw << " groups " << k.groups
                                  << (k.same ? " same" : " valid") << " rows " << k.rows);
  int64_t pt, pl;
  const int64_t oh = out_len(k.h, k.kh, k.sh, k.dh, k.same, &pt);
  const int64_t ow = out_len(k.w, k.kw, k.sw, k.dw, k.same, &pl);
  const int64_t cg = k.c / k.groups, fg = k.filters / k.groups;
  const auto layer = conv_layer(k);
  const Shape in = k.rank == 2 ? Shape{k.h, k.w, k.c} : Shape{k.w, k.c};
  ASSERT_EQ(layer->output_shape({in}),
            (k.rank == 2 ? Shape{oh, ow, k.filters} : Shape{ow, k.filters}));
  const auto x = wave(k.rows * k.h * k.w * k.c, 0.37, 0.2);
  const auto w = wave(k.kh * k.kw * cg * k.filters, 0.71, 1.3);
  const auto b = wave(k.filters, 1.9, 0.4);
  const auto dy = wave(k.rows * oh * ow * k.filters, 0.53, 2.1);
  const LayerRun r = run_layer(*layer, in, k.rows, x, {w, b}, dy);

  std::vector<double> y(static_cast<size_t>(k.rows * oh * ow * k.filters), 0.0);
  std::vector<double> dx(x.size(), 0.0), dw(w.size(), 0.0), db(b.size(), 0.0);
  for (int64_t n = 0; n < k.rows; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t f = 0; f < k.filters; ++f) {
          const size_t yi = static_cast<size_t>(((n * oh + oy) * ow + ox) * k.filters + f);
          const int64_t grp = f / fg;
          double s = b[static_cast<size_t>(f)];
          for (int64_t ky = 0; ky < k.kh; ++ky)
            for (int64_t kx = 0; kx < k.kw; ++kx) {
              const int64_t iy = oy * k.sh - pt + ky * k.dh, ix = ox * k.sw - pl + kx * k.dw;
              if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
              for (int64_t c = 0; c < cg; ++c) {
                const size_t xi =
                    static_cast<size_t>(((n * k.h + iy) * k.w + ix) * k.c + grp * cg + c);
                const size_t wi = static_cast<size_t>(((ky * k.kw + kx) * cg + c) * k.filters + f);
                s += double{x[xi]} * w[wi];
                dx[xi] += double{dy[yi]} * w[wi];
                dw[wi] += double{dy[yi]} * x[xi];
              }
            }
          y[yi] = s;
          db[static_cast<size_t>(f)] += dy[yi];
        }
  auto near = [](const std::vector<float>& got, const std::vector<double>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-5 * std::fabs(want[i])) << what << "[" << i << "]";
  };
  near(r.out, y, "y");
  near(r.grads[0], dw, "dkernel");
  near(r.grads[1], db, "dbias");
  if (k.rows > 0) near(r.dx, dx, "dx");
}

TEST(Conv, ForwardAndGradientsMatchADirectDoubleReference) {
  // rank, h, w, c, filters, kh, kw, sh, sw, dh, dw, groups, same, rows
  const Case cases[] = {
      {2, 7, 6, 3, 5, 3, 3, 1, 1, 1, 1, 1, false, 3},    // plain valid
      {2, 7, 6, 3, 5, 3, 2, 2, 1, 1, 1, 1, false, 3},    // strides, odd sizes
      {2, 7, 6, 3, 5, 3, 3, 2, 2, 1, 1, 1, true, 3},     // same, strides 2 (uneven padding)
      {2, 8, 7, 2, 4, 4, 2, 1, 3, 1, 1, 1, true, 2},     // same, even kernel
      {2, 9, 8, 2, 3, 3, 2, 1, 1, 2, 3, 1, false, 2},    // dilation, valid
      {2, 6, 7, 2, 3, 3, 3, 1, 1, 2, 2, 1, true, 2},     // dilation, same
      {2, 6, 5, 4, 6, 3, 3, 1, 1, 1, 1, 2, true, 3},     // groups 2
      {2, 5, 5, 6, 6, 2, 2, 2, 2, 1, 1, 3, false, 2},    // groups 3, strides
      {2, 5, 4, 3, 4, 1, 1, 1, 1, 1, 1, 1, false, 3},    // pointwise (no columns)
      {2, 5, 4, 3, 4, 1, 1, 2, 2, 1, 1, 1, false, 3},    // 1x1 with strides
      {2, 7, 6, 3, 5, 3, 3, 2, 2, 1, 1, 1, true, 0},     // an empty slice
      {1, 1, 11, 3, 4, 1, 3, 1, 2, 1, 1, 1, true, 3},    // Conv1D same, strides
      {1, 1, 10, 4, 2, 1, 3, 1, 1, 1, 2, 2, false, 2},   // Conv1D dilation, groups
      {1, 1, 9, 2, 3, 1, 4, 1, 1, 1, 1, 1, false, 0},    // Conv1D, an empty slice
      {2, 28, 28, 1, 8, 3, 3, 1, 1, 1, 1, 1, false, 5},  // the MNIST convnet's first shape
  };
  for (const Case& k : cases) check_conv(k);
}

// The layer's passes on teams of 1, 2 and 3 threads are bit-identical (the
// build's convolution path: oneDNN's chunks or im2col with the blocked GEMM).
TEST(Conv, TeamSizeDoesNotChangeTheOutput) {
  const Case k{2, 13, 13, 8, 16, 3, 3, 1, 1, 1, 1, 1, false, 9};
  const auto layer = conv_layer(k);
  const Shape in{13, 13, 8};
  const auto x = wave(9 * 13 * 13 * 8, 0.37, 0.2), w = wave(3 * 3 * 8 * 16, 0.71, 1.3);
  const auto b = wave(16, 1.9, 0.4), dy = wave(9 * 11 * 11 * 16, 0.53, 2.1);
  const LayerRun one = run_layer(*layer, in, 9, x, {w, b}, dy, 1);
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (int threads : {2, 3}) {
    const LayerRun more = run_layer(*layer, in, 9, x, {w, b}, dy, threads);
    EXPECT_TRUE(same(one.out, more.out)) << "forward, " << threads << " threads";
    EXPECT_TRUE(same(one.dx, more.dx)) << "input gradient, " << threads << " threads";
    for (size_t g = 0; g < 2; ++g)
      EXPECT_TRUE(same(one.grads[g], more.grads[g]))
          << (g == 0 ? "kernel" : "bias") << " gradient, " << threads << " threads";
  }
}

struct PoolCase {
  int rank;
  int64_t h, w, c, kh, kw, sh, sw;
  bool same, max;
  int64_t rows;
};

void check_pool(const PoolCase& k, const std::vector<float>& x) {
  SCOPED_TRACE(testing::Message() << (k.max ? "max" : "avg") << " rank " << k.rank << " in " << k.h
                                  << "x" << k.w << "x" << k.c << " pool " << k.kh << "x" << k.kw
                                  << " strides " << k.sh << "x" << k.sw
                                  << (k.same ? " same" : " valid") << " rows " << k.rows);
  int64_t pt, pl;
  const int64_t oh = out_len(k.h, k.kh, k.sh, 1, k.same, &pt);
  const int64_t ow = out_len(k.w, k.kw, k.sw, 1, k.same, &pl);
  const std::string cls =
      std::string(k.max ? "Max" : "Average") + "Pooling" + (k.rank == 2 ? "2D" : "1D");
  const auto layer = make_layer(cls,
                                Json{{"name", "pool"},
                                     {"pool_size", tuple(k.rank, k.kh, k.kw)},
                                     {"strides", tuple(k.rank, k.sh, k.sw)},
                                     {"padding", k.same ? "same" : "valid"}},
                                0);
  const Shape in = k.rank == 2 ? Shape{k.h, k.w, k.c} : Shape{k.w, k.c};
  ASSERT_EQ(layer->output_shape({in}), (k.rank == 2 ? Shape{oh, ow, k.c} : Shape{ow, k.c}));
  const auto dy = wave(k.rows * oh * ow * k.c, 0.53, 2.1);
  const LayerRun r = run_layer(*layer, in, k.rows, x, {}, dy);
  std::vector<double> y(static_cast<size_t>(k.rows * oh * ow * k.c)), dx(x.size(), 0.0);
  for (int64_t n = 0; n < k.rows; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t c = 0; c < k.c; ++c) {
          const size_t yi = static_cast<size_t>(((n * oh + oy) * ow + ox) * k.c + c);
          double best = -INFINITY, sum = 0.0;
          int64_t count = 0;
          size_t arg = 0;
          for (int64_t ky = 0; ky < k.kh; ++ky)
            for (int64_t kx = 0; kx < k.kw; ++kx) {
              const int64_t iy = oy * k.sh - pt + ky, ix = ox * k.sw - pl + kx;
              if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;  // padding: ignored
              const size_t xi = static_cast<size_t>(((n * k.h + iy) * k.w + ix) * k.c + c);
              if (x[xi] > best) {  // strict: the first maximum wins ties
                best = x[xi];
                arg = xi;
              }
              sum += x[xi];
              ++count;
            }
          y[yi] = k.max ? best : sum / static_cast<double>(count);
          if (k.max) {
            dx[arg] += dy[yi];
          } else {
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                const int64_t iy = oy * k.sh - pt + ky, ix = ox * k.sw - pl + kx;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                dx[static_cast<size_t>(((n * k.h + iy) * k.w + ix) * k.c + c)] +=
                    dy[yi] / static_cast<double>(count);
              }
          }
        }
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(r.out[i], y[i], 1e-5) << "y[" << i << "]";
  if (k.rows > 0)
    for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(r.dx[i], dx[i], 1e-5) << "dx[" << i << "]";
}

TEST(Pooling, ForwardAndGradientsMatchADirectDoubleReference) {
  // rank, h, w, c, kh, kw, sh, sw, same, max, rows
  const PoolCase cases[] = {
      {2, 6, 6, 3, 2, 2, 2, 2, false, true, 3},  {2, 7, 5, 3, 2, 2, 2, 2, false, true, 2},
      {2, 7, 5, 3, 3, 3, 2, 2, true, true, 2},   {2, 7, 5, 3, 3, 2, 1, 1, true, true, 2},
      {2, 6, 6, 3, 2, 2, 2, 2, false, false, 3}, {2, 7, 5, 3, 3, 3, 2, 2, true, false, 2},
      {2, 5, 7, 2, 3, 2, 1, 2, true, false, 2},  {2, 7, 5, 3, 3, 3, 2, 1, false, false, 2},
      {1, 1, 9, 4, 1, 3, 1, 2, true, true, 3},   {1, 1, 9, 4, 1, 2, 1, 3, false, false, 3},
      {1, 1, 8, 4, 1, 3, 1, 2, true, false, 2},  {2, 6, 6, 3, 2, 2, 2, 2, true, true, 0},
  };
  for (const PoolCase& k : cases) check_pool(k, wave(k.rows * k.h * k.w * k.c, 0.91, 0.3));
}

TEST(Pooling, MaxGivesTiesToTheFirstElementAndSameAveragesCountOnlyRealElements) {
  // Constant input: every window ties; overlapping windows (stride 1).
  const PoolCase tie{2, 4, 5, 2, 2, 2, 1, 1, true, true, 2};
  check_pool(tie, std::vector<float>(2 * 4 * 5 * 2, 1.5f));
  // A hand-computed case: 3x3 input 1..9, 2x2 average with "same" and
  // strides 2 gives windows {1,2,4,5}, {3,6}, {7,8}, {9}.
  const auto layer =
      make_layer("AveragePooling2D",
                 Json{{"name", "p"}, {"pool_size", 2}, {"strides", 2}, {"padding", "same"}}, 0);
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const LayerRun r = run_layer(*layer, Shape{3, 3, 1}, 1, x, {}, {1, 1, 1, 1});
  EXPECT_EQ(r.out, (std::vector<float>{3.0f, 4.5f, 7.5f, 9.0f}));
  EXPECT_EQ(r.dx, (std::vector<float>{0.25f, 0.25f, 0.5f, 0.25f, 0.25f, 0.5f, 0.5f, 0.5f, 1.0f}));
}

TEST(GlobalPooling, AveragesAndMaximaOverEveryPosition) {
  for (bool max : {true, false})
    for (int rank : {1, 2})
      for (bool keepdims : {false, true}) {
        const std::string cls = std::string("Global") + (max ? "Max" : "Average") + "Pooling" +
                                (rank == 2 ? "2D" : "1D");
        const auto layer = make_layer(cls, Json{{"name", "g"}, {"keepdims", keepdims}}, 0);
        const Shape in = rank == 2 ? Shape{3, 4, 5} : Shape{7, 5};
        const Shape want = !keepdims ? Shape{5} : (rank == 2 ? Shape{1, 1, 5} : Shape{1, 5});
        EXPECT_EQ(layer->output_shape({in}), want) << cls;
        const int64_t rows = 2, per = in.numel() / 5;
        const auto x = wave(rows * in.numel(), 0.77, 0.1), dy = wave(rows * 5, 0.3, 0.2);
        const LayerRun r = run_layer(*layer, in, rows, x, {}, dy);
        for (int64_t n = 0; n < rows; ++n)
          for (int64_t c = 0; c < 5; ++c) {
            double best = -INFINITY, sum = 0;
            int64_t arg = 0;
            for (int64_t p = 0; p < per; ++p) {
              const double v = x[static_cast<size_t>((n * per + p) * 5 + c)];
              if (v > best) {
                best = v;
                arg = p;
              }
              sum += v;
            }
            EXPECT_NEAR(r.out[static_cast<size_t>(n * 5 + c)], max ? best : sum / per, 1e-6) << cls;
            for (int64_t p = 0; p < per; ++p) {
              const double want_dx = max ? (p == arg ? dy[n * 5 + c] : 0.0) : dy[n * 5 + c] / per;
              EXPECT_NEAR(r.dx[static_cast<size_t>((n * per + p) * 5 + c)], want_dx, 1e-6) << cls;
            }
          }
      }
}

// Input(9x8x2) -> Conv2D(4, 3x3, same, tanh) -> MaxPooling2D -> Conv2D(3,
// 2x2, strides 2... valid) -> GlobalAveragePooling2D -> Dense(2): the chain's
// gradients against central finite differences of the loss.
double conv_chain_loss(const Graph& g, const std::vector<float>& params,
                       std::vector<float>* grads) {
  CpuBackend be(0, 2);
  const int64_t rows = 3;
  Executor ex(g, be);
  ex.reserve(rows);
  const auto x = wave(rows * 9 * 8 * 2, 0.37, 0.1);
  be.upload(ex.input(0), x.data(), x.size() * sizeof(float));
  ex.forward(test_pass(rows, 0, params.data()));
  const auto t = wave(rows * 2, 0.5, 0.7);
  double acc = 0;
  be.loss(LossKind::mean_squared_error, LossParams{}, rows, 2, ex.output(0), t.data(), nullptr,
          1.0f / rows, grads ? ex.output_grad(0) : nullptr, &acc);
  if (grads) {
    grads->assign(params.size(), 0.0f);
    ex.backward(test_pass(rows, 0, params.data()), grads->data());
  }
  return acc / rows;
}

TEST(Conv, ChainGradientsMatchFiniteDifferences) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{9, 8, 2}));
  l.push_back(make_layer("Conv2D",
                         Json{{"name", "c1"},
                              {"filters", 4},
                              {"kernel_size", 3},
                              {"padding", "same"},
                              {"activation", "tanh"},
                              {"bias_initializer", "glorot_uniform"}},
                         11));
  l.push_back(make_layer("MaxPooling2D", Json{{"name", "p"}, {"padding", "same"}}, 0));
  l.push_back(make_layer(
      "Conv2D",
      Json{{"name", "c2"}, {"filters", 3}, {"kernel_size", 2}, {"groups", 1}, {"strides", 2}}, 12));
  l.push_back(make_layer("GlobalAveragePooling2D", Json{{"name", "g"}}, 0));
  l.push_back(make_dense(2, Activation::linear, true, glorot_uniform(4), glorot_uniform(5)));
  const auto g = chain(std::move(l));
  std::vector<float> params = g->initial_params(), grads;
  conv_chain_loss(*g, params, &grads);
  int checked = 0;
  for (const Graph::Param& p : g->params())
    for (int64_t i = 0; i < p.size; ++i) {
      const size_t at = static_cast<size_t>(p.offset + i);
      const float saved = params[at], h = 2e-3f;
      params[at] = saved + h;
      const double up = conv_chain_loss(*g, params, nullptr);
      params[at] = saved - h;
      const double down = conv_chain_loss(*g, params, nullptr);
      params[at] = saved;
      const double fd = (up - down) / (2.0 * h);
      EXPECT_NEAR(grads[at], fd, 2e-3 + 1e-2 * std::fabs(fd)) << p.name << "[" << i << "]";
      ++checked;
    }
  EXPECT_EQ(checked, (3 * 3 * 2 * 4 + 4) + (2 * 2 * 4 * 3 + 3) + (3 * 2 + 2));
}

std::string error_of(const char* cls, const Json& cfg, const Shape& in) {
  try {
    make_layer(cls, cfg, 0)->output_shape({in});
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Conv, RejectsBadConfigsAndInputsNamingTheOption) {
  const Shape img{5, 5, 4};
  auto cfg = [](Json extra) {
    Json c{{"name", "c"}, {"filters", 4}, {"kernel_size", 3}};
    for (auto& [k, v] : extra.items()) c[k] = v;
    return c;
  };
  EXPECT_NE(error_of("Conv2D", cfg({{"kernel_size", 7}}), img).find("larger than the input"),
            std::string::npos);
  EXPECT_EQ(error_of("Conv2D", cfg({{"kernel_size", 7}, {"padding", "same"}}), img), "no error");
  EXPECT_NE(
      error_of("Conv2D", cfg({{"kernel_size", Json::array({0, 3})}}), img).find("'kernel_size'"),
      std::string::npos);
  EXPECT_NE(error_of("Conv2D", cfg({{"strides", -1}}), img).find("'strides'"), std::string::npos);
  EXPECT_NE(error_of("Conv2D", cfg({{"dilation_rate", 0}}), img).find("'dilation_rate'"),
            std::string::npos);
  EXPECT_NE(error_of("Conv2D", cfg({{"groups", 3}}), img).find("'groups'"), std::string::npos);
  EXPECT_NE(error_of("Conv2D", cfg({{"filters", 6}, {"groups", 3}}), img).find("groups (3)"),
            std::string::npos);
  EXPECT_NE(error_of("Conv2D", cfg({{"padding", "full"}}), img).find("'padding'"),
            std::string::npos);
  EXPECT_NE(
      error_of("Conv2D", cfg({{"strides", 2}, {"dilation_rate", 2}}), img).find("'dilation_rate'"),
      std::string::npos);
  EXPECT_NE(error_of("Conv2D", cfg({{"data_format", "channels_first"}}), img)
                .find("channels_first is not supported"),
            std::string::npos);
  EXPECT_EQ(error_of("Conv2D", cfg({{"data_format", "channels_last"}}), img), "no error");
  EXPECT_NE(error_of("Conv2D", cfg({}), Shape{5, 4}).find("rank 4"), std::string::npos);
  EXPECT_NE(error_of("MaxPooling2D", Json{{"name", "p"}, {"pool_size", 6}}, img)
                .find("larger than the input"),
            std::string::npos);
  EXPECT_NE(error_of("MaxPooling1D", Json{{"name", "p"}, {"pool_size", 0}}, Shape{5, 4})
                .find("'pool_size'"),
            std::string::npos);
}

TEST(Conv, ConfigIsWrittenAsKerasWritesIt) {
  const auto c =
      make_layer(
          "Conv2D",
          Json{{"name", "conv2d"}, {"filters", 32}, {"kernel_size", 3}, {"activation", "relu"}}, 0)
          ->config();
  std::vector<std::string> keys;
  for (auto& [k, v] : c.items()) keys.push_back(k);
  EXPECT_EQ(keys,
            (std::vector<std::string>{
                "name", "trainable", "dtype", "filters", "kernel_size", "strides", "padding",
                "data_format", "dilation_rate", "groups", "activation", "use_bias",
                "kernel_initializer", "bias_initializer", "kernel_regularizer", "bias_regularizer",
                "activity_regularizer", "kernel_constraint", "bias_constraint"}));
  EXPECT_EQ(c["kernel_size"], Json::array({3, 3}));
  EXPECT_EQ(c["strides"], Json::array({1, 1}));
  EXPECT_EQ(c["data_format"], "channels_last");
  const auto p = make_layer("MaxPooling2D", Json{{"name", "p"}}, 0)->config();
  EXPECT_EQ(p["pool_size"], Json::array({2, 2}));
  EXPECT_EQ(p["strides"], Json::array({2, 2}));
  EXPECT_EQ(p["padding"], "valid");
  const auto w = make_layer("Conv2D", Json{{"name", "c"}, {"filters", 32}, {"kernel_size", 3}}, 0)
                     ->weights({Shape{28, 28, 1}});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].shape, (Shape{3, 3, 1, 32}));  // Keras' layout; 288 + 32 = 320 parameters
  EXPECT_EQ(w[1].shape, (Shape{32}));
}

}  // namespace
}  // namespace mr
