// How a long reduction on the GPU is cut into segments, one block each, whose
// partial sums a second pass adds in segment order: the segments depend on
// the length alone, so the sum's order (and its bits) is the same run to run
// and on any GPU. Host-side arithmetic only.
#pragma once

#include <cstdint>

namespace mr::cuda {

struct Segments {
  int64_t count = 1;  // segments (1 for an empty range)
  int64_t size = 0;   // elements per segment, the last one shorter
};

// n elements in segments of at least `least` elements, at most `most` of them
// (the scratch for their partials is allocated up front).
inline Segments segments_of(int64_t n, int64_t least, int64_t most) {
  Segments s;
  if (n <= 0) return s;
  int64_t count = (n + least - 1) / least;
  if (count > most) count = most;
  s.size = (n + count - 1) / count;
  s.count = (n + s.size - 1) / s.size;
  return s;
}

}  // namespace mr::cuda
