// Column reductions of a rows x cols row-major matrix on CUDA (bias_grad,
// batch-norm statistics and gradients, layer-norm dgamma / dbeta): each
// column's K sums over all rows. Included by .cu files only.
//
// Two passes, deterministic:
// - pass 1: a 2-D grid, 32 columns per block on blockIdx.x and one chunk of
//   chunk_rows consecutive rows on blockIdx.y; in a block of 32 x
//   kColumnLanes threads, lane y sums rows r0 + y, r0 + y + kColumnLanes, ...
//   of its chunk in order, then the lanes are added in lane order into the
//   chunk's partial (in the backend's column_partials() scratch);
// - pass 2: one thread per column adds the chunks' partials in chunk order.
// The split (column_split) is a function of the shape only, never of the
// device or its number of SMs: the arithmetic, hence every bit of the
// result, is the same run to run, replica to replica and GPU to GPU. No
// atomics. A matrix of one chunk finishes in pass 1 (same arithmetic: the
// total starts at zero and adds the one partial).
//
// A Term gives a column's per-row contributions: Col begin(c) (per-column
// values read once), void add(const Col&, r, c, Acc* s) (adds row r's K
// contributions to s[0..K)). A Finish writes a column's totals:
// void operator()(c, const Acc* t).
#pragma once

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_column_split.h"

namespace mr {
namespace cuda {

template <int K, class Acc, class Term, class Finish>
__global__ void column_chunk_kernel(int64_t rows, int64_t cols, int64_t chunk_rows, Term term,
                                    Finish finish, double* partials) {
  __shared__ Acc part[K][kColumnLanes][33];
  const int64_t c = blockIdx.x * int64_t{32} + threadIdx.x;
  const int64_t r0 = blockIdx.y * chunk_rows;
  const int64_t r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
  Acc s[K];
  for (int k = 0; k < K; ++k) s[k] = Acc(0);
  if (c < cols) {
    const auto col = term.begin(c);
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColumnLanes) term.add(col, r, c, s);
  }
  for (int k = 0; k < K; ++k) part[k][threadIdx.y][threadIdx.x] = s[k];
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  Acc t[K];
  for (int k = 0; k < K; ++k) {
    t[k] = Acc(0);
    for (int l = 0; l < kColumnLanes; ++l) t[k] += part[k][l][threadIdx.x];
  }
  if (gridDim.y == 1) {
    Acc total[K];  // pass 2's arithmetic on one chunk
    for (int k = 0; k < K; ++k) total[k] = Acc(0) + t[k];
    finish(c, total);
    return;
  }
  for (int k = 0; k < K; ++k)
    partials[(k * int64_t{gridDim.y} + blockIdx.y) * cols + c] = static_cast<double>(t[k]);
}

template <int K, class Acc, class Finish>
__global__ void column_finish_kernel(int64_t chunks, int64_t cols, const double* partials,
                                     Finish finish) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < cols;
       c += int64_t{blockDim.x} * gridDim.x) {
    Acc total[K];
    for (int k = 0; k < K; ++k) {
      total[k] = Acc(0);
      for (int64_t j = 0; j < chunks; ++j)
        total[k] += static_cast<Acc>(partials[(k * chunks + j) * cols + c]);
    }
    finish(c, total);
  }
}

// Runs the reduction on `stream` (partials: the backend's column_partials(),
// kColumnPartials doubles); `name` names the kernels in a launch error.
template <int K, class Acc, class Term, class Finish>
void column_reduce(cudaStream_t stream, int ordinal, double* partials, int64_t rows, int64_t cols,
                   const Term& term, const Finish& finish, const char* name) {
  if (cols <= 0) return;
  if (rows < 0) rows = 0;
  const ColumnSplit split = column_split(rows, cols, K);
  const dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>(split.chunks));
  column_chunk_kernel<K, Acc><<<grid, dim3(32, kColumnLanes), 0, stream>>>(
      rows, cols, split.chunk_rows, term, finish, partials);
  check_launch(name, ordinal);
  if (split.chunks == 1) return;
  column_finish_kernel<K, Acc>
      <<<blocks_for(cols), kThreads, 0, stream>>>(split.chunks, cols, partials, finish);
  check_launch(name, ordinal);
}

}  // namespace cuda
}  // namespace mr
