// The CPU convolution passes on oneDNN (docs/convolution.md, "oneDNN path",
// has the measurements). Activations are NHWC (a 1-D layer is a 2-D one with
// in_h = 1, as in conv_geometry.h); Keras' kernel (k_h, k_w, in/groups, out_c)
// is oneDNN's `hwio` (one group) or `hwigo` (out_c = group * out_c/groups +
// filter). oneDNN picks its own weight layout (format_tag::any): each forward
// and backward-data reorders the kernel into it, each backward-filter reorders
// the gradient back into Keras' layout (a few microseconds against the 2-6x
// the blocked kernels gain).
//
// Chunks. A pass cuts the call's rows into chunks of a fixed size that depends
// on the geometry alone (chunk_rows(): more samples for cheaper ones) and runs
// one primitive call per chunk, on whichever team member claims it. So every
// output element is computed by the same primitive on the same data whatever
// the team size or the member: results are bit-identical for any team size
// (before, the primitives were made for a member's share of the rows and the
// filter gradient summed one partial per member, so another team size gave
// other last bits). The last chunk of a call may be short: it runs on staging
// buffers holding its rows followed by zero rows, so its outputs beyond the
// rows are dropped and every padded term of the filter gradient is 0 * 0 (a
// +0 changes no float sum).
//
// The filter gradient: the chunks are dealt to groups, chunk c to group c mod
// G with G = min(groups, chunks) (the rows and the geometry alone fix it); a
// group's chunks run in order on one member, the first writing the group's
// sum, each later one computed into the member's buffer and added to it; then
// the groups' sums are added in group order and reordered into Keras' layout.
//
// Plans. A plan holds, for one geometry, the three primitives (forward and
// backward-data made for the forward chunk, backward-filter for the filter
// chunk), the weight reorders, and one backend allocation with the blocked
// kernel, the groups' gradient sums and, per member, a gradient buffer, a
// user scratchpad (scratchpad_mode::user: oneDNN allocates nothing when it
// runs) and two staging buffers of a chunk. The plan does not depend on the
// rows, so the executor's prepare_conv() makes every plan a step needs.
//
// Threads: the passes run on the replica's ThreadTeam, each member calling
// oneDNN with one OpenMP thread (omp_set_num_threads(1) in the member's
// thread for the call, restored after). Measured (docs/convolution.md):
// letting oneDNN thread with OpenMP instead left libgomp's workers spinning
// after every call on the cores the team's next op needed (28 ms/step
// against 17 for the convnet). Results differ from the im2col path by float
// rounding only (tests/test_conv_dnnl.cpp bounds it).
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

// Chunks (see the file comment): a forward or backward-data call takes
// enough samples for about kChunkMacs multiply-adds, a backward-filter call
// about kFilterChunkMacs, in powers of two within the bounds. Few samples
// per call keep every member busy on a replica's slice of a batch; the
// bounds keep oneDNN's per-call cost (a few microseconds; the filter
// gradient's zeroing and the group sums) small. The MNIST convnet's layers
// (26x26x32 and 11x11x64 outputs) take 16 and 4 rows forward, 32 and 8 rows
// for the filter gradient.
constexpr int64_t kChunkMacs = int64_t{1} << 21;
constexpr int64_t kMinChunk = 4, kMaxChunk = 64;
constexpr int64_t kFilterChunkMacs = int64_t{1} << 22;
constexpr int64_t kMinFilterChunk = 8, kMaxFilterChunk = 128;
// Filter groups: at most this many gradient sums per plan (half as many when
// one gradient is larger than kLargeFilterBytes).
constexpr int64_t kFilterGroups = 8;
constexpr size_t kLargeFilterBytes = size_t{4} << 20;

// The smallest power of two of samples, at least `least`, whose multiply-adds
// reach `target`; at most `most`.
int64_t chunk_rows(int64_t sample_macs, int64_t target, int64_t least, int64_t most) {
  int64_t rows = least;
  while (rows < most && rows * std::max<int64_t>(sample_macs, 1) < target) rows *= 2;
  return rows;
}
}  // namespace

// What one team member needs to run a chunk: its operands' memory objects,
// argument maps, scratchpad, staging and gradient buffer.
struct DnnlSlot {
  dnnl::stream stream;
  memory src, dst;    // the forward chunk's operands
  memory fsrc, fdst;  // the filter chunk's operands
  memory dw;          // the filter chunk's gradient (a group's sum or dw_buf)
  Args fwd_args, bwd_data_args, bwd_weights_args;
  float* stage_in = nullptr;   // a chunk of input rows (x or dx)
  float* stage_out = nullptr;  // a chunk of output rows (y or dy)
  float* dw_buf = nullptr;     // one filter chunk's gradient, oneDNN's layout
};

// One geometry (see the file comment).
struct DnnlPlan {
  ConvGeometry g;
  int64_t chunk = 0;                      // rows per forward / backward-data call
  int64_t filter_chunk = 0;               // rows per backward-filter call
  int64_t groups = 0;                     // most filter groups
  int64_t in_floats = 0, out_floats = 0;  // per row
  int64_t dw_floats = 0;                  // of the gradient in oneDNN's layout
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  // Empty where oneDNN chose Keras' layout itself.
  dnnl::reorder w_to_fwd, w_to_bwd, dw_to_user;
  memory w_user, dw_user, dw_total;  // dw_total: the groups' total (group 0's sum)
  Args w_fwd_args, w_bwd_args, dw_args;
  std::vector<float*> group_sums;  // `groups` gradients, oneDNN's layout
  std::vector<DnnlSlot> slots;     // one per team member
  DeviceBuffer storage;
};

class DnnlConv {
 public:
  explicit DnnlConv(CpuBackend& be) : be_(be), engine_(dnnl::engine::kind::cpu, 0) {}

  DnnlPlan& plan(const ConvGeometry& g);
  CpuBackend& backend() { return be_; }

 private:
  std::unique_ptr<DnnlPlan> create(const ConvGeometry& g);

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

DnnlPlan& DnnlConv::plan(const ConvGeometry& g) {
  for (auto& p : plans_)
    if (same_geometry(p->g, g)) return *p;
  plans_.push_back(create(g));
  return *plans_.back();
}

void dnnl_conv_prepare(DnnlConv& c, const ConvGeometry& g, int64_t max_rows) {
  if (max_rows > 0) c.plan(g);
}

std::unique_ptr<DnnlPlan> DnnlConv::create(const ConvGeometry& g) {
  auto p = std::make_unique<DnnlPlan>();
  const int members = be_.threads();
  p->g = g;
  p->in_floats = g.in_h * g.in_w * g.in_c;
  p->out_floats = g.out_h * g.out_w * g.out_c;
  const int64_t sample_macs = p->out_floats * g.k_h * g.k_w * (g.in_c / g.groups);
  p->chunk = chunk_rows(sample_macs, kChunkMacs, kMinChunk, kMaxChunk);
  p->filter_chunk = chunk_rows(sample_macs, kFilterChunkMacs, kMinFilterChunk, kMaxFilterChunk);
  const int64_t stage_rows = std::max(p->chunk, p->filter_chunk);
  // Each member runs the primitives on one OpenMP thread: made for that.
  OneOmpThread one;
  try {
    const auto act_md = [](int64_t rows, int64_t c, int64_t h, int64_t w) {
      return memory::desc({rows, c, h, w}, memory::data_type::f32, Tag::nhwc);
    };
    const memory::desc src_md = act_md(p->chunk, g.in_c, g.in_h, g.in_w);
    const memory::desc dst_md = act_md(p->chunk, g.out_c, g.out_h, g.out_w);
    const memory::desc fsrc_md = act_md(p->filter_chunk, g.in_c, g.in_h, g.in_w);
    const memory::desc fdst_md = act_md(p->filter_chunk, g.out_c, g.out_h, g.out_w);
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

    const auto fwd_desc = [&](const memory::desc& src, const memory::desc& dst) {
      return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                             dnnl::algorithm::convolution_direct, src, w_any_md,
                                             dst, strides, dilates, pad_l, pad_r);
    };
    const dnnl::convolution_forward::primitive_desc fwd_pd(fwd_desc(src_md, dst_md), attr, engine_);
    const dnnl::convolution_backward_data::primitive_desc bd_pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_md, w_any_md,
                                              dst_md, strides, dilates, pad_l, pad_r),
        attr, engine_, fwd_pd);
    // The backward-filter's hint: a forward of the filter chunk.
    const dnnl::convolution_forward::primitive_desc ffwd_pd(fwd_desc(fsrc_md, fdst_md), attr,
                                                            engine_);
    const dnnl::convolution_backward_weights::primitive_desc bw_pd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, fsrc_md,
                                                 w_any_md, fdst_md, strides, dilates, pad_l, pad_r),
        attr, engine_, ffwd_pd);
    // The activations must stay NHWC (the layers' layout): oneDNN was given
    // nhwc, not any, so it cannot have chosen otherwise.
    MR_CHECK(fwd_pd.src_desc() == src_md && fwd_pd.dst_desc() == dst_md &&
                 bd_pd.diff_src_desc() == src_md && bw_pd.src_desc() == fsrc_md &&
                 bw_pd.diff_dst_desc() == fdst_md,
             internal, "oneDNN changed the activations' layout");

    const memory::desc w_fwd_md = fwd_pd.weights_desc(), w_bwd_md = bd_pd.weights_desc(),
                       dw_md = bw_pd.diff_weights_desc();
    const bool fwd_reorder = w_fwd_md != w_user_md, bwd_reorder = w_bwd_md != w_user_md,
               dw_reorder = dw_md != w_user_md;
    std::vector<dnnl::reorder::primitive_desc> reorders;
    if (fwd_reorder) reorders.emplace_back(engine_, w_user_md, engine_, w_fwd_md, attr);
    if (bwd_reorder) reorders.emplace_back(engine_, w_user_md, engine_, w_bwd_md, attr);
    if (dw_reorder) reorders.emplace_back(engine_, dw_md, engine_, w_user_md, attr);

    // One allocation: blocked kernels, the groups' sums, then per member its
    // gradient buffer, scratchpad and staging.
    size_t scratch =
        std::max({fwd_pd.scratchpad_desc().get_size(), bd_pd.scratchpad_desc().get_size(),
                  bw_pd.scratchpad_desc().get_size()});
    for (const auto& r : reorders) scratch = std::max(scratch, r.scratchpad_desc().get_size());
    const size_t w_fwd_bytes = fwd_reorder ? round64(w_fwd_md.get_size()) : 0;
    const size_t w_bwd_bytes = bwd_reorder ? round64(w_bwd_md.get_size()) : 0;
    const size_t dw_bytes = round64(dw_md.get_size());
    p->groups = dw_bytes > kLargeFilterBytes ? kFilterGroups / 2 : kFilterGroups;
    const size_t in_bytes = round64(sizeof(float) * stage_rows * p->in_floats);
    const size_t out_bytes = round64(sizeof(float) * stage_rows * p->out_floats);
    const size_t scratch_bytes = round64(std::max<size_t>(scratch, 1));
    const size_t slot_bytes = dw_bytes + in_bytes + out_bytes + scratch_bytes;
    p->dw_floats = static_cast<int64_t>(dw_md.get_size() / sizeof(float));
    p->storage =
        be_.allocate(w_fwd_bytes + w_bwd_bytes + dw_bytes * static_cast<size_t>(p->groups) +
                     slot_bytes * static_cast<size_t>(members));
    char* base = static_cast<char*>(p->storage.get());
    auto take = [&](size_t bytes) {
      char* q = base;
      base += bytes;
      return q;
    };
    char* w_fwd_ptr = take(w_fwd_bytes);
    char* w_bwd_ptr = take(w_bwd_bytes);
    for (int64_t q = 0; q < p->groups; ++q)
      p->group_sums.push_back(reinterpret_cast<float*>(take(dw_bytes)));

    p->fwd = dnnl::convolution_forward(fwd_pd);
    p->bwd_data = dnnl::convolution_backward_data(bd_pd);
    p->bwd_weights = dnnl::convolution_backward_weights(bw_pd);
    p->w_user = memory(w_user_md, engine_, nullptr);
    p->dw_user = memory(w_user_md, engine_, nullptr);
    p->dw_total = memory(dw_md, engine_, p->group_sums[0]);
    const memory w_fwd = fwd_reorder ? memory(w_fwd_md, engine_, w_fwd_ptr) : p->w_user;
    const memory w_bwd = bwd_reorder ? memory(w_bwd_md, engine_, w_bwd_ptr) : p->w_user;
    for (int m = 0; m < members; ++m) {
      DnnlSlot s;
      s.stream = dnnl::stream(engine_);
      s.dw_buf = reinterpret_cast<float*>(take(dw_bytes));
      s.dw = memory(dw_md, engine_, s.dw_buf);
      s.stage_in = reinterpret_cast<float*>(take(in_bytes));
      s.stage_out = reinterpret_cast<float*>(take(out_bytes));
      const memory scratch_mem(
          memory::desc({static_cast<memory::dim>(scratch_bytes)}, memory::data_type::u8, Tag::a),
          engine_, take(scratch_bytes));
      s.src = memory(src_md, engine_, nullptr);
      s.dst = memory(dst_md, engine_, nullptr);
      s.fsrc = memory(fsrc_md, engine_, nullptr);
      s.fdst = memory(fdst_md, engine_, nullptr);
      s.fwd_args = {{DNNL_ARG_SRC, s.src},
                    {DNNL_ARG_WEIGHTS, w_fwd},
                    {DNNL_ARG_DST, s.dst},
                    {DNNL_ARG_SCRATCHPAD, scratch_mem}};
      s.bwd_data_args = {{DNNL_ARG_DIFF_SRC, s.src},
                         {DNNL_ARG_WEIGHTS, w_bwd},
                         {DNNL_ARG_DIFF_DST, s.dst},
                         {DNNL_ARG_SCRATCHPAD, scratch_mem}};
      s.bwd_weights_args = {{DNNL_ARG_SRC, s.fsrc},
                            {DNNL_ARG_DIFF_WEIGHTS, s.dw},
                            {DNNL_ARG_DIFF_DST, s.fdst},
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
          p->dw_args = {{DNNL_ARG_FROM, p->dw_total},
                        {DNNL_ARG_TO, p->dw_user},
                        {DNNL_ARG_SCRATCHPAD, scratch_mem}};
        }
      }
      p->slots.push_back(std::move(s));
    }
  } catch (const dnnl::error& e) {
    fail(ErrorKind::device, "oneDNN: cannot create the convolution primitives for ", g.in_h, "x",
         g.in_w, "x", g.in_c, " -> ", g.out_h, "x", g.out_w, "x", g.out_c, " (", e.what(), ")");
  }
  return p;
}

namespace {

// Copies `rows` rows of `per_row` floats into `stage` and zeros the rest of
// its `cap` rows (the short-chunk invariant of the file comment).
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

// Runs pass(slot, n0, count) for every chunk [n0, n0 + count) of `rows`
// (chunks of p.chunk rows; the last may be shorter), each on the member that
// claims it, with that member's slot.
template <typename Pass>
void for_each_chunk(DnnlConv& c, DnnlPlan& p, int64_t rows, Pass pass) {
  const int64_t chunks = (rows + p.chunk - 1) / p.chunk;
  c.backend().team().run_parts(chunks, [&](int64_t k, int member) {
    const int64_t n0 = k * p.chunk;
    pass(p.slots[static_cast<size_t>(member)], n0, std::min(p.chunk, rows - n0));
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
  DnnlPlan& p = c.plan(g);
  p.w_user.set_data_handle(const_cast<float*>(w));
  run_reorder(p, p.w_to_fwd, p.w_fwd_args, "convolution forward (weight reorder)");
  for_each_chunk(c, p, rows, [&](DnnlSlot& s, int64_t n0, int64_t n) {
    const bool short_chunk = n < p.chunk;
    const float* xm = x + n0 * p.in_floats;
    float* ym = y + n0 * p.out_floats;
    if (short_chunk) stage(xm, n, p.chunk, p.in_floats, s.stage_in);
    s.src.set_data_handle(short_chunk ? s.stage_in : const_cast<float*>(xm));
    s.dst.set_data_handle(short_chunk ? s.stage_out : ym);
    guarded("convolution forward", [&] {
      p.fwd.execute(s.stream, s.fwd_args);
      s.stream.wait();
    });
    if (short_chunk) std::memcpy(ym, s.stage_out, sizeof(float) * n * p.out_floats);
  });
}

void dnnl_conv_backward_filter(DnnlConv& c, const ConvGeometry& g, int64_t rows, const float* x,
                               const float* dy, float* dw) {
  if (rows == 0) {
    std::fill(dw, dw + g.k_h * g.k_w * (g.in_c / g.groups) * g.out_c, 0.0f);
    return;
  }
  DnnlPlan& p = c.plan(g);
  const int64_t fc = p.filter_chunk;
  const int64_t chunks = (rows + fc - 1) / fc;
  const int64_t groups = std::min(p.groups, chunks);
  // Group q: chunks q, q + groups, ... in order on one member, into q's sum.
  c.backend().team().run_parts(groups, [&](int64_t q, int member) {
    DnnlSlot& s = p.slots[static_cast<size_t>(member)];
    float* sum = p.group_sums[static_cast<size_t>(q)];
    for (int64_t k = q; k < chunks; k += groups) {
      const int64_t n0 = k * fc, n = std::min(fc, rows - n0);
      const float* xm = x + n0 * p.in_floats;
      const float* dym = dy + n0 * p.out_floats;
      const bool short_chunk = n < fc;
      if (short_chunk) {
        stage(xm, n, fc, p.in_floats, s.stage_in);
        stage(dym, n, fc, p.out_floats, s.stage_out);
      }
      s.fsrc.set_data_handle(short_chunk ? s.stage_in : const_cast<float*>(xm));
      s.fdst.set_data_handle(short_chunk ? s.stage_out : const_cast<float*>(dym));
      s.dw.set_data_handle(k == q ? sum : s.dw_buf);  // a group's first chunk writes its sum
      guarded("convolution backward-filter", [&] {
        p.bwd_weights.execute(s.stream, s.bwd_weights_args);
        s.stream.wait();
      });
      if (k != q)
        for (int64_t i = 0; i < p.dw_floats; ++i) sum[i] += s.dw_buf[i];
    }
  });
  // The groups' sums in group order, then into Keras' layout.
  float* total = p.group_sums[0];
  for (int64_t q = 1; q < groups; ++q) {
    const float* part = p.group_sums[static_cast<size_t>(q)];
    for (int64_t i = 0; i < p.dw_floats; ++i) total[i] += part[i];
  }
  if (p.dw_to_user) {
    p.dw_user.set_data_handle(dw);
    run_reorder(p, p.dw_to_user, p.dw_args, "convolution backward-filter (gradient reorder)");
  } else {
    std::memcpy(dw, total, sizeof(float) * p.dw_floats);
  }
}

void dnnl_conv_backward_data(DnnlConv& c, const ConvGeometry& g, int64_t rows, const float* dy,
                             const float* w, float* dx) {
  if (rows == 0) return;
  DnnlPlan& p = c.plan(g);
  p.w_user.set_data_handle(const_cast<float*>(w));
  run_reorder(p, p.w_to_bwd, p.w_bwd_args, "convolution backward-data (weight reorder)");
  for_each_chunk(c, p, rows, [&](DnnlSlot& s, int64_t n0, int64_t n) {
    const bool short_chunk = n < p.chunk;
    const float* dym = dy + n0 * p.out_floats;
    float* dxm = dx + n0 * p.in_floats;
    if (short_chunk) stage(dym, n, p.chunk, p.out_floats, s.stage_out);
    s.src.set_data_handle(short_chunk ? s.stage_in : dxm);
    s.dst.set_data_handle(short_chunk ? s.stage_out : const_cast<float*>(dym));
    guarded("convolution backward-data", [&] {
      p.bwd_data.execute(s.stream, s.bwd_data_args);
      s.stream.wait();
    });
    if (short_chunk) std::memcpy(dxm, s.stage_in, sizeof(float) * n * p.in_floats);
  });
}

}  // namespace mr

#endif  // MR_WITH_DNNL
