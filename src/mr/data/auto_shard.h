// i16: tf.data's AUTO shard policy for a multi-worker job. A dataset whose
// source is stored as several files (FilePartsDataset) with at least as many
// parts as workers is rebuilt for each worker: worker `index` of
// `num_workers` reads parts index, index + num_workers, ... only (TF's FILE
// policy) and its outermost batch() takes the worker's rows of the global
// batch, so `batch_size` stays the global batch. Every other dataset (one
// file, fewer parts than workers, arrays) is left as it is: every worker
// reads all of it and its replicas take their rows of each global batch
// (TF's DATA policy, with the numbers of one device). A chain that is
// already sharded by dataset_shard() is the user's choice and is kept too.
//
// The rebuilt chain is the user's, transform for transform, over the
// worker's parts: shuffle, repeat, take, skip, map, cache and prefetch
// apply to the worker's rows (as in TF, take()/skip() before batch() count
// the worker's elements). A file cache gets a name per worker
// (`<filename>.worker<index>`): one file would hold another worker's rows.
#pragma once

#include <cstdint>
#include <functional>

#include "data/dataset.h"

namespace mr {

struct FileShards {
  DatasetPtr dataset;  // this worker's chain; null: the dataset is kept as it is
  // Steps of a pass of the job (the most of any worker: shards of different
  // lengths end together), kInfinite or kUnknown.
  int64_t global_batches = kUnknown;
};

// worker_rows(global_batch, w): the rows of a global batch that worker w's
// replicas take (the batch-split rule over every replica of the job). A
// worker with no rows of a global batch keeps the dataset as it is.
FileShards shard_by_files(const DatasetPtr& dataset, int num_workers, int index,
                          const std::function<int64_t(int64_t, int)>& worker_rows);

}  // namespace mr
