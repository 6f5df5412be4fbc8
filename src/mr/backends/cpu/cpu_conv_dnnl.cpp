// The CPU convolution passes on oneDNN (docs/convolution.md, "oneDNN path",
// has the measurements). Activations are NHWC (a 1-D layer is a 2-D one with
// in_h = 1, as in conv_geometry.h); Keras' kernel (k_h, k_w, in/groups, out_c)
// is oneDNN's `hwio` (one group) or `hwigo` (out_c = group * out_c/groups +
// filter). oneDNN picks its own weight layout (format_tag::any): each forward
// and backward-data reorders the kernel into it, each backward-filter reorders
// the gradient back into Keras' layout (a few microseconds against the 2-6x
// the blocked kernels gain).
//
// Plans. A plan holds, for one geometry and a row count R, the three
// primitives (made for M = ceil(R / team size) rows: each team member runs
// them on its share of the samples), the weight reorders, and one backend
// allocation with the blocked kernel (forward's and backward-data's) and, per
// member, its filter gradient in oneDNN's layout, a user scratchpad
// (scratchpad_mode::user: oneDNN allocates nothing when it runs) and two
// staging buffers of M rows (input-sized and output-sized). A call with
// `rows` uses the plan with R == rows, else the smallest plan with R > rows,
// else creates one with R == rows. So a training loop creates its plans in
// its first step (a replica's slice of a full batch is the largest it gets),
// and a later short batch (the epoch's last one, or a smaller slice) runs in
// that plan without allocating; only a call with more rows than any plan (a
// larger evaluation batch) creates one.
//
// Invariant of a short share (a member given fewer than M rows): the staged
// operands hold its rows followed by zero rows up to M, so the tail's
// outputs are dropped and every tail term of the filter gradient is 0 * 0:
// the member's gradient is exactly the sum over its real rows (adding +0
// changes no float sum). Forward and backward-data are per sample, so the
// padding cannot reach the real rows. The filter gradient is the members'
// gradients summed in member order, then reordered into Keras' layout.
//
// Threads: the passes run on the replica's ThreadTeam, each member calling
// oneDNN with one OpenMP thread (omp_set_num_threads(1) in the member's
// thread for the call, restored after). Measured (docs/convolution.md):
// letting oneDNN thread with OpenMP instead left libgomp's workers spinning
// after every call on the cores the team's next op needed (28 ms/step
// against 17 for the convnet). Results are deterministic for a given team
// size; they differ from the im2col path by float rounding only
// (tests/test_conv_dnnl.cpp bounds it).
#include "build_config.h"

#if MR_WITH_DNNL

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_conv_dnnl.h"
#include "core/error.h"

namespace mr {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;

bool same_geometry(const ConvGeometry& a, const ConvGeometry& b) {
  return a.in_h == b.in_h && a.in_w == b.in_w && a.in_c == b.in_c && a.out_h == b.out_h &&
         a.out_w == b.out_w && a.out_c == b.out_c && a.k_h == b.k_h && a.k_w == b.k_w &&
         a.stride_h == b.stride_h && a.stride_w == b.stride_w && a.dil_h == b.dil_h &&
         a.dil_w == b.dil_w && a.pad_top == b.pad_top && a.pad_left == b.pad_left &&
         a.groups == b.groups;
}

size_t round64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// The calling thread's OpenMP thread count is 1 for the guard's lifetime.
class OneOmpThread {
 public:
  OneOmpThread() : before_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOmpThread() { omp_set_num_threads(before_); }
  OneOmpThread(const OneOmpThread&) = delete;
  OneOmpThread& operator=(const OneOmpThread&) = delete;

 private:
  int before_;
};

// Zeros after the last element so that oneDNN's output size formula,
// (in + pad_l + pad_r - extent) / stride + 1, gives out (valid padding may
// leave input unread at the end: pad_r 0 then).
int64_t pad_after(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dil, int64_t before) {
  return std::max<int64_t>(0, (out - 1) * stride + (k - 1) * dil + 1 - in - before);
}

}  // namespace

// What one team member needs to run its share: its operands' memory
// objects, argument maps, scratchpad, staging and its part of dW.
struct DnnlSlot {
  dnnl::stream stream;
  memory src, dst, dw;  // dw: the member's filter gradient in oneDNN's layout
  Args fwd_args, bwd_data_args, bwd_weights_args;
  float* stage_in = nullptr;   // member_rows rows of the input (x or dx)
  float* stage_out = nullptr;  // member_rows rows of the output (y or dy)
};

// One geometry at R rows (see the file comment).
struct DnnlPlan {
  ConvGeometry g;
  int64_t rows = 0, member_rows = 0;
  int64_t in_floats = 0, out_floats = 0;  // per row
  int64_t dw_floats = 0;                  // of the gradient in oneDNN's layout
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  // Empty where oneDNN chose Keras' layout itself.
  dnnl::reorder w_to_fwd, w_to_bwd, dw_to_user;
  memory w_user, dw_user;
  Args w_fwd_args, w_bwd_args, dw_args;
  std::vector<DnnlSlot> slots;  // one per team member
  DeviceBuffer storage;
};

class DnnlConv {
 public:
  explicit DnnlConv(CpuBackend& be) : be_(be), engine_(dnnl::engine::kind::cpu, 0) {}

  DnnlPlan& plan(const ConvGeometry& g, int64_t rows);
  CpuBackend& backend() { return be_; }

 private:
  std::unique_ptr<DnnlPlan> create(const ConvGeometry& g, int64_t rows);

  CpuBackend& be_;
  dnnl::engine engine_;
  std::vector<std::unique_ptr<DnnlPlan>> plans_;
};

void DnnlConvDelete::operator()(DnnlConv* p) const noexcept { std::default_delete<DnnlConv>()(p); }

DnnlConvPtr make_dnnl_conv(CpuBackend& be) {
  try {
    return DnnlConvPtr(std::make_unique<DnnlConv>(be).release());
  } catch (const dnnl::error& e) {
    fail(ErrorKind::device, "oneDNN: cannot create a CPU engine (", e.what(), ")");
  }
}

DnnlPlan& DnnlConv::plan(const ConvGeometry& g, int64_t rows) {
  DnnlPlan* best = nullptr;
  for (auto& p : plans_) {
    if (!same_geometry(p->g, g) || p->rows < rows) continue;
    if (best == nullptr || p->rows < best->rows) best = p.get();
  }
  if (best != nullptr) return *best;
  plans_.push_back(create(g, rows));
  return *plans_.back();
}

void dnnl_conv_prepare(DnnlConv& c, const ConvGeometry& g, int64_t max_rows) {
  if (max_rows > 0) c.plan(g, max_rows);
}

std::unique_ptr<DnnlPlan> DnnlConv::create(const ConvGeometry& g, int64_t rows) {
  auto p = std::make_unique<DnnlPlan>();
  const int members = be_.threads();
  p->g = g;
  p->rows = rows;
  p->member_rows = (rows + members - 1) / members;
  p->in_floats = g.in_h * g.in_w * g.in_c;
  p->out_floats = g.out_h * g.out_w * g.out_c;
  // Each member runs the primitives on one OpenMP thread: made for that.
  OneOmpThread one;
  try {
    const int64_t mr = p->member_rows;
    const memory::desc src_md({mr, g.in_c, g.in_h, g.in_w}, memory::data_type::f32, Tag::nhwc);
    const memory::desc dst_md({mr, g.out_c, g.out_h, g.out_w}, memory::data_type::f32, Tag::nhwc);
    const bool grouped = g.groups > 1;
    const memory::dims wdims =
        grouped ? memory::dims{g.groups, g.out_c / g.groups, g.in_c / g.groups, g.k_h, g.k_w}
                : memory::dims{g.out_c, g.in_c, g.k_h, g.k_w};
    const memory::desc w_user_md(wdims, memory::data_type::f32, grouped ? Tag::hwigo : Tag::hwio);
    const memory::desc w_any_md(wdims, memory::data_type::f32, Tag::any);
    const memory::dims strides{g.stride_h, g.stride_w};
    const memory::dims dilates{g.dil_h - 1, g.dil_w - 1};  // oneDNN counts the gaps
    const memory::dims pad_l{g.pad_top, g.pad_left};
    const memory::dims pad_r{pad_after(g.in_h, g.out_h, g.k_h, g.stride_h, g.dil_h, g.pad_top),
                             pad_after(g.in_w, g.out_w, g.k_w, g.stride_w, g.dil_w, g.pad_left)};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

    const dnnl::convolution_forward::primitive_desc fwd_pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct, src_md, w_any_md,
                                        dst_md, strides, dilates, pad_l, pad_r),
        attr, engine_);
    const dnnl::convolution_backward_data::primitive_desc bd_pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_md, w_any_md,
                                              dst_md, strides, dilates, pad_l, pad_r),
        attr, engine_, fwd_pd);
    const dnnl::convolution_backward_weights::primitive_desc bw_pd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_md,
                                                 w_any_md, dst_md, strides, dilates, pad_l, pad_r),
        attr, engine_, fwd_pd);
    // The activations must stay NHWC (the layers' layout): oneDNN was given
    // nhwc, not any, so it cannot have chosen otherwise.
    MR_CHECK(fwd_pd.src_desc() == src_md && fwd_pd.dst_desc() == dst_md &&
                 bd_pd.diff_src_desc() == src_md && bw_pd.diff_dst_desc() == dst_md,
             internal, "oneDNN changed the activations' layout");

    const memory::desc w_fwd_md = fwd_pd.weights_desc(), w_bwd_md = bd_pd.weights_desc(),
                       dw_md = bw_pd.diff_weights_desc();
    const bool fwd_reorder = w_fwd_md != w_user_md, bwd_reorder = w_bwd_md != w_user_md,
               dw_reorder = dw_md != w_user_md;
    std::vector<dnnl::reorder::primitive_desc> reorders;
    if (fwd_reorder) reorders.emplace_back(engine_, w_user_md, engine_, w_fwd_md, attr);
    if (bwd_reorder) reorders.emplace_back(engine_, w_user_md, engine_, w_bwd_md, attr);
    if (dw_reorder) reorders.emplace_back(engine_, dw_md, engine_, w_user_md, attr);

    // One allocation: blocked kernels, then per member its gradient,
    // scratchpad and staging.
    size_t scratch =
        std::max({fwd_pd.scratchpad_desc().get_size(), bd_pd.scratchpad_desc().get_size(),
                  bw_pd.scratchpad_desc().get_size()});
    for (const auto& r : reorders) scratch = std::max(scratch, r.scratchpad_desc().get_size());
    const size_t w_fwd_bytes = fwd_reorder ? round64(w_fwd_md.get_size()) : 0;
    const size_t w_bwd_bytes = bwd_reorder ? round64(w_bwd_md.get_size()) : 0;
    const size_t dw_bytes = round64(dw_md.get_size());
    const size_t in_bytes = round64(sizeof(float) * mr * p->in_floats);
    const size_t out_bytes = round64(sizeof(float) * mr * p->out_floats);
    const size_t scratch_bytes = round64(std::max<size_t>(scratch, 1));
    const size_t slot_bytes = dw_bytes + in_bytes + out_bytes + scratch_bytes;
    p->dw_floats = static_cast<int64_t>(dw_md.get_size() / sizeof(float));
    p->storage = be_.allocate(w_fwd_bytes + w_bwd_bytes + slot_bytes * members);
    char* base = static_cast<char*>(p->storage.get());
    auto take = [&](size_t bytes) {
      char* q = base;
      base += bytes;
      return q;
    };
    char* w_fwd_ptr = take(w_fwd_bytes);
    char* w_bwd_ptr = take(w_bwd_bytes);

    p->fwd = dnnl::convolution_forward(fwd_pd);
    p->bwd_data = dnnl::convolution_backward_data(bd_pd);
    p->bwd_weights = dnnl::convolution_backward_weights(bw_pd);
    p->w_user = memory(w_user_md, engine_, nullptr);
    p->dw_user = memory(w_user_md, engine_, nullptr);
    const memory w_fwd = fwd_reorder ? memory(w_fwd_md, engine_, w_fwd_ptr) : p->w_user;
    const memory w_bwd = bwd_reorder ? memory(w_bwd_md, engine_, w_bwd_ptr) : p->w_user;
    for (int m = 0; m < members; ++m) {
      DnnlSlot s;
      s.stream = dnnl::stream(engine_);
      s.dw = memory(dw_md, engine_, take(dw_bytes));
      s.stage_in = reinterpret_cast<float*>(take(in_bytes));
      s.stage_out = reinterpret_cast<float*>(take(out_bytes));
      const memory scratch_mem(
          memory::desc({static_cast<memory::dim>(scratch_bytes)}, memory::data_type::u8, Tag::a),
          engine_, take(scratch_bytes));
      s.src = memory(src_md, engine_, nullptr);
      s.dst = memory(dst_md, engine_, nullptr);
      s.fwd_args = {{DNNL_ARG_SRC, s.src},
                    {DNNL_ARG_WEIGHTS, w_fwd},
                    {DNNL_ARG_DST, s.dst},
                    {DNNL_ARG_SCRATCHPAD, scratch_mem}};
      s.bwd_data_args = {{DNNL_ARG_DIFF_SRC, s.src},
                         {DNNL_ARG_WEIGHTS, w_bwd},
                         {DNNL_ARG_DIFF_DST, s.dst},
                         {DNNL_ARG_SCRATCHPAD, scratch_mem}};
      s.bwd_weights_args = {{DNNL_ARG_SRC, s.src},
                            {DNNL_ARG_DIFF_WEIGHTS, s.dw},
                            {DNNL_ARG_DIFF_DST, s.dst},
                            {DNNL_ARG_SCRATCHPAD, scratch_mem}};
      if (m == 0) {
        // The reorders run on member 0's stream and scratchpad, outside the
        // members' work.
        size_t next = 0;
        if (fwd_reorder) {
          p->w_to_fwd = dnnl::reorder(reorders[next++]);
          p->w_fwd_args = {
              {DNNL_ARG_FROM, p->w_user}, {DNNL_ARG_TO, w_fwd}, {DNNL_ARG_SCRATCHPAD, scratch_mem}};
        }
        if (bwd_reorder) {
          p->w_to_bwd = dnnl::reorder(reorders[next++]);
          p->w_bwd_args = {
              {DNNL_ARG_FROM, p->w_user}, {DNNL_ARG_TO, w_bwd}, {DNNL_ARG_SCRATCHPAD, scratch_mem}};
        }
        if (dw_reorder) {
          p->dw_to_user = dnnl::reorder(reorders[next++]);
          p->dw_args = {
              {DNNL_ARG_FROM, s.dw}, {DNNL_ARG_TO, p->dw_user}, {DNNL_ARG_SCRATCHPAD, scratch_mem}};
        }
      }
      p->slots.push_back(std::move(s));
    }
  } catch (const dnnl::error& e) {
    fail(ErrorKind::device, "oneDNN: cannot create the convolution primitives for ", g.in_h, "x",
         g.in_w, "x", g.in_c, " -> ", g.out_h, "x", g.out_w, "x", g.out_c, " at ", rows, " rows (",
         e.what(), ")");
  }
  return p;
}

namespace {

// Copies `rows` rows of `per_row` floats into `stage` and zeros the rest of
// its `cap` rows (the short-call invariant of the file comment).
void stage(const float* src, int64_t rows, int64_t cap, int64_t per_row, float* stage) {
  std::memcpy(stage, src, sizeof(float) * rows * per_row);
  std::memset(stage + rows * per_row, 0, sizeof(float) * (cap - rows) * per_row);
}

// Runs f() on one OpenMP thread, mapping oneDNN's exceptions to mr::Error.
// The thread's OpenMP setting is restored after (the replica thread may be
// R's, where other packages use OpenMP).
template <typename F>
void guarded(const char* op, F&& f) {
  OneOmpThread one;
  try {
    f();
  } catch (const dnnl::error& e) {
    fail(ErrorKind::device, "oneDNN ", op, " failed: ", e.what());
  }
}

// Member m's samples [n0, n1): consecutive shares of member_rows rows.
void share(const DnnlPlan& p, int64_t rows, int member, int64_t* n0, int64_t* n1) {
  const int64_t per =
      (rows + static_cast<int64_t>(p.slots.size()) - 1) / static_cast<int64_t>(p.slots.size());
  *n0 = std::min<int64_t>(rows, member * per);
  *n1 = std::min<int64_t>(rows, *n0 + per);
}

// Runs pass(slot, n0, count, short_share) on every team member whose share
// [n0, n0 + count) of `rows` is not empty. A short share (fewer rows than the
// plan's member_rows, for which the primitives were made) runs on the slot's
// staging buffers.
template <typename Pass>
void for_each_share(DnnlConv& c, DnnlPlan& p, int64_t rows, Pass pass) {
  c.backend().team().run([&](int m, int) {
    int64_t n0, n1;
    share(p, rows, m, &n0, &n1);
    if (n0 == n1) return;
    pass(p.slots[static_cast<size_t>(m)], n0, n1 - n0, n1 - n0 < p.member_rows);
  });
}

// A reorder (when the plan has one) run at once on member 0's stream.
void run_reorder(DnnlPlan& p, dnnl::reorder& r, Args& args, const char* what) {
  guarded(what, [&] {
    if (r) r.execute(p.slots[0].stream, args);
    p.slots[0].stream.wait();
  });
}

}  // namespace

void dnnl_conv_forward(DnnlConv& c, const ConvGeometry& g, int64_t rows, const float* x,
                       const float* w, float* y) {
  if (rows == 0) return;
  DnnlPlan& p = c.plan(g, rows);
  p.w_user.set_data_handle(const_cast<float*>(w));
  run_reorder(p, p.w_to_fwd, p.w_fwd_args, "convolution forward (weight reorder)");
  for_each_share(c, p, rows, [&](DnnlSlot& s, int64_t n0, int64_t n, bool short_share) {
    const float* xm = x + n0 * p.in_floats;
    float* ym = y + n0 * p.out_floats;
    if (short_share) stage(xm, n, p.member_rows, p.in_floats, s.stage_in);
    s.src.set_data_handle(short_share ? s.stage_in : const_cast<float*>(xm));
    s.dst.set_data_handle(short_share ? s.stage_out : ym);
    guarded("convolution forward", [&] {
      p.fwd.execute(s.stream, s.fwd_args);
      s.stream.wait();
    });
    if (short_share) std::memcpy(ym, s.stage_out, sizeof(float) * n * p.out_floats);
  });
}

void dnnl_conv_backward_filter(DnnlConv& c, const ConvGeometry& g, int64_t rows, const float* x,
                               const float* dy, float* dw) {
  if (rows == 0) {
    std::fill(dw, dw + g.k_h * g.k_w * (g.in_c / g.groups) * g.out_c, 0.0f);
    return;
  }
  DnnlPlan& p = c.plan(g, rows);
  for_each_share(c, p, rows, [&](DnnlSlot& s, int64_t n0, int64_t n, bool short_share) {
    const float* xm = x + n0 * p.in_floats;
    const float* dym = dy + n0 * p.out_floats;
    if (short_share) {
      stage(xm, n, p.member_rows, p.in_floats, s.stage_in);
      stage(dym, n, p.member_rows, p.out_floats, s.stage_out);
    }
    s.src.set_data_handle(short_share ? s.stage_in : const_cast<float*>(xm));
    s.dst.set_data_handle(short_share ? s.stage_out : const_cast<float*>(dym));
    guarded("convolution backward-filter", [&] {
      p.bwd_weights.execute(s.stream, s.bwd_weights_args);
      s.stream.wait();
    });
  });
  // The members' gradients summed in member order (member 0's share is never
  // empty when rows > 0), then into Keras' layout.
  float* acc = static_cast<float*>(p.slots[0].dw.get_data_handle());
  for (size_t m = 1; m < p.slots.size(); ++m) {
    int64_t n0, n1;
    share(p, rows, static_cast<int>(m), &n0, &n1);
    if (n0 == n1) break;
    const float* part = static_cast<const float*>(p.slots[m].dw.get_data_handle());
    for (int64_t i = 0; i < p.dw_floats; ++i) acc[i] += part[i];
  }
  if (p.dw_to_user) {
    p.dw_user.set_data_handle(dw);
    run_reorder(p, p.dw_to_user, p.dw_args, "convolution backward-filter (gradient reorder)");
  } else {
    std::memcpy(dw, acc, sizeof(float) * p.dw_floats);
  }
}

void dnnl_conv_backward_data(DnnlConv& c, const ConvGeometry& g, int64_t rows, const float* dy,
                             const float* w, float* dx) {
  if (rows == 0) return;
  DnnlPlan& p = c.plan(g, rows);
  p.w_user.set_data_handle(const_cast<float*>(w));
  run_reorder(p, p.w_to_bwd, p.w_bwd_args, "convolution backward-data (weight reorder)");
  for_each_share(c, p, rows, [&](DnnlSlot& s, int64_t n0, int64_t n, bool short_share) {
    const float* dym = dy + n0 * p.out_floats;
    float* dxm = dx + n0 * p.in_floats;
    if (short_share) stage(dym, n, p.member_rows, p.out_floats, s.stage_out);
    s.src.set_data_handle(short_share ? s.stage_in : dxm);
    s.dst.set_data_handle(short_share ? s.stage_out : const_cast<float*>(dym));
    guarded("convolution backward-data", [&] {
      p.bwd_data.execute(s.stream, s.bwd_data_args);
      s.stream.wait();
    });
    if (short_share) std::memcpy(dxm, s.stage_in, sizeof(float) * n * p.in_floats);
  });
}

}  // namespace mr

#endif  // MR_WITH_DNNL
