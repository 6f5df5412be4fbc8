// Batches as the training loop receives them: host memory, row-major float32,
// one component per model input followed by the targets. A source owns the
// memory; a batch stays valid until the source has produced two more.
#pragma once

#include <cstdint>
#include <vector>

namespace mr {

struct HostComponent {
  const float* data = nullptr;
  int64_t width = 0;  // floats per sample
};

struct HostBatch {
  int64_t rows = 0;
  std::vector<HostComponent> parts;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Starts a pass over the data (epoch numbers key the shuffle order).
  virtual void reset(int64_t epoch) = 0;
  // The next batch of the pass; false at its end.
  virtual bool next(HostBatch& batch) = 0;
  // Batches in one pass, or -1 when unknown.
  virtual int64_t batches() const = 0;
};

// Rows of replica `rank` among `replicas` for a global batch of `rows`:
// contiguous slices, the first rows % replicas replicas taking one more.
inline void replica_slice(int64_t rows, int replicas, int rank, int64_t& begin, int64_t& count) {
  const int64_t base = rows / replicas, extra = rows % replicas;
  count = base + (rank < extra ? 1 : 0);
  begin = rank * base + (rank < extra ? rank : extra);
}

}  // namespace mr
