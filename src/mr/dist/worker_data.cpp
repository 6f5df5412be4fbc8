#include "dist/worker_data.h"

namespace mr {

FileShards worker_dataset(const WorkerGroup& group, const DatasetPtr& dataset) {
  return shard_by_files(dataset, group.size(), group.rank(),
                        [&group](int64_t rows, int w) { return group.worker_rows(rows, w); });
}

}  // namespace mr
