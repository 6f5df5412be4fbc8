// Every op of the op set on every non-CPU backend this machine has, against
// the CPU backend on the same inputs. Bound: relative error (max |got - want|
// over max |want|) <= 1e-5 for float32 ops, 1e-3 for gemm with TF32 on;
// dropout masks and optimizer slot layouts must match exactly where the
// arithmetic is exact. Without a GPU these tests skip (fail under
// MIRRORED_TEST_CUDA=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/rng.h"
#include "tests/test_util.h"

namespace mr {
namespace {

std::vector<float> random_vec(size_t n, uint32_t stream, float lo = -1.0f, float hi = 1.0f) {
  return uniform_floats(n, 12345, stream, lo, hi);
}

double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    diff = std::max(diff, std::fabs(double{got[i]} - want[i]));
    scale = std::max(scale, std::fabs(double{want[i]}));
  }
  return scale > 0.0 ? diff / scale : diff;
}

// The same buffers on the CPU and on the backend under test.
class Pair {
 public:
  Pair(Backend& cpu, Backend& dev) : cpu_(cpu), dev_(dev) {}
  // Returns the index of a buffer holding `v` on both backends.
  size_t put(const std::vector<float>& v) {
    const size_t bytes = v.size() * sizeof(float);
    bufs_.push_back({cpu_.allocate(bytes), dev_.allocate(bytes), v.size()});
    cpu_.upload(bufs_.back().c.get(), v.data(), bytes);
    dev_.upload(bufs_.back().d.get(), v.data(), bytes);
    return bufs_.size() - 1;
  }
  float* c(size_t i) { return static_cast<float*>(bufs_[i].c.get()); }
  float* d(size_t i) { return static_cast<float*>(bufs_[i].d.get()); }
  std::vector<float> got(size_t i) {
    std::vector<float> v(bufs_[i].n);
    dev_.download(v.data(), bufs_[i].d.get(), v.size() * sizeof(float));
    return v;
  }
  std::vector<float> want(size_t i) {
    std::vector<float> v(bufs_[i].n);
    cpu_.download(v.data(), bufs_[i].c.get(), v.size() * sizeof(float));
    return v;
  }
  double err(size_t i) { return rel_err(got(i), want(i)); }

 private:
  struct Buf {
    DeviceBuffer c, d;
    size_t n;
  };
  Backend& cpu_;
  Backend& dev_;
  std::vector<Buf> bufs_;
};

class GpuOps : public ::testing::Test {
 protected:
  void SetUp() override {
    MR_REQUIRE_GPUS(1);
    cpu_ = make_cpu_backend(0, 2);
    dev_ = make_cuda_backend(0, 0);
    p_ = std::make_unique<Pair>(*cpu_, *dev_);
  }
  // Buffers die before the backends that own them.
  void TearDown() override { p_.reset(); }

  std::unique_ptr<Backend> cpu_, dev_;
  std::unique_ptr<Pair> p_;
};

TEST_F(GpuOps, MemoryIsZeroedAndRoundTrips) {
  auto buf = dev_->allocate(1000 * sizeof(float));
  std::vector<float> back(1000, 1.0f);
  dev_->download(back.data(), buf.get(), back.size() * sizeof(float));
  EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](float v) { return v == 0.0f; }));
  const std::vector<float> v = random_vec(1000, 1);
  dev_->upload(buf.get(), v.data(), v.size() * sizeof(float));
  auto other = dev_->allocate(v.size() * sizeof(float));
  dev_->copy(other.get(), buf.get(), v.size() * sizeof(float));
  dev_->download(back.data(), other.get(), v.size() * sizeof(float));
  EXPECT_EQ(back, v);
  // A released block is reused zeroed.
  buf.reset();
  auto again = dev_->allocate(1000 * sizeof(float));
  dev_->download(back.data(), again.get(), back.size() * sizeof(float));
  EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](float v) { return v == 0.0f; }));
}

TEST_F(GpuOps, BatchNormOps) {
  const int64_t rows = 300, cols = 70, n = rows * cols;  // cols: three blocks of 32, one partial
  const size_t x = p_->put(random_vec(n, 40, -2.0f, 3.0f)), dy = p_->put(random_vec(n, 41));
  const size_t gamma = p_->put(random_vec(cols, 42)), beta = p_->put(random_vec(cols, 43));
  const size_t mean = p_->put(std::vector<float>(cols)), var = p_->put(std::vector<float>(cols));
  const size_t y = p_->put(std::vector<float>(n)), dx = p_->put(std::vector<float>(n));
  const size_t s1 = p_->put(std::vector<float>(cols)), s2 = p_->put(std::vector<float>(cols));
  for (Backend* be : {cpu_.get(), dev_.get()}) {
    const bool c = be == cpu_.get();
    auto P = [&](size_t i) { return c ? p_->c(i) : p_->d(i); };
    be->column_moments(rows, cols, P(x), nullptr, 1.0f / rows, P(mean));
    be->column_moments(rows, cols, P(x), P(mean), 1.0f / rows, P(var));
    be->batch_norm_forward(rows, cols, P(x), P(mean), P(var), P(gamma), P(beta), 1e-3f, P(y));
    be->batch_norm_backward_reduce(rows, cols, P(dy), P(x), P(mean), P(var), 1e-3f, P(s1), P(s2));
    be->batch_norm_backward(rows, cols, P(dy), P(x), P(mean), P(var), P(gamma), 1e-3f, P(s1), P(s2),
                            1.0f / rows, P(dx));
  }
  for (size_t b : {mean, var, y, s1, s2, dx}) EXPECT_LE(p_->err(b), 1e-5);
  // No rows: zeros, so an empty replica adds nothing to a collective.
  dev_->column_moments(0, cols, p_->d(x), nullptr, 1.0f, p_->d(s1));
  const std::vector<float> z = p_->got(s1);
  EXPECT_TRUE(std::all_of(z.begin(), z.end(), [](float v) { return v == 0.0f; }));
}

TEST_F(GpuOps, ElementwiseAndBias) {
  const int64_t rows = 37, cols = 300, n = rows * cols;
  const size_t x = p_->put(random_vec(n, 2)), y = p_->put(random_vec(n, 3));
  const size_t out = p_->put(std::vector<float>(n)), bias = p_->put(random_vec(cols, 4));
  const size_t db = p_->put(random_vec(cols, 5));
  for (Backend* be : {cpu_.get(), dev_.get()}) {
    const bool c = be == cpu_.get();
    auto P = [&](size_t i) { return c ? p_->c(i) : p_->d(i); };
    be->axpy(n, 0.37f, P(x), P(y));
    be->multiply(n, P(x), P(y), P(out));
    be->bias_add(rows, cols, P(bias), P(out));
    be->bias_grad(rows, cols, P(out), P(db), true);
  }
  EXPECT_LE(p_->err(y), 1e-5);
  EXPECT_LE(p_->err(out), 1e-5);
  EXPECT_LE(p_->err(db), 1e-5);
  dev_->fill(n, p_->d(out), 2.5f);
  const std::vector<float> f = p_->got(out);
  EXPECT_TRUE(std::all_of(f.begin(), f.end(), [](float v) { return v == 2.5f; }));
  dev_->bias_grad(rows, cols, p_->d(x), p_->d(db), false);
  cpu_->bias_grad(rows, cols, p_->c(x), p_->c(db), false);
  EXPECT_LE(p_->err(db), 1e-5);
}

void gemm_case(Backend& cpu, Backend& dev, Pair& p, bool ta, bool tb, int64_t m, int64_t n,
               int64_t k, float beta, double tol) {
  // Leading dimensions wider than the matrices, to test ld handling.
  const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
  const int64_t arows = ta ? k : m, brows = tb ? n : k;
  const size_t a = p.put(random_vec(static_cast<size_t>(arows * lda), 10));
  const size_t b = p.put(random_vec(static_cast<size_t>(brows * ldb), 11));
  const size_t c = p.put(random_vec(static_cast<size_t>(m * ldc), 12));
  cpu.gemm(ta, tb, m, n, k, 0.75f, p.c(a), lda, p.c(b), ldb, beta, p.c(c), ldc);
  dev.gemm(ta, tb, m, n, k, 0.75f, p.d(a), lda, p.d(b), ldb, beta, p.d(c), ldc);
  EXPECT_LE(p.err(c), tol) << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n << " k=" << k
                           << " beta=" << beta;
}

TEST_F(GpuOps, GemmAllTransposesAndEdgeShapes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      gemm_case(*cpu_, *dev_, *p_, ta, tb, 64, 256, 784, 0.0f, 1e-5);
      gemm_case(*cpu_, *dev_, *p_, ta, tb, 33, 17, 5, 0.5f, 1e-5);
    }
  gemm_case(*cpu_, *dev_, *p_, false, false, 7, 9, 0, 0.5f, 1e-5);  // k = 0: C = beta C
  gemm_case(*cpu_, *dev_, *p_, false, false, 1, 1, 1, 0.0f, 1e-5);
}

TEST_F(GpuOps, GemmWithTf32StaysWithinItsBound) {
  dev_->set_tf32(true);
  gemm_case(*cpu_, *dev_, *p_, false, false, 512, 256, 784, 0.0f, 1e-3);
  gemm_case(*cpu_, *dev_, *p_, true, false, 784, 256, 512, 0.0f, 1e-3);
  dev_->set_tf32(false);
}

TEST_F(GpuOps, ActivationsForwardAndBackward) {
  const int64_t rows = 45;
  for (int64_t cols : {int64_t{10}, int64_t{1}, int64_t{77}}) {
    const int64_t n = rows * cols;
    for (Activation act : {Activation::linear, Activation::relu, Activation::sigmoid,
                           Activation::tanh, Activation::softmax, Activation::gelu}) {
      const size_t x = p_->put(random_vec(n, 20, -6.0f, 6.0f)), y = p_->put(std::vector<float>(n));
      const size_t dy = p_->put(random_vec(n, 21)), dx = p_->put(std::vector<float>(n));
      cpu_->activation_forward(act, rows, cols, p_->c(x), p_->c(y));
      dev_->activation_forward(act, rows, cols, p_->d(x), p_->d(y));
      cpu_->activation_backward(act, rows, cols, p_->c(x), p_->c(y), p_->c(dy), p_->c(dx));
      dev_->activation_backward(act, rows, cols, p_->d(x), p_->d(y), p_->d(dy), p_->d(dx));
      EXPECT_LE(p_->err(y), 1e-5) << "activation " << static_cast<int>(act) << " cols " << cols;
      EXPECT_LE(p_->err(dx), 1e-5) << "activation " << static_cast<int>(act) << " cols " << cols;
    }
  }
}

TEST_F(GpuOps, DropoutMasksAreBitIdenticalToTheCpu) {
  for (int64_t offset : {int64_t{0}, int64_t{3}, int64_t{17}}) {
    const int64_t rows = 29, cols = 13, n = rows * cols;
    const size_t x = p_->put(random_vec(n, 30)), mask = p_->put(std::vector<float>(n));
    const size_t y = p_->put(std::vector<float>(n)), dx = p_->put(std::vector<float>(n));
    cpu_->dropout_forward(rows, cols, 0.3f, 99, 5, 7, offset, p_->c(x), p_->c(mask), p_->c(y));
    dev_->dropout_forward(rows, cols, 0.3f, 99, 5, 7, offset, p_->d(x), p_->d(mask), p_->d(y));
    EXPECT_EQ(p_->got(mask), p_->want(mask)) << "row offset " << offset;
    EXPECT_EQ(p_->got(y), p_->want(y));
    dev_->multiply(n, p_->d(y), p_->d(mask), p_->d(dx));
    cpu_->multiply(n, p_->c(y), p_->c(mask), p_->c(dx));
    EXPECT_EQ(p_->got(dx), p_->want(dx));
  }
}

TEST_F(GpuOps, LossesAndMetricsAccumulateOnTheDevice) {
  const int64_t rows = 300, cols = 10;  // more rows than one reduction block
  std::vector<float> labels(rows), onehot(rows * cols, 0.0f),
      probs = random_vec(rows * cols, 40, 0, 1);
  for (int64_t r = 0; r < rows; ++r) {
    labels[r] = static_cast<float>((r * 7) % cols);
    onehot[r * cols + (r * 7) % cols] = 1.0f;
  }
  struct Case {
    LossKind kind;
    bool logits;
    const std::vector<float>* target;
  };
  const std::vector<float> bin = random_vec(rows * cols, 41, 0, 1);
  for (const Case& k : {Case{LossKind::sparse_categorical_crossentropy, true, &labels},
                        Case{LossKind::sparse_categorical_crossentropy, false, &labels},
                        Case{LossKind::categorical_crossentropy, true, &onehot},
                        Case{LossKind::categorical_crossentropy, false, &onehot},
                        Case{LossKind::binary_crossentropy, true, &bin},
                        Case{LossKind::binary_crossentropy, false, &bin},
                        Case{LossKind::mean_squared_error, false, &bin}}) {
    const std::vector<float> pred = k.logits ? random_vec(rows * cols, 42, -4, 4) : probs;
    const size_t pr = p_->put(pred), tg = p_->put(*k.target);
    const size_t d = p_->put(std::vector<float>(rows * cols));
    auto acc_c = cpu_->allocate(2 * sizeof(double)), acc_d = dev_->allocate(2 * sizeof(double));
    for (int rep = 0; rep < 2; ++rep) {  // accumulates: twice the sum
      cpu_->loss(k.kind, LossParams{k.logits}, rows, cols, p_->c(pr), p_->c(tg), nullptr, 0.01f,
                 p_->c(d), static_cast<double*>(acc_c.get()));
      dev_->loss(k.kind, LossParams{k.logits}, rows, cols, p_->d(pr), p_->d(tg), nullptr, 0.01f,
                 p_->d(d), static_cast<double*>(acc_d.get()));
    }
    double want = 0, got = 0;
    cpu_->download(&want, acc_c.get(), sizeof(double));
    dev_->download(&got, acc_d.get(), sizeof(double));
    EXPECT_LE(std::fabs(got - want) / std::fabs(want), 1e-5) << "loss " << static_cast<int>(k.kind);
    EXPECT_LE(p_->err(d), 1e-5) << "loss gradient " << static_cast<int>(k.kind);
  }
  struct MCase {
    MetricKind kind;
    const std::vector<float>* target;
  };
  for (const MCase& k :
       {MCase{MetricKind::sparse_categorical_accuracy, &labels},
        MCase{MetricKind::categorical_accuracy, &onehot}, MCase{MetricKind::binary_accuracy, &bin},
        MCase{MetricKind::mean_absolute_error, &bin}}) {
    const size_t pr = p_->put(probs), tg = p_->put(*k.target);
    auto acc_c = cpu_->allocate(2 * sizeof(double)), acc_d = dev_->allocate(2 * sizeof(double));
    MetricSpec ms;
    ms.kind = k.kind;
    cpu_->metric(ms, rows, cols, p_->c(pr), p_->c(tg), nullptr, static_cast<double*>(acc_c.get()));
    dev_->metric(ms, rows, cols, p_->d(pr), p_->d(tg), nullptr, static_cast<double*>(acc_d.get()));
    double want[2], got[2];
    cpu_->download(want, acc_c.get(), sizeof(want));
    dev_->download(got, acc_d.get(), sizeof(got));
    EXPECT_LE(std::fabs(got[0] - want[0]), 1e-5 * std::max(1.0, std::fabs(want[0])))
        << "metric " << static_cast<int>(k.kind);
    EXPECT_EQ(got[1], want[1]);
  }
}

TEST_F(GpuOps, ABadLabelIsAClearErrorAtTheNextSynchronisation) {
  const int64_t rows = 4, cols = 3;
  const size_t pr = p_->put(random_vec(rows * cols, 50)), tg = p_->put({0.0f, 2.0f, 3.0f, 1.0f});
  auto acc = dev_->allocate(sizeof(double));
  dev_->loss(LossKind::sparse_categorical_crossentropy, LossParams{true}, rows, cols, p_->d(pr),
             p_->d(tg), nullptr, 1.0f, nullptr, static_cast<double*>(acc.get()));
  try {
    dev_->synchronize();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value);
    EXPECT_NE(std::string(e.what()).find("label 3 at row 2 is outside 0..2"), std::string::npos)
        << e.what();
  }
  dev_->synchronize();  // reported once, then cleared
}

// The bad-label status word is read and reset on the compute stream: a bad
// batch right after a good one, and a good one right after a bad one, are
// each reported (or not) correctly, however fast they follow each other.
TEST_F(GpuOps, TheBadLabelWordIsResetInStreamOrder) {
  const int64_t rows = 4, cols = 3;
  const size_t pr = p_->put(random_vec(rows * cols, 51));
  const size_t bad = p_->put({0.0f, 2.0f, 3.0f, 1.0f}), good = p_->put({0.0f, 2.0f, 1.0f, 1.0f});
  auto acc = dev_->allocate(sizeof(double));
  for (int k = 0; k < 20; ++k) {
    const bool is_bad = k % 3 == 1;
    dev_->loss(LossKind::sparse_categorical_crossentropy, LossParams{true}, rows, cols, p_->d(pr),
               p_->d(is_bad ? bad : good), nullptr, 1.0f, nullptr, static_cast<double*>(acc.get()));
    if (is_bad) {
      EXPECT_THROW(dev_->synchronize(), Error) << "round " << k;
    } else {
      EXPECT_NO_THROW(dev_->synchronize()) << "round " << k;
    }
  }
}

TEST_F(GpuOps, OptimizerUpdates) {
  const int64_t n = 5000;
  for (int variant = 0; variant < 9; ++variant) {
    const size_t w = p_->put(random_vec(n, 60)), g = p_->put(random_vec(n, 61));
    const size_t s0 = p_->put(random_vec(n, 62, 0, 0.1f)), s1 = p_->put(random_vec(n, 63, 0, 0.1f));
    const size_t s2 = p_->put(random_vec(n, 64, 0, 0.1f));
    for (Backend* be : {cpu_.get(), dev_.get()}) {
      const bool c = be == cpu_.get();
      auto P = [&](size_t i) { return c ? p_->c(i) : p_->d(i); };
      for (int step = 0; step < 3; ++step) switch (variant) {
          case 0:
            be->sgd_update(n, P(w), P(g), nullptr, 0.1f, 0.0f, false, 0.0f);
            break;
          case 1:
            be->sgd_update(n, P(w), P(g), P(s0), 0.1f, 0.9f, false, 0.0f);
            break;
          case 2:
            be->sgd_update(n, P(w), P(g), P(s0), 0.1f, 0.9f, true, 0.004f);
            break;
          case 3:
            be->adam_update(n, P(w), P(g), P(s0), P(s1), nullptr, 0.001f, 0.9f, 0.999f, 1e-7f,
                            0.0f);
            break;
          case 4:
            be->adam_update(n, P(w), P(g), P(s0), P(s1), P(s2), 0.001f, 0.9f, 0.999f, 1e-7f,
                            0.004f);
            break;
          case 5:
            be->rmsprop_update(n, P(w), P(g), P(s0), nullptr, nullptr, 0.001f, 0.9f, 0.0f, 1e-7f,
                               0.0f);
            break;
          case 6:
            be->rmsprop_update(n, P(w), P(g), P(s0), P(s1), nullptr, 0.001f, 0.9f, 0.0f, 1e-7f,
                               0.0f);
            break;
          case 7:
            be->rmsprop_update(n, P(w), P(g), P(s0), nullptr, P(s2), 0.001f, 0.9f, 0.5f, 1e-7f,
                               0.0f);
            break;
          default:
            be->rmsprop_update(n, P(w), P(g), P(s0), P(s1), P(s2), 0.001f, 0.9f, 0.5f, 1e-7f,
                               0.004f);
            break;
        }
    }
    EXPECT_LE(p_->err(w), 1e-5) << "variant " << variant;
    EXPECT_LE(p_->err(s0), 1e-5) << "variant " << variant;
    EXPECT_LE(p_->err(s1), 1e-5) << "variant " << variant;
    EXPECT_LE(p_->err(s2), 1e-5) << "variant " << variant;
  }
}

// ---- convolution and pooling ---------------------------------------------------
// Every geometry the layers produce: strides, "same" padding, dilation,
// groups, the pointwise shortcut and 1-D; all three convolution passes and
// both poolings' passes, against the CPU. Max pooling on a constant input
// (every window ties) must give dy to the same (first) elements as the CPU.
ConvGeometry conv_geometry(int64_t h, int64_t w, int64_t c, int64_t f, int64_t kh, int64_t kw,
                           int64_t s, int64_t d, bool same, int64_t groups) {
  ConvGeometry g;
  g.in_h = h;
  g.in_w = w;
  g.in_c = c;
  g.out_c = f;
  g.k_h = kh;
  g.k_w = kw;
  g.stride_h = g.stride_w = h == 1 ? 1 : s;
  g.stride_w = s;
  g.dil_h = h == 1 ? 1 : d;
  g.dil_w = d;
  g.groups = groups;
  auto axis = [&](int64_t in, int64_t k, int64_t st, int64_t dl, int64_t* pad) {
    const int64_t span = (k - 1) * dl + 1;
    if (!same) {
      *pad = 0;
      return (in - span) / st + 1;
    }
    const int64_t out = (in + st - 1) / st;
    *pad = std::max<int64_t>((out - 1) * st + span - in, 0) / 2;
    return out;
  };
  g.out_h = axis(h, kh, g.stride_h, g.dil_h, &g.pad_top);
  g.out_w = axis(w, kw, g.stride_w, g.dil_w, &g.pad_left);
  return g;
}

TEST_F(GpuOps, ConvolutionPassesMatchTheCpu) {
  const ConvGeometry cases[] = {conv_geometry(28, 28, 1, 32, 3, 3, 1, 1, false, 1),
                                conv_geometry(13, 13, 32, 64, 3, 3, 1, 1, false, 1),
                                conv_geometry(9, 8, 6, 4, 3, 2, 2, 1, true, 2),
                                conv_geometry(9, 9, 3, 5, 3, 3, 1, 2, true, 1),
                                conv_geometry(7, 5, 8, 6, 1, 1, 1, 1, false, 1),
                                conv_geometry(1, 17, 4, 6, 1, 5, 2, 1, true, 2)};
  for (const ConvGeometry& g : cases) {
    const int64_t rows = 5, nx = rows * g.in_h * g.in_w * g.in_c;
    const int64_t ny = rows * g.out_h * g.out_w * g.out_c;
    const int64_t nw = g.k_h * g.k_w * (g.in_c / g.groups) * g.out_c;
    const size_t x = p_->put(random_vec(nx, 60)), w = p_->put(random_vec(nw, 61));
    const size_t dy = p_->put(random_vec(ny, 62)), y = p_->put(std::vector<float>(ny));
    const size_t dw = p_->put(std::vector<float>(nw)), dx = p_->put(std::vector<float>(nx));
    const size_t col = p_->put(std::vector<float>(rows * conv_columns_per_row(g) + 1));
    for (Backend* be : {cpu_.get(), dev_.get()}) {
      const bool c = be == cpu_.get();
      auto P = [&](size_t i) { return c ? p_->c(i) : p_->d(i); };
      be->conv_forward(g, rows, P(x), P(w), P(y), P(col));
      be->conv_backward_filter(g, rows, P(x), P(dy), P(dw), P(col));
      be->conv_backward_data(g, rows, P(dy), P(w), P(dx), P(col));
    }
    for (size_t b : {y, dw, dx}) EXPECT_LE(p_->err(b), 1e-5) << g.in_h << "x" << g.in_w;
    // No rows: a zero filter gradient.
    dev_->conv_backward_filter(g, 0, p_->d(x), p_->d(dy), p_->d(dw), p_->d(col));
    const std::vector<float> z = p_->got(dw);
    EXPECT_TRUE(std::all_of(z.begin(), z.end(), [](float v) { return v == 0.0f; }));
  }
}

TEST_F(GpuOps, PoolingPassesMatchTheCpu) {
  const ConvGeometry cases[] = {conv_geometry(26, 26, 32, 32, 2, 2, 2, 1, false, 1),
                                conv_geometry(7, 5, 3, 3, 3, 3, 2, 1, true, 1),
                                conv_geometry(6, 7, 4, 4, 3, 2, 1, 1, true, 1),
                                conv_geometry(1, 9, 4, 4, 1, 3, 2, 1, true, 1),
                                conv_geometry(5, 6, 7, 7, 5, 6, 1, 1, false, 1)};  // global
  for (const ConvGeometry& g : cases)
    for (bool constant : {false, true}) {
      const int64_t rows = 3, nx = rows * g.in_h * g.in_w * g.in_c;
      const int64_t ny = rows * g.out_h * g.out_w * g.in_c;
      const size_t x = p_->put(constant ? std::vector<float>(nx, 0.5f) : random_vec(nx, 70));
      const size_t dy = p_->put(random_vec(ny, 71)), y = p_->put(std::vector<float>(ny));
      const size_t dx = p_->put(std::vector<float>(nx)), ay = p_->put(std::vector<float>(ny));
      const size_t adx = p_->put(std::vector<float>(nx));
      for (Backend* be : {cpu_.get(), dev_.get()}) {
        const bool c = be == cpu_.get();
        auto P = [&](size_t i) { return c ? p_->c(i) : p_->d(i); };
        be->max_pool_forward(g, rows, P(x), P(y));
        be->max_pool_backward(g, rows, P(x), P(y), P(dy), P(dx));
        be->avg_pool_forward(g, rows, P(x), P(ay));
        be->avg_pool_backward(g, rows, P(dy), P(adx));
      }
      for (size_t b : {y, dx, ay, adx}) EXPECT_LE(p_->err(b), 1e-5) << g.in_h << "x" << g.in_w;
    }
}

TEST(GpuBackend, ABadDeviceIsAClearError) {
  try {
    make_cuda_backend(0, 4096);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device);
    EXPECT_NE(std::string(e.what()).find("gpu:0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mr
