// The batch-split rule: how a global batch is cut among the replicas of a
// strategy (DESIGN.md, "Same numbers whatever the device count").
#pragma once

#include <cstdint>

namespace mr {

// Rows of replica `rank` among `replicas` for a global batch of `rows`:
// contiguous slices, the first rows % replicas replicas taking one more.
inline void replica_slice(int64_t rows, int replicas, int rank, int64_t& begin, int64_t& count) {
  const int64_t base = rows / replicas, extra = rows % replicas;
  count = base + (rank < extra ? 1 : 0);
  begin = rank * base + (rank < extra ? rank : extra);
}

// The largest slice of a global batch of `rows` (the first replica's: the
// split above), at least 1 so that buffers sized by it are never empty.
inline int64_t largest_slice(int64_t rows, int replicas) {
  const int64_t n = replicas;
  const int64_t most = (rows + n - 1) / n;
  return most > 1 ? most : 1;
}

}  // namespace mr
