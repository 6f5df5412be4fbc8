// How a CUDA column reduction (cuda_column_reduce.h) cuts its rows into
// chunks: a function of the shape only, never of the device, so that the
// order of every sum, hence every bit of the result, is the same on any GPU,
// run to run and replica to replica. Plain C++ (tested on the CPU).
#pragma once

#include <cstdint>

namespace mr {

// Doubles of a CUDA backend's column-reduction partials, allocated by its
// constructor (no step allocates them).
constexpr int64_t kColumnPartials = int64_t{1} << 16;

namespace cuda {

constexpr int kColumnLanes = 8;
// Rows per chunk at least (a chunk is then 128 / kColumnLanes = 16 rows per
// lane), and at most kMaxColumnChunks chunks (grid.y <= 65535).
constexpr int64_t kColumnChunkRows = 128;
constexpr int64_t kMaxColumnChunks = 1024;

struct ColumnSplit {
  int64_t chunks = 1;
  int64_t chunk_rows = 0;
};

// The split of a rows x cols reduction with k sums per column: as many
// chunks of at least kColumnChunkRows rows as the rows fill, capped so that
// the partials (k * chunks * cols doubles) fit kColumnPartials.
inline ColumnSplit column_split(int64_t rows, int64_t cols, int k) {
  ColumnSplit s;
  if (rows <= 0 || cols <= 0) return s;
  int64_t cap = kColumnPartials / (cols * k);
  if (cap > kMaxColumnChunks) cap = kMaxColumnChunks;
  if (cap < 1) cap = 1;
  int64_t chunks = rows / kColumnChunkRows;  // each at least kColumnChunkRows rows
  if (chunks > cap) chunks = cap;
  if (chunks < 1) chunks = 1;
  s.chunk_rows = (rows + chunks - 1) / chunks;
  s.chunks = (rows + s.chunk_rows - 1) / s.chunk_rows;  // no empty chunk
  return s;
}

}  // namespace cuda
}  // namespace mr
