// The element-wise, broadcasting and reduction ops of traced graphs on the
// CPU (contracts: core/backend.h, "i15"; formulas: common/op_math.h, shared
// with CUDA). Element-wise work is split over the team in chunks of
// kElementwiseGrain; each op kind is a template instance, so the formula's
// switch folds away and the unit-stride runs vectorise. Every output element
// is computed by one thread from the same inputs in the same order, so the
// results do not depend on the team size.
#include <type_traits>

#include "backends/common/op_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/op_kinds.h"

namespace mr {

namespace {

template <UnaryOp OP>
using UnaryC = std::integral_constant<UnaryOp, OP>;
template <BinaryOp OP>
using BinaryC = std::integral_constant<BinaryOp, OP>;

// Calls f(UnaryC<op>{}) for the run-time op.
template <typename F>
void with_unary(UnaryOp op, F&& f) {
  switch (op) {
    case UnaryOp::negative:
      return f(UnaryC<UnaryOp::negative>{});
    case UnaryOp::abs:
      return f(UnaryC<UnaryOp::abs>{});
    case UnaryOp::sign:
      return f(UnaryC<UnaryOp::sign>{});
    case UnaryOp::square:
      return f(UnaryC<UnaryOp::square>{});
    case UnaryOp::sqrt:
      return f(UnaryC<UnaryOp::sqrt>{});
    case UnaryOp::exp:
      return f(UnaryC<UnaryOp::exp>{});
    case UnaryOp::log:
      return f(UnaryC<UnaryOp::log>{});
    case UnaryOp::log1p:
      return f(UnaryC<UnaryOp::log1p>{});
    case UnaryOp::relu:
      return f(UnaryC<UnaryOp::relu>{});
    case UnaryOp::sigmoid:
      return f(UnaryC<UnaryOp::sigmoid>{});
    case UnaryOp::tanh:
      return f(UnaryC<UnaryOp::tanh>{});
    case UnaryOp::gelu_tanh:
      return f(UnaryC<UnaryOp::gelu_tanh>{});
    case UnaryOp::gelu_erf:
      return f(UnaryC<UnaryOp::gelu_erf>{});
    case UnaryOp::silu:
      return f(UnaryC<UnaryOp::silu>{});
  }
  fail(ErrorKind::internal, "unary: unknown op ", static_cast<int>(op));
}

template <typename F>
void with_binary(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::add:
      return f(BinaryC<BinaryOp::add>{});
    case BinaryOp::subtract:
      return f(BinaryC<BinaryOp::subtract>{});
    case BinaryOp::multiply:
      return f(BinaryC<BinaryOp::multiply>{});
    case BinaryOp::divide:
      return f(BinaryC<BinaryOp::divide>{});
    case BinaryOp::power:
      return f(BinaryC<BinaryOp::power>{});
    case BinaryOp::maximum:
      return f(BinaryC<BinaryOp::maximum>{});
    case BinaryOp::minimum:
      return f(BinaryC<BinaryOp::minimum>{});
    case BinaryOp::equal:
      return f(BinaryC<BinaryOp::equal>{});
    case BinaryOp::not_equal:
      return f(BinaryC<BinaryOp::not_equal>{});
    case BinaryOp::less:
      return f(BinaryC<BinaryOp::less>{});
    case BinaryOp::less_equal:
      return f(BinaryC<BinaryOp::less_equal>{});
    case BinaryOp::greater:
      return f(BinaryC<BinaryOp::greater>{});
    case BinaryOp::greater_equal:
      return f(BinaryC<BinaryOp::greater_equal>{});
  }
  fail(ErrorKind::internal, "binary: unknown op ", static_cast<int>(op));
}

// Splits the out elements of g over the team; run(e, len, off, step) handles
// out elements [e, e + len), all on g's last axis: operand k's element t of
// the run is at off[k] + t * step[k]. Runs are whole last-axis rows or parts
// of them, so the inner loops are strided (usually unit-stride) and simple.
template <typename Run>
void for_broadcast(ThreadTeam& team, const Broadcast& g, int64_t cost, Run&& run) {
  if (g.size <= 0) return;
  const int64_t last = g.rank > 0 ? g.dims[g.rank - 1] : 1;
  int64_t step[kMaxBroadcastOperands] = {};
  for (int k = 0; k < g.operands; ++k) step[k] = g.rank > 0 ? g.stride[k][g.rank - 1] : 0;
  cpu::for_range(team, g.size, cpu::kElementwiseGrain / cost + 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e;) {
      int64_t off[kMaxBroadcastOperands];
      opmath::broadcast_offsets(g, i, off);
      const int64_t row_end = (i / last + 1) * last;
      const int64_t len = (row_end < e ? row_end : e) - i;
      run(i, len, off, step);
      i += len;
    }
  });
}

}  // namespace

void CpuBackend::unary(UnaryOp op, int64_t n, const float* x, float* y) {
  check_op(op, "unary");
  if (n <= 0) return;
  with_unary(op, [&](auto c) {
    cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = opmath::unary_value(decltype(c)::value, x[i]);
    });
  });
}

void CpuBackend::unary_backward(UnaryOp op, int64_t n, const float* x, const float* y,
                                const float* dy, float* dx) {
  check_op(op, "unary_backward");
  if (n <= 0) return;
  const bool reads_y = opmath::unary_reads_y(op);
  MR_CHECK(!reads_y || y != nullptr, internal, "unary_backward(", op_name(op),
           "): needs the forward output y");
  with_unary(op, [&](auto c) {
    cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        dx[i] = opmath::unary_grad(decltype(c)::value, x[i], reads_y ? y[i] : 0.0f, dy[i]);
    });
  });
}

void CpuBackend::binary(BinaryOp op, const Broadcast& g, const float* a, const float* b,
                        float* out) {
  check_op(op, "binary");
  check_broadcast(g, 2, "binary");
  with_binary(op, [&](auto c) {
    constexpr BinaryOp kOp = decltype(c)::value;
    for_broadcast(team_, g, 1, [&](int64_t i, int64_t len, const int64_t* off, const int64_t* st) {
      const float* pa = a + off[0];
      const float* pb = b + off[1];
      float* po = out + i;
      if (st[0] == 1 && st[1] == 1) {
        for (int64_t t = 0; t < len; ++t) po[t] = opmath::binary_value(kOp, pa[t], pb[t]);
      } else if (st[0] == 1 && st[1] == 0) {
        const float vb = *pb;
        for (int64_t t = 0; t < len; ++t) po[t] = opmath::binary_value(kOp, pa[t], vb);
      } else if (st[0] == 0 && st[1] == 1) {
        const float va = *pa;
        for (int64_t t = 0; t < len; ++t) po[t] = opmath::binary_value(kOp, va, pb[t]);
      } else {
        for (int64_t t = 0; t < len; ++t)
          po[t] = opmath::binary_value(kOp, pa[t * st[0]], pb[t * st[1]]);
      }
    });
  });
}

void CpuBackend::binary_backward(BinaryOp op, const Broadcast& g, const float* a, const float* b,
                                 const float* dout, float* ga, float* gb) {
  check_op(op, "binary_backward");
  check_broadcast(g, 2, "binary_backward");
  if (ga == nullptr && gb == nullptr) return;
  with_binary(op, [&](auto c) {
    constexpr BinaryOp kOp = decltype(c)::value;
    for_broadcast(team_, g, 2, [&](int64_t i, int64_t len, const int64_t* off, const int64_t* st) {
      const float* pa = a + off[0];
      const float* pb = b + off[1];
      if (st[0] == 1 && st[1] == 1 && ga != nullptr && gb != nullptr) {  // the common flat case
        for (int64_t t = 0; t < len; ++t)
          opmath::binary_grad(kOp, pa[t], pb[t], dout[i + t], ga + i + t, gb + i + t);
        return;
      }
      for (int64_t t = 0; t < len; ++t) {
        float da = 0.0f, db = 0.0f;
        opmath::binary_grad(kOp, pa[t * st[0]], pb[t * st[1]], dout[i + t], &da, &db);
        if (ga != nullptr) ga[i + t] = da;
        if (gb != nullptr) gb[i + t] = db;
      }
    });
  });
}

void CpuBackend::where(const Broadcast& g, const float* cond, const float* a, const float* b,
                       float* out) {
  check_broadcast(g, 3, "where");
  for_broadcast(team_, g, 1, [&](int64_t i, int64_t len, const int64_t* off, const int64_t* st) {
    for (int64_t t = 0; t < len; ++t)
      out[i + t] = cond[off[0] + t * st[0]] != 0.0f ? a[off[1] + t * st[1]] : b[off[2] + t * st[2]];
  });
}

void CpuBackend::where_backward(const Broadcast& g, const float* cond, const float* dout, float* ga,
                                float* gb) {
  check_broadcast(g, 3, "where_backward");
  if (ga == nullptr && gb == nullptr) return;
  for_broadcast(team_, g, 1, [&](int64_t i, int64_t len, const int64_t* off, const int64_t* st) {
    for (int64_t t = 0; t < len; ++t) {
      const bool pick_a = cond[off[0] + t * st[0]] != 0.0f;
      if (ga != nullptr) ga[i + t] = pick_a ? dout[i + t] : 0.0f;
      if (gb != nullptr) gb[i + t] = pick_a ? 0.0f : dout[i + t];
    }
  });
}

void CpuBackend::reduce(ReduceOp op, int64_t outer, int64_t extent, int64_t inner, const float* x,
                        float* y) {
  check_op(op, "reduce");
  check_axis_view(outer, extent, inner, "reduce");
  const int64_t n = outer * inner;
  if (n <= 0) return;
  // Outputs [b, e) are cut at row boundaries of o; within a row every y[o, i]
  // takes x[o, 0, i], x[o, 1, i], .. in turn (reduce_one's order, so the
  // result is that of one loop per output), the i loop innermost and
  // unit-stride.
  const int64_t per = extent > 0 ? extent : 1;
  if (inner ==
      1) {  // one contiguous run per output: reduce_one keeps its accumulator in a register
    cpu::for_range(team_, n, cpu::kElementwiseGrain / per + 1, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = opmath::reduce_one(op, extent, 1, x + o * extent);
    });
    return;
  }
  cpu::for_range(team_, n, cpu::kElementwiseGrain / per + 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e;) {
      const int64_t o = j / inner, i0 = j % inner;
      const int64_t i1 = (e - j < inner - i0) ? i0 + (e - j) : inner;
      float* yo = y + o * inner;
      if (op == ReduceOp::sum) {
        // Double accumulators for a tile of i (reduce_one's arithmetic in
        // its order: bit-equal to one loop per output and to CUDA).
        constexpr int64_t kTile = 256;
        double acc[kTile];
        for (int64_t t0 = i0; t0 < i1; t0 += kTile) {
          const int64_t t1 = t0 + kTile < i1 ? t0 + kTile : i1;
          for (int64_t i = t0; i < t1; ++i) acc[i - t0] = 0.0;
          for (int64_t k = 0; k < extent; ++k) {
            const float* xk = x + (o * extent + k) * inner;
            for (int64_t i = t0; i < t1; ++i) acc[i - t0] += static_cast<double>(xk[i]);
          }
          for (int64_t i = t0; i < t1; ++i) yo[i] = static_cast<float>(acc[i - t0]);
        }
        j += i1 - i0;
        continue;
      }
      const float ident = opmath::reduce_identity(op);
      for (int64_t i = i0; i < i1; ++i) yo[i] = ident;
      for (int64_t k = 0; k < extent; ++k) {
        const float* xk = x + (o * extent + k) * inner;
        switch (op) {
          case ReduceOp::sum:
            break;  // handled above
          case ReduceOp::max:
            for (int64_t i = i0; i < i1; ++i) yo[i] = nanmath::max_nan(yo[i], xk[i]);
            break;
          case ReduceOp::min:
            for (int64_t i = i0; i < i1; ++i) yo[i] = nanmath::min_nan(yo[i], xk[i]);
            break;
        }
      }
      j += i1 - i0;
    }
  });
}

void CpuBackend::reduce_backward(ReduceOp op, int64_t outer, int64_t extent, int64_t inner,
                                 const float* x, const float* y, const float* dy, float* dx) {
  check_op(op, "reduce_backward");
  check_axis_view(outer, extent, inner, "reduce_backward");
  const int64_t n = outer * inner;
  if (n <= 0 || extent <= 0) return;
  MR_CHECK(op == ReduceOp::sum || (x != nullptr && y != nullptr), internal, "reduce_backward(",
           op_name(op), "): needs the forward's x and y");
  cpu::for_range(team_, n, cpu::kElementwiseGrain / (2 * extent) + 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t base = opmath::axis_base(j, extent, inner);
      opmath::reduce_grad_one(op, extent, inner, x == nullptr ? nullptr : x + base,
                              y == nullptr ? 0.0f : y[j], dy[j], dx + base);
    }
  });
}

void CpuBackend::softmax_axis(SoftmaxOp op, int64_t outer, int64_t extent, int64_t inner,
                              const float* x, float* y) {
  check_op(op, "softmax_axis");
  check_axis_view(outer, extent, inner, "softmax_axis");
  const int64_t n = outer * inner;
  if (n <= 0) return;
  if (extent <= 0) {
    if (op == SoftmaxOp::logsumexp) fill(n, y, -INFINITY);
    return;
  }
  cpu::for_range(team_, n, cpu::kElementwiseGrain / (4 * extent) + 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t base = opmath::axis_base(j, extent, inner);
      opmath::softmax_one(op, extent, inner, x + base,
                          op == SoftmaxOp::logsumexp ? y + j : y + base);
    }
  });
}

void CpuBackend::softmax_axis_backward(SoftmaxOp op, int64_t outer, int64_t extent, int64_t inner,
                                       const float* x, const float* y, const float* dy, float* dx) {
  check_op(op, "softmax_axis_backward");
  check_axis_view(outer, extent, inner, "softmax_axis_backward");
  // Only logsumexp reads x (dx = dy exp(x - y)); softmax and log_softmax
  // may be passed x = null, which no kernel offsets or reads.
  MR_CHECK(op != SoftmaxOp::logsumexp || x != nullptr, internal,
           "softmax_axis_backward(logsumexp): needs the forward's x");
  const int64_t n = outer * inner;
  if (n <= 0 || extent <= 0) return;
  const bool lse = op == SoftmaxOp::logsumexp;
  cpu::for_range(team_, n, cpu::kElementwiseGrain / (4 * extent) + 1, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t base = opmath::axis_base(j, extent, inner);
      opmath::softmax_grad_one(op, extent, inner, x == nullptr ? nullptr : x + base,
                               lse ? y + j : y + base, lse ? dy + j : dy + base, dx + base);
    }
  });
}

// ---- i15-fuse: a unary chain in one pass ----
// Each thread's chunk is walked in blocks of kChainBlock elements: every link
// runs over the block (the same template loop as unary(), so the same
// vectorised code and the same rounding) while the block is still in L1, so
// x and the links are read from memory once. Elements are independent, so
// the result does not depend on the blocking or the team size.
void CpuBackend::unary_chain(int64_t n, const UnaryOp* ops, int count, const float* x,
                             float* const* outs) {
  MR_CHECK(count >= 1 && count <= kMaxUnaryChain, internal, "unary_chain: count must be in 1..",
           kMaxUnaryChain, ", got ", count);
  for (int c = 0; c < count; ++c) check_op(ops[c], "unary_chain");
  if (n <= 0) return;
  constexpr int64_t kChainBlock = 512;
  cpu::for_range(team_, n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t b0 = b; b0 < e; b0 += kChainBlock) {
      const int64_t e0 = b0 + kChainBlock < e ? b0 + kChainBlock : e;
      const float* src = x;
      for (int c = 0; c < count; ++c) {
        float* dst = outs[c];
        with_unary(ops[c], [&](auto k) {
          for (int64_t i = b0; i < e0; ++i)
            dst[i] = opmath::unary_value(decltype(k)::value, src[i]);
        });
        src = dst;
      }
    }
  });
}

}  // namespace mr
