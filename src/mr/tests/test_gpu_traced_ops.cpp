// The traced-graph ops (core/op_kinds.h) on a GPU against the CPU backend:
// every unary, binary (under broadcasting, with its partials reduced by
// sum_to_operand), where, reduction and softmax-family op, forward and
// backward, on the same inputs including edge values. Tolerance: 1e-5
// relative + 1e-6 absolute per element (CUDA's float libm is within a few ulp
// of glibc's; sums run in the same order on both), NaN matching NaN and Inf
// the same Inf. Skipped without a CUDA device (a failure under
// MIRRORED_TEST_CUDA=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/op_kinds.h"
#include "tests/test_util.h"
#include "tests/traced_ops_ref.h"

namespace mr {
namespace {

using Vec = std::vector<float>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class GpuTracedOps : public ::testing::Test {
 protected:
  void SetUp() override {
    MR_REQUIRE_GPUS(1);
    cpu_ = make_cpu_backend(0, 2);
    dev_ = make_cuda_backend(0, 0);
  }
  void TearDown() override { bufs_.clear(); }

  float* put(const Vec& v) {
    bufs_.push_back(dev_->allocate(std::max<size_t>(1, v.size()) * sizeof(float)));
    dev_->upload(bufs_.back().get(), v.data(), v.size() * sizeof(float));
    return static_cast<float*>(bufs_.back().get());
  }
  float* zeros(size_t n) { return put(Vec(n, 0.0f)); }
  Vec get(const float* d, size_t n) {
    Vec v(n);
    dev_->download(v.data(), d, n * sizeof(float));
    return v;
  }
  static void expect_close(const Vec& gpu, const Vec& cpu, const std::string& what) {
    ASSERT_EQ(gpu.size(), cpu.size()) << what;
    for (size_t i = 0; i < gpu.size(); ++i)
      ASSERT_TRUE(testref::close(gpu[i], cpu[i], 1e-5, 1e-6))
          << what << " [" << i << "]: gpu " << gpu[i] << ", cpu " << cpu[i];
  }

  std::unique_ptr<Backend> cpu_, dev_;
  std::vector<DeviceBuffer> bufs_;
};

const std::vector<UnaryOp> kUnary = testref::all_unary_ops();
const std::vector<BinaryOp> kBinary = testref::all_binary_ops();

TEST_F(GpuTracedOps, UnaryForwardAndBackwardMatchTheCpu) {
  Vec x = uniform_floats(5000, 81, 0, -6.0f, 6.0f);
  for (float v : {0.0f, -0.0f, -1.0f, -2.0f, kInf, -kInf, kNaN, 1e30f, -1e30f}) x.push_back(v);
  const Vec dy = uniform_floats(x.size(), 82, 0, 0.5f, 1.5f);
  const auto n = static_cast<int64_t>(x.size());
  for (UnaryOp op : kUnary) {
    Vec y(x.size()), dx(x.size());
    cpu_->unary(op, n, x.data(), y.data());
    cpu_->unary_backward(op, n, x.data(), y.data(), dy.data(), dx.data());
    float *gx = put(x), *gy = zeros(x.size()), *gdy = put(dy), *gdx = zeros(x.size());
    dev_->unary(op, n, gx, gy);
    dev_->unary_backward(op, n, gx, gy, gdy, gdx);
    expect_close(get(gy, x.size()), y, std::string(op_name(op)) + " forward");
    expect_close(get(gdx, x.size()), dx, std::string(op_name(op)) + " backward");
  }
}

TEST_F(GpuTracedOps, BinaryAndWhereUnderBroadcastingMatchTheCpu) {
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{Shape{200, 30}, Shape{200, 30}},
                        {Shape{}, Shape{37, 41}},
                        {Shape{3, 1, 40}, Shape{50, 1}},
                        {Shape{20, 30, 4}, Shape{4}},
                        {Shape{2, 1, 30}, Shape{1, 40, 1}},
                        {Shape{}, Shape{}},                 // rank 0
                        {Shape{1, 1}, Shape{1}},            // all ones
                        {Shape{2, 1, 3}, Shape{2, 0, 3}}};  // size 0
  for (const Case& c : cases) {
    const Broadcast g = make_broadcast({c.a, c.b});
    const auto na = static_cast<size_t>(c.a.numel()), nb = static_cast<size_t>(c.b.numel());
    const auto n = static_cast<size_t>(g.size);
    Vec a = uniform_floats(na, 83, 0, -2.0f, 2.0f), b = uniform_floats(nb, 84, 0, -2.0f, 2.0f);
    // Edge values and equal pairs (comparisons, ties of maximum / minimum).
    const float edges[] = {0.0f, kNaN, kInf, -kInf, -1.0f};
    for (size_t i = 0; i < std::min<size_t>(na, 5); ++i) a[i] = edges[i];
    for (size_t i = 0; i < nb; i += 7) b[i] = a[i % na];
    const Vec dout = uniform_floats(n, 85, 0, -1.0f, 1.0f);
    const std::string shapes = c.a.str() + " with " + c.b.str();
    for (BinaryOp op : kBinary) {
      Vec y(n), pa(n), pb(n), sa(na), sb(nb);
      cpu_->binary(op, g, a.data(), b.data(), y.data());
      cpu_->binary_backward(op, g, a.data(), b.data(), dout.data(), pa.data(), pb.data());
      cpu_->strided_copy(sum_to_operand(g, 0), pa.data(), sa.data());
      cpu_->strided_copy(sum_to_operand(g, 1), pb.data(), sb.data());
      float *ga = put(a), *gb = put(b), *gd = put(dout), *gy = zeros(n), *gpa = zeros(n),
            *gpb = zeros(n), *gsa = zeros(na), *gsb = zeros(nb);
      dev_->binary(op, g, ga, gb, gy);
      dev_->binary_backward(op, g, ga, gb, gd, gpa, gpb);
      dev_->strided_copy(sum_to_operand(g, 0), gpa, gsa);
      dev_->strided_copy(sum_to_operand(g, 1), gpb, gsb);
      const std::string what = std::string(op_name(op)) + " " + shapes;
      expect_close(get(gy, n), y, what + " forward");
      expect_close(get(gpa, n), pa, what + " d/da");
      expect_close(get(gpb, n), pb, what + " d/db");
      expect_close(get(gsa, na), sa, what + " d/da summed");
      expect_close(get(gsb, nb), sb, what + " d/db summed");
    }
    // where(cond, a, b) with cond = the comparison mask of b (NaN included).
    Vec cond(b);
    for (size_t i = 0; i < nb; i += 3) cond[i] = 0.0f;
    const Broadcast w = make_broadcast({c.b, c.a, c.b});
    const auto nw = static_cast<size_t>(w.size);
    const Vec dw = uniform_floats(nw, 86);
    Vec y(nw), pa(nw), pb(nw);
    cpu_->where(w, cond.data(), a.data(), b.data(), y.data());
    cpu_->where_backward(w, cond.data(), dw.data(), pa.data(), pb.data());
    float *gc = put(cond), *ga = put(a), *gb = put(b), *gd = put(dw), *gy = zeros(nw),
          *gpa = zeros(nw), *gpb = zeros(nw);
    dev_->where(w, gc, ga, gb, gy);
    dev_->where_backward(w, gc, gd, gpa, gpb);
    expect_close(get(gy, nw), y, "where " + shapes);
    expect_close(get(gpa, nw), pa, "where d/da " + shapes);
    expect_close(get(gpb, nw), pb, "where d/db " + shapes);
  }
}

TEST_F(GpuTracedOps, ReductionsAndSoftmaxMatchTheCpu) {
  struct Layout {
    int64_t outer, extent, inner;
  };
  const Layout layouts[] = {{1, 300, 200}, {40, 50, 30}, {2000, 30, 1}, {7, 0, 3}};
  Vec x = uniform_floats(60000, 87, 0, -4.0f, 4.0f);
  x[5] = kNaN;                                         // one NaN axis in each layout
  for (size_t i = 100; i < 400; i += 30) x[i] = 3.5f;  // ties
  float* gx = put(x);
  for (const Layout& l : layouts) {
    const auto n_out = static_cast<size_t>(l.outer * l.inner);
    const auto n_in = static_cast<size_t>(l.outer * l.extent * l.inner);
    const std::string shape =
        std::to_string(l.outer) + "x" + std::to_string(l.extent) + "x" + std::to_string(l.inner);
    const Vec dy = uniform_floats(n_out, 88);
    float* gdy = put(dy);
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      Vec y(n_out), dx(n_in);
      cpu_->reduce(op, l.outer, l.extent, l.inner, x.data(), y.data());
      cpu_->reduce_backward(op, l.outer, l.extent, l.inner, x.data(), y.data(), dy.data(),
                            dx.data());
      float *gy = zeros(n_out), *gdx = zeros(n_in);
      dev_->reduce(op, l.outer, l.extent, l.inner, gx, gy);
      dev_->reduce_backward(op, l.outer, l.extent, l.inner, gx, gy, gdy, gdx);
      expect_close(get(gy, n_out), y, std::string(op_name(op)) + " " + shape);
      expect_close(get(gdx, n_in), dx, std::string(op_name(op)) + " backward " + shape);
    }
    for (SoftmaxOp op : {SoftmaxOp::softmax, SoftmaxOp::log_softmax, SoftmaxOp::logsumexp}) {
      const size_t n_y = op == SoftmaxOp::logsumexp ? n_out : n_in;
      const Vec g = uniform_floats(n_y, 89);
      Vec y(n_y), dx(n_in);
      cpu_->softmax_axis(op, l.outer, l.extent, l.inner, x.data(), y.data());
      cpu_->softmax_axis_backward(op, l.outer, l.extent, l.inner, x.data(), y.data(), g.data(),
                                  dx.data());
      float *gy = zeros(n_y), *gg = put(g), *gdx = zeros(n_in);
      dev_->softmax_axis(op, l.outer, l.extent, l.inner, gx, gy);
      dev_->softmax_axis_backward(op, l.outer, l.extent, l.inner, gx, gy, gg, gdx);
      expect_close(get(gy, n_y), y, std::string(op_name(op)) + " " + shape);
      expect_close(get(gdx, n_in), dx, std::string(op_name(op)) + " backward " + shape);
    }
  }
}

// Sizes past one grid's worth of threads (the kernels' grid-stride loops
// wrap: more than 2^21 elements, more than 2^20 reduction outputs), null
// partials, and where over three different operand shapes. sum is compared
// bit for bit (double accumulation in the same order on both backends).
TEST_F(GpuTracedOps, LargeSizesNullPartialsAndThreeShapeWhereMatchTheCpu) {
  const Shape sa{2049, 1024}, sb{1024}, sc{2049, 1};
  const auto na = static_cast<size_t>(sa.numel()), nb = static_cast<size_t>(sb.numel());
  ASSERT_GT(na, size_t{1} << 21);
  const Vec a = uniform_floats(na, 90, 0, 0.5f, 2.0f), b = uniform_floats(nb, 91, 0, -2.0f, 2.0f);
  const Vec dout = uniform_floats(na, 92);
  float *ga = put(a), *gb = put(b), *gd = put(dout);
  for (UnaryOp op : {UnaryOp::exp, UnaryOp::gelu_erf, UnaryOp::sqrt}) {
    Vec y(na), dx(na);
    const auto n = static_cast<int64_t>(na);
    cpu_->unary(op, n, a.data(), y.data());
    cpu_->unary_backward(op, n, a.data(), y.data(), dout.data(), dx.data());
    float *gy = zeros(na), *gdx = zeros(na);
    dev_->unary(op, n, ga, gy);
    dev_->unary_backward(op, n, ga, gy, gd, gdx);
    expect_close(get(gy, na), y, std::string("large ") + op_name(op));
    expect_close(get(gdx, na), dx, std::string("large ") + op_name(op) + " backward");
  }
  const Broadcast g = make_broadcast({sa, sb});
  for (BinaryOp op : {BinaryOp::add, BinaryOp::power, BinaryOp::maximum}) {
    Vec y(na), pa(na), pb(na, 7.0f);
    cpu_->binary(op, g, a.data(), b.data(), y.data());
    cpu_->binary_backward(op, g, a.data(), b.data(), dout.data(), pa.data(), nullptr);
    float *gy = zeros(na), *gpa = zeros(na), *gpb = put(pb);
    dev_->binary(op, g, ga, gb, gy);
    dev_->binary_backward(op, g, ga, gb, gd, gpa, nullptr);  // gb null: not written
    expect_close(get(gy, na), y, std::string("large ") + op_name(op));
    expect_close(get(gpa, na), pa, std::string("large ") + op_name(op) + " d/da");
    expect_close(get(gpb, na), pb, std::string("large ") + op_name(op) + " untouched");
    cpu_->binary_backward(op, g, a.data(), b.data(), dout.data(), nullptr, pb.data());
    dev_->binary_backward(op, g, ga, gb, gd, nullptr, gpb);  // ga null
    expect_close(get(gpb, na), pb, std::string("large ") + op_name(op) + " d/db");
  }
  {
    Vec cond = uniform_floats(2049, 93, 0, -1.0f, 1.0f);
    cond[7] = 0.0f;
    cond[9] = kNaN;
    const Broadcast w = make_broadcast({sc, sa, sb});
    Vec y(na), pa(na), pb(na);
    cpu_->where(w, cond.data(), a.data(), b.data(), y.data());
    cpu_->where_backward(w, cond.data(), dout.data(), pa.data(), nullptr);
    cpu_->where_backward(w, cond.data(), dout.data(), nullptr, pb.data());
    float *gc = put(cond), *gy = zeros(na), *gpa = zeros(na), *gpb = zeros(na);
    dev_->where(w, gc, ga, gb, gy);
    dev_->where_backward(w, gc, gd, gpa, nullptr);
    dev_->where_backward(w, gc, gd, nullptr, gpb);
    expect_close(get(gy, na), y, "large where");
    expect_close(get(gpa, na), pa, "large where d/da");
    expect_close(get(gpb, na), pb, "large where d/db");
  }
  {  // where over (3, 1, 1), (1, 4, 1) and (5): out (3, 4, 5)
    const Shape wc{3, 1, 1}, wa{1, 4, 1}, wb{5};
    const Vec cond = {1.0f, 0.0f, kNaN}, va = uniform_floats(4, 94), vb = uniform_floats(5, 95);
    const Broadcast w = make_broadcast({wc, wa, wb});
    ASSERT_EQ(w.size, 60);
    const Vec dw = uniform_floats(60, 96);
    Vec y(60), pa(60), pb(60), sa4(4), sb5(5);
    cpu_->where(w, cond.data(), va.data(), vb.data(), y.data());
    cpu_->where_backward(w, cond.data(), dw.data(), pa.data(), pb.data());
    cpu_->strided_copy(sum_to_operand(w, 1), pa.data(), sa4.data());
    cpu_->strided_copy(sum_to_operand(w, 2), pb.data(), sb5.data());
    float *gc = put(cond), *gva = put(va), *gvb = put(vb), *gdw = put(dw), *gy = zeros(60),
          *gpa = zeros(60), *gpb = zeros(60), *gsa = zeros(4), *gsb = zeros(5);
    dev_->where(w, gc, gva, gvb, gy);
    dev_->where_backward(w, gc, gdw, gpa, gpb);
    dev_->strided_copy(sum_to_operand(w, 1), gpa, gsa);
    dev_->strided_copy(sum_to_operand(w, 2), gpb, gsb);
    expect_close(get(gy, 60), y, "where 3 shapes");
    expect_close(get(gsa, 4), sa4, "where 3 shapes d/da");
    expect_close(get(gsb, 5), sb5, "where 3 shapes d/db");
  }
  {  // outer * inner = 1025 * 1024 > 2^20 outputs over an axis of 3
    const int64_t outer = 1025, extent = 3, inner = 1024;
    const auto n_out = static_cast<size_t>(outer * inner), n_in = n_out * 3;
    const Vec x = uniform_floats(n_in, 97, 0, -4.0f, 4.0f), dy = uniform_floats(n_out, 98);
    float *gx = put(x), *gdy = put(dy);
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
      Vec y(n_out), dx(n_in);
      cpu_->reduce(op, outer, extent, inner, x.data(), y.data());
      cpu_->reduce_backward(op, outer, extent, inner, x.data(), y.data(), dy.data(), dx.data());
      float *gy = zeros(n_out), *gdx = zeros(n_in);
      dev_->reduce(op, outer, extent, inner, gx, gy);
      dev_->reduce_backward(op, outer, extent, inner, gx, gy, gdy, gdx);
      const Vec got = get(gy, n_out);
      if (op == ReduceOp::sum) {
        for (size_t j = 0; j < n_out; ++j)
          ASSERT_EQ(got[j], y[j]) << "large sum, bit-equal [" << j << "]";
      }
      expect_close(got, y, std::string("large ") + op_name(op));
      expect_close(get(gdx, n_in), dx, std::string("large ") + op_name(op) + " backward");
    }
  }
}

// ---- i15-fuse: unary_chain on the GPU equals the separate unary() launches
// bit for bit (NaN matching NaN: the payload may differ) for every op and
// chain length, and the CPU within the tolerance above.
TEST_F(GpuTracedOps, UnaryChainEqualsSeparateUnaryLaunches) {
  Vec x = uniform_floats(4099, 91, 0, -2.5f, 2.5f);
  for (float v : {0.0f, -0.0f, kInf, -kInf, kNaN, 1e30f}) x.push_back(v);
  const auto n = static_cast<int64_t>(x.size());
  float* gx = put(x);
  for (size_t first = 0; first < kUnary.size(); ++first) {
    for (int count = 1; count <= Backend::kMaxUnaryChain; ++count) {
      UnaryOp ops[Backend::kMaxUnaryChain];
      float *fused[Backend::kMaxUnaryChain], *sep[Backend::kMaxUnaryChain];
      for (int c = 0; c < count; ++c) {
        ops[c] = kUnary[(first + 5 * c) % kUnary.size()];
        fused[c] = zeros(x.size());
        sep[c] = zeros(x.size());
      }
      dev_->unary_chain(n, ops, count, gx, fused);
      const float* src = gx;
      for (int c = 0; c < count; ++c) {
        dev_->unary(ops[c], n, src, sep[c]);
        src = sep[c];
      }
      Vec cpu_in = x;
      for (int c = 0; c < count; ++c) {
        const Vec f = get(fused[c], x.size()), s = get(sep[c], x.size());
        for (size_t i = 0; i < x.size(); ++i)
          ASSERT_TRUE((std::isnan(f[i]) && std::isnan(s[i])) ||
                      std::memcmp(&f[i], &s[i], sizeof(float)) == 0)
              << "link " << c << " (" << op_name(ops[c]) << ") of " << count << " [" << i
              << "]: fused " << f[i] << ", separate " << s[i];
        Vec cpu_out(x.size());
        cpu_->unary(ops[c], n, cpu_in.data(), cpu_out.data());
        if (count == 1) expect_close(f, cpu_out, std::string(op_name(ops[c])) + " chain vs cpu");
        cpu_in = cpu_out;
      }
      dev_->unary_chain(0, ops, count, gx, fused);  // n = 0: nothing, no launch error
    }
  }
  dev_->synchronize();
}

}  // namespace
}  // namespace mr
