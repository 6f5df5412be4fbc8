// Op-level timing of the two convolutions of keras' "Simple MNIST convnet" at
// batch 128 (28x28x1 -> Conv2D 32 3x3 -> MaxPool 2 -> Conv2D 64 3x3), forward
// (with bias), backward-data and backward-filter (with the bias gradient):
//   mirrored's CPU backend (CpuBackend::conv_*: im2col + its gemm, 2 team
//     threads), NHWC, the kernel in Keras' (kh, kw, in, out) layout;
//   oneDNN (Debian's libdnnl, OpenMP runtime, OMP_NUM_THREADS=2), NHWC
//     activations, weights either in Keras' layout (hwio) or in the layout
//     oneDNN prefers (format_tag::any; the reorder from hwio is then timed
//     as part of each pass that reads the weights).
// bench/conv_ops/run.sh builds and runs it next to bench/conv_ops/torch_conv.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"

namespace {

struct Geo {
  int n, h, w, c, kh, kw, f, oh, ow;
};

double time_ms(const std::function<void()>& fn, int reps) {
  fn();
  fn();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// ---- mirrored's CPU backend (im2col + gemm, backends/cpu/cpu_conv.cpp, or
// oneDNN, backends/cpu/cpu_conv_dnnl.cpp, when build_config.h says so) -------
void bench_mirrored(const Geo& g, int reps, bool dnnl) {
  mr::CpuBackend be(0, 2);
#if MR_WITH_DNNL
  be.set_conv_dnnl(dnnl);
#else
  if (dnnl) return;
#endif
  mr::ConvGeometry cg;
  cg.in_h = g.h;
  cg.in_w = g.w;
  cg.in_c = g.c;
  cg.out_h = g.oh;
  cg.out_w = g.ow;
  cg.out_c = g.f;
  cg.k_h = g.kh;
  cg.k_w = g.kw;
  const int64_t M = int64_t(g.n) * g.oh * g.ow, K = int64_t(g.kh) * g.kw * g.c;
  std::vector<float> x(size_t(g.n) * g.h * g.w * g.c, 0.5f), w(size_t(K) * g.f, 0.01f),
      b(g.f, 0.1f), y(size_t(M) * g.f), dy(size_t(M) * g.f, 0.02f), dx(x.size()), dw(w.size()),
      db(g.f), col(size_t(g.n) * mr::conv_columns_per_row(cg));
  double fwd = time_ms(
      [&] {
        be.conv_forward(cg, g.n, x.data(), w.data(), y.data(), col.data());
        be.bias_add(M, g.f, b.data(), y.data());
      },
      reps);
  // Backward-filter reads the columns forward kept (no second im2col).
  double bwf = time_ms(
      [&] {
        be.conv_backward_filter(cg, g.n, x.data(), dy.data(), dw.data(), col.data());
        be.bias_grad(M, g.f, dy.data(), db.data(), false);
      },
      reps);
  double bwd = time_ms(
      [&] { be.conv_backward_data(cg, g.n, dy.data(), w.data(), dx.data(), col.data()); }, reps);
  std::printf(
      "| mirrored CPU backend: %s | %dx%dx%d -> %d | %.2f | %.2f | %.2f |\n",
      dnnl ? "oneDNN path (weights `any` + reorders, bias ops included)"
           : "im2col + gemm (NHWC, hwio)",
      g.h, g.w, g.c, g.f, fwd, bwd, bwf);
}

// ---- oneDNN ------------------------------------------------------------------
void bench_dnnl(const Geo& g, int reps, bool any_weights) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  memory::dims src_d{g.n, g.c, g.h, g.w}, w_d{g.f, g.c, g.kh, g.kw}, b_d{g.f},
      dst_d{g.n, g.f, g.oh, g.ow}, st{1, 1}, pad{0, 0};
  memory::desc src_md(src_d, dt::f32, tag::nhwc), dst_md(dst_d, dt::f32, tag::nhwc),
      b_md(b_d, dt::f32, tag::x), w_user(w_d, dt::f32, tag::hwio),
      w_md(w_d, dt::f32, any_weights ? tag::any : tag::hwio);
  convolution_forward::desc fd(prop_kind::forward_training, algorithm::convolution_direct, src_md,
                               w_md, b_md, dst_md, st, pad, pad);
  convolution_forward::primitive_desc fpd(fd, eng);
  convolution_backward_data::desc bdd(algorithm::convolution_direct, src_md, w_md, dst_md, st, pad,
                                      pad);
  convolution_backward_data::primitive_desc bdpd(bdd, eng, fpd);
  convolution_backward_weights::desc bwd(algorithm::convolution_direct, src_md, w_md, b_md, dst_md,
                                         st, pad, pad);
  convolution_backward_weights::primitive_desc bwpd(bwd, eng, fpd);
  memory src(src_md, eng), dst(dst_md, eng), bias(b_md, eng), wu(w_user, eng), dsrc(src_md, eng),
      ddst(dst_md, eng), dbias(b_md, eng), dwu(w_user, eng);
  for (auto* m : {&src, &ddst, &wu}) {
    float* p = static_cast<float*>(m->get_data_handle());
    std::fill(p, p + m->get_desc().get_size() / 4, 0.02f);
  }
  memory wf(fpd.weights_desc(), eng), wb(bdpd.weights_desc(), eng),
      dwf(bwpd.diff_weights_desc(), eng);
  convolution_forward fwd_p(fpd);
  convolution_backward_data bd_p(bdpd);
  convolution_backward_weights bw_p(bwpd);
  const bool rf = fpd.weights_desc() != w_user, rb = bdpd.weights_desc() != w_user,
             rw = bwpd.diff_weights_desc() != w_user;
  double fwd = time_ms(
      [&] {
        if (rf) reorder(wu, wf).execute(s, wu, wf);
        fwd_p.execute(s, {{DNNL_ARG_SRC, src},
                          {DNNL_ARG_WEIGHTS, rf ? wf : wu},
                          {DNNL_ARG_BIAS, bias},
                          {DNNL_ARG_DST, dst}});
        s.wait();
      },
      reps);
  double bdt = time_ms(
      [&] {
        if (rb) reorder(wu, wb).execute(s, wu, wb);
        bd_p.execute(s, {{DNNL_ARG_DIFF_DST, ddst},
                         {DNNL_ARG_WEIGHTS, rb ? wb : wu},
                         {DNNL_ARG_DIFF_SRC, dsrc}});
        s.wait();
      },
      reps);
  double bwt = time_ms(
      [&] {
        bw_p.execute(s, {{DNNL_ARG_SRC, src},
                         {DNNL_ARG_DIFF_DST, ddst},
                         {DNNL_ARG_DIFF_WEIGHTS, rw ? dwf : dwu},
                         {DNNL_ARG_DIFF_BIAS, dbias}});
        if (rw) reorder(dwf, dwu).execute(s, dwf, dwu);
        s.wait();
      },
      reps);
  std::printf("| oneDNN %s (%s) | %dx%dx%d -> %d | %.2f | %.2f | %.2f |\n",
              DNNL_VERSION_MAJOR == 2 ? "2.x" : "",
              any_weights ? "NHWC, weights any + reorder" : "NHWC, hwio", g.h, g.w, g.c, g.f, fwd,
              bdt, bwt);
  std::fprintf(stderr, "oneDNN impl fwd=%s bwd_data=%s bwd_w=%s\n", fpd.impl_info_str(),
               bdpd.impl_info_str(), bwpd.impl_info_str());
}

}  // namespace

int main() {
  const int reps = 30;
  const Geo conv1{128, 28, 28, 1, 3, 3, 32, 26, 26};
  const Geo conv2{128, 13, 13, 32, 3, 3, 64, 11, 11};
  std::printf("| implementation | conv | forward ms | backward-data ms | backward-filter ms |\n");
  std::printf("| --- | --- | ---: | ---: | ---: |\n");
  for (const Geo& g : {conv1, conv2}) {
    bench_mirrored(g, reps, false);
    bench_mirrored(g, reps, true);
    bench_dnnl(g, reps, false);
    bench_dnnl(g, reps, true);
  }
  return 0;
}
