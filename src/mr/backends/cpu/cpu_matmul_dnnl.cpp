// bf16 matmul on oneDNN (cpu_matmul_dnnl.h). One primitive per (trans_a,
// trans_b, beta in {0, 1}) with runtime dimensions and strides, so that every
// row count (a replica's share, the epoch's short last batch) runs in the
// primitives made before the first step; alpha is a runtime output scale.
// The scratchpad is ours (scratchpad_mode::user), sized for the largest of
// the primitives' needs when they are made.
#include "build_config.h"

#if MR_WITH_DNNL

#include <omp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "backends/cpu/cpu_matmul_dnnl.h"
#include "core/error.h"

namespace mr {

namespace {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;
constexpr memory::dim kRt = DNNL_RUNTIME_DIM_VAL;

// The calling thread's OpenMP thread count is `n` for the guard's lifetime.
class OmpThreads {
 public:
  explicit OmpThreads(int n) : before_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(before_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int before_;
};

Dt dnnl_type(DType t) { return t == DType::bf16 ? Dt::bf16 : Dt::f16; }

}  // namespace

class DnnlMatmul {
 public:
  explicit DnnlMatmul(DType t) : t_(t), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    // Runtime dimensions with dense row-major layouts (a transposed operand
    // is "ba"): oneDNN 2.6 runs those on its jit gemm, but runtime strides
    // only on its reference loop.
    const memory::desc out({kRt, kRt}, Dt::f32, Tag::ab);
    size_t scratch = 0;
    for (int i = 0; i < 8; ++i) {
      const memory::desc a({kRt, kRt}, dnnl_type(t), (i & 1) ? Tag::ba : Tag::ab);
      const memory::desc b({kRt, kRt}, dnnl_type(t), (i & 2) ? Tag::ba : Tag::ab);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      attr.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
      if (i & 4) {
        dnnl::post_ops po;
        po.append_sum(1.0f);
        attr.set_post_ops(po);
      }
      try {
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, out), attr, engine_);
        scratch = std::max(scratch, pd.scratchpad_desc().get_size());
        prims_[static_cast<size_t>(i)] = dnnl::matmul(pd);
      } catch (const dnnl::error& e) {
        fail(ErrorKind::device, "oneDNN: cannot create a ", dtype_name(t), " matmul primitive (",
             e.what(), ")");
      }
    }
    scratch_.resize(scratch + 64);
    scratch_mem_ = memory({{static_cast<memory::dim>(scratch_.size())}, Dt::u8, {1}}, engine_,
                          scratch_.data());
    scale_mem_ = memory({{1}, Dt::f32, {1}}, engine_, &alpha_);
  }

  bool run(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const void* a,
           int64_t lda, const void* b, int64_t ldb, float beta, float* c, int64_t ldc,
           int threads) {
    if (beta != 0.0f && beta != 1.0f) return false;
    // Dense operands only (see the constructor).
    if (lda != (ta ? m : k) || ldb != (tb ? k : n) || ldc != n) return false;
    const int i = (ta ? 1 : 0) | (tb ? 2 : 0) | (beta != 0.0f ? 4 : 0);
    const memory::desc a_md({m, k}, dnnl_type(t_), ta ? Tag::ba : Tag::ab);
    const memory::desc b_md({k, n}, dnnl_type(t_), tb ? Tag::ba : Tag::ab);
    const memory::desc c_md({m, n}, Dt::f32, Tag::ab);
    alpha_ = alpha;
    // One OpenMP thread: oneDNN's OpenMP team next to the replica's own
    // thread team oversubscribes the cores (measured: 2 threads ran the
    // vignette's products 20-50x slower on a loaded 2-core Sapphire Rapids
    // than 1). Splitting the rows over the team's members, as the
    // convolutions do, is the way to use them all.
    (void)threads;
    const OmpThreads guard(1);
    prims_[static_cast<size_t>(i)].execute(
        stream_, {{DNNL_ARG_SRC, memory(a_md, engine_, const_cast<void*>(a))},
                  {DNNL_ARG_WEIGHTS, memory(b_md, engine_, const_cast<void*>(b))},
                  {DNNL_ARG_DST, memory(c_md, engine_, c)},
                  {DNNL_ARG_ATTR_OUTPUT_SCALES, scale_mem_},
                  {DNNL_ARG_SCRATCHPAD, scratch_mem_}});
    stream_.wait();
    return true;
  }

 private:
  DType t_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::array<dnnl::matmul, 8> prims_;
  std::vector<uint8_t> scratch_;
  memory scratch_mem_, scale_mem_;
  float alpha_ = 1.0f;
};

void DnnlMatmulDelete::operator()(DnnlMatmul* p) const noexcept { delete p; }

bool dnnl_matmul_native(DType t) {
  if (t != DType::bf16) return false;
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & need) == need;
}

DnnlMatmulPtr make_dnnl_matmul(DType t) {
  return DnnlMatmulPtr(std::make_unique<DnnlMatmul>(t).release());
}

bool dnnl_matmul_run(DnnlMatmul& mm, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     float alpha, const void* a, int64_t lda, const void* b, int64_t ldb,
                     float beta, float* c, int64_t ldc, int threads) {
  return mm.run(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
}

}  // namespace mr

#endif  // MR_WITH_DNNL
