// The oneDNN convolution passes (cpu_conv_dnnl.cpp) against the im2col +
// gemm path of the same backend (set_conv_dnnl(false)): forward, backward-
// filter and backward-data for strides, both paddings, dilation, groups,
// pointwise kernels, 1-D and 2-D, at the row count a plan was made for, at
// fewer rows (a short batch run in the larger plan with zero tails), and at
// rows = 0; and that training steps of a convnet allocate nothing after the
// first. (test_conv.cpp checks the same passes, on whichever path the build
// uses, against a direct double-precision reference.)
//
// Tolerance: |dnnl - im2col| <= 1e-4 + 1e-5 * |im2col|. Both are float sums
// of the same products in different orders; the inputs are sines (|x| <= 1),
// so with at most a few thousand terms per sum the rounding difference stays
// near 1e-5 in absolute terms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "build_config.h"
#include "data/array_source.h"
#include "tests/graphs.h"
#include "train/model.h"

namespace mr {
namespace {

#if MR_WITH_DNNL

std::vector<float> wave(int64_t n, double a, double b) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(std::sin(a * static_cast<double>(i) + b));
  return v;
}

// Keras' output length and zeros before (the rule written out again).
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
  int64_t h, w, c, filters, kh, kw, sh, sw, dh, dw, groups;
  bool same;
};

ConvGeometry geometry(const Case& k) {
  ConvGeometry g;
  g.in_h = k.h;
  g.in_w = k.w;
  g.in_c = k.c;
  g.out_c = k.filters;
  g.k_h = k.kh;
  g.k_w = k.kw;
  g.stride_h = k.sh;
  g.stride_w = k.sw;
  g.dil_h = k.dh;
  g.dil_w = k.dw;
  g.groups = k.groups;
  g.out_h = out_len(k.h, k.kh, k.sh, k.dh, k.same, &g.pad_top);
  g.out_w = out_len(k.w, k.kw, k.sw, k.dw, k.same, &g.pad_left);
  return g;
}

struct Passes {
  std::vector<float> y, dw, dx;
};

// The three passes at `rows` on `be`, on the path be.conv_dnnl() says.
Passes run(CpuBackend& be, const ConvGeometry& g, int64_t rows) {
  const int64_t in = g.in_h * g.in_w * g.in_c, out = g.out_h * g.out_w * g.out_c;
  const auto x = wave(rows * in, 0.37, 0.2), dy = wave(rows * out, 0.53, 2.1);
  const auto w = wave(g.k_h * g.k_w * (g.in_c / g.groups) * g.out_c, 0.71, 1.3);
  std::vector<float> col(static_cast<size_t>(conv_columns_per_row(g) * rows + 1));
  Passes p;
  p.y.assign(static_cast<size_t>(rows * out), -7.0f);
  p.dw.assign(w.size(), -7.0f);
  p.dx.assign(x.size(), -7.0f);
  be.conv_forward(g, rows, x.data(), w.data(), p.y.data(), col.data());
  be.conv_backward_filter(g, rows, x.data(), dy.data(), p.dw.data(), col.data());
  be.conv_backward_data(g, rows, dy.data(), w.data(), p.dx.data(), col.data());
  return p;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-5 * std::fabs(want[i])) << what << "[" << i << "]";
}

TEST(ConvDnnl, PassesMatchIm2colAtFullShortAndEmptyBatches) {
  // h, w, c, filters, kh, kw, sh, sw, dh, dw, groups, same
  const Case cases[] = {
      {7, 6, 3, 5, 3, 3, 1, 1, 1, 1, 1, false},     // plain valid
      {7, 6, 3, 5, 3, 2, 2, 1, 1, 1, 1, false},     // strides, odd sizes
      {7, 6, 3, 5, 3, 3, 2, 2, 1, 1, 1, true},      // same, strides 2 (uneven padding)
      {8, 7, 2, 4, 4, 2, 1, 3, 1, 1, 1, true},      // same, even kernel
      {9, 8, 2, 3, 3, 2, 1, 1, 2, 3, 1, false},     // dilation, valid
      {6, 7, 2, 3, 3, 3, 1, 1, 2, 2, 1, true},      // dilation, same
      {6, 5, 4, 6, 3, 3, 1, 1, 1, 1, 2, true},      // groups 2
      {5, 5, 6, 6, 2, 2, 2, 2, 1, 1, 3, false},     // groups 3, strides
      {5, 4, 3, 4, 1, 1, 1, 1, 1, 1, 1, false},     // pointwise
      {5, 4, 3, 4, 1, 1, 2, 2, 1, 1, 1, false},     // 1x1 with strides
      {1, 11, 3, 4, 1, 3, 1, 2, 1, 1, 1, true},     // 1-D same, strides
      {1, 10, 4, 2, 1, 3, 1, 1, 1, 2, 2, false},    // 1-D dilation, groups
      {28, 28, 1, 32, 3, 3, 1, 1, 1, 1, 1, false},  // the MNIST convnet's first convolution
      {13, 13, 32, 64, 3, 3, 1, 1, 1, 1, 1, false}  // and its second
  };
  for (const Case& k : cases) {
    const ConvGeometry g = geometry(k);
    SCOPED_TRACE(testing::Message() << "in " << k.h << "x" << k.w << "x" << k.c << " filters "
                                    << k.filters << " kernel " << k.kh << "x" << k.kw << " strides "
                                    << k.sh << "x" << k.sw << " dilation " << k.dh << "x" << k.dw
                                    << " groups " << k.groups << (k.same ? " same" : " valid"));
    // A team of 3; rows in one short chunk (padded with zero rows), and 0.
    CpuBackend dnnl(0, 3), im2col(0, 2);
    im2col.set_conv_dnnl(false);
    for (int64_t rows : {7, 4, 1, 7, 0}) {
      SCOPED_TRACE(testing::Message() << "rows " << rows);
      const Passes a = run(dnnl, g, rows), b = run(im2col, g, rows);
      expect_close(a.y, b.y, "y");
      expect_close(a.dw, b.dw, "dkernel");
      expect_close(a.dx, b.dx, "dx");
      if (rows == 0)
        for (float v : a.dw) ASSERT_EQ(v, 0.0f);
    }
  }
}

// Teams of 1, 2 and 3 threads give bit-identical passes: the chunks and the
// filter gradient's groups depend on the rows and the geometry alone, never
// on the team (before, a member's share of the rows made the primitives and
// the filter gradient was summed per member). Row counts below, at and
// around the chunk sizes, and the MNIST convnet's two layers at a replica's
// batch; the im2col path too.
TEST(ConvDnnl, PassesAreBitIdenticalForAnyTeamSize) {
  const Case cases[] = {
      {28, 28, 1, 32, 3, 3, 1, 1, 1, 1, 1, false},   // 16-row forward chunks, 32-row filter chunks
      {13, 13, 32, 64, 3, 3, 1, 1, 1, 1, 1, false},  // 4 and 8
      {7, 6, 3, 5, 3, 3, 2, 2, 1, 1, 1, true},       // small: the largest chunks
      {6, 5, 4, 6, 3, 3, 1, 1, 1, 1, 2, true},       // groups
  };
  for (const Case& k : cases) {
    const ConvGeometry g = geometry(k);
    for (bool dnnl : {true, false}) {
      SCOPED_TRACE(testing::Message() << k.h << "x" << k.w << "x" << k.c << " -> " << k.filters
                                      << (dnnl ? ", oneDNN" : ", im2col"));
      CpuBackend one(0, 1), two(0, 2), three(0, 3);
      for (CpuBackend* be : {&one, &two, &three}) be->set_conv_dnnl(dnnl);
      for (int64_t rows : {1, 3, 8, 9, 33, 64, 130}) {
        const Passes a = run(one, g, rows), b = run(two, g, rows), c = run(three, g, rows);
        for (const Passes* p : {&b, &c}) {
          const int threads = p == &b ? 2 : 3;
          ASSERT_EQ(0, std::memcmp(a.y.data(), p->y.data(), a.y.size() * sizeof(float)))
              << "y, " << rows << " rows, " << threads << " threads";
          ASSERT_EQ(0, std::memcmp(a.dw.data(), p->dw.data(), a.dw.size() * sizeof(float)))
              << "dkernel, " << rows << " rows, " << threads << " threads";
          ASSERT_EQ(0, std::memcmp(a.dx.data(), p->dx.data(), a.dx.size() * sizeof(float)))
              << "dx, " << rows << " rows, " << threads << " threads";
        }
      }
    }
  }
}

// prepare_conv() (what Executor::reserve calls) makes the plan: no pass
// allocates afterwards, the first one included, for any batch (the plan does
// not depend on the rows); an unprepared backend makes it at its first pass.
TEST(ConvDnnl, PreparedPassesAllocateNothing) {
  const ConvGeometry g = geometry({13, 13, 8, 16, 3, 3, 1, 1, 1, 1, 1, true});
  CpuBackend be(0, 2);
  EXPECT_EQ(be.conv_path(g, 9), "onednn");
  const int64_t fresh = be.system_allocations();
  be.prepare_conv(g, 9);
  const int64_t before = be.system_allocations();
  EXPECT_GT(before, fresh);
  for (int64_t rows : {9, 5, 1, 0, 9, 40}) run(be, g, rows);
  EXPECT_EQ(be.system_allocations(), before);
  CpuBackend lazy(0, 2);
  const int64_t lazy_before = lazy.system_allocations();
  run(lazy, g, 9);
  EXPECT_GT(lazy.system_allocations(), lazy_before);
}

#endif  // MR_WITH_DNNL

// A convnet trained on two CPU replicas: after the first step, steps of that
// size or smaller (an uneven slice, the epoch's short last batch) and an
// evaluation step add no allocation on any replica's backend.
TEST(ConvDnnl, ConvnetStepsAllocateNothing) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{8, 8, 2}));
  l.push_back(make_layer("Conv2D",
                         Json{{"name", "conv"},
                              {"filters", 4},
                              {"kernel_size", Json::array({3, 3})},
                              {"padding", "same"},
                              {"activation", "relu"}},
                         1));
  l.push_back(make_flatten());
  l.push_back(make_dense(3, Activation::linear, true, glorot_uniform(3), Initializer{}));
  std::vector<DeviceSpec> devs{{DeviceKind::cpu, 0}, {DeviceKind::cpu, 1}};
  Model m(chain(std::move(l)), devs, 1);
  CompileConfig c;
  c.loss.from_logits = true;
  c.metrics.push_back(MetricConfig{});
  m.compile(c);
  const int64_t width = 8 * 8 * 2;
  std::vector<float> x, y;
  for (int64_t i = 0; i < 11 * width; ++i) x.push_back(std::cos(0.37f * static_cast<float>(i)));
  for (int64_t i = 0; i < 11; ++i) y.push_back(static_cast<float>(i % 3));
  auto batch = [&](int64_t rows) {
    HostBatch b;
    b.rows = rows;
    b.parts = {HostComponent{x.data(), width}, HostComponent{y.data(), 1}};
    return b;
  };
  m.train_step(batch(11));
  const int64_t before =
      m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations();
  for (int64_t rows : {11, 5, 1, 11}) m.train_step(batch(rows));
  const HostBatch eval = batch(7);  // must outlive the step
  m.start_eval_step(eval);
  m.finish_step();
  m.read_metrics();
  EXPECT_EQ(m.replica_backend(0).system_allocations() + m.replica_backend(1).system_allocations(),
            before);
}

}  // namespace
}  // namespace mr
