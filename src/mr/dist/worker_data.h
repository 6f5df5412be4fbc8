// i16: the data of a multi-worker job's worker: TF's AUTO shard policy
// (data/auto_shard.h) with the job's workers and its batch-split rule.
#pragma once

#include "data/auto_shard.h"
#include "dist/worker_group.h"

namespace mr {

// This worker's chain for a dataset given to fit() or evaluate() (null
// dataset: every worker reads all of it), and the job's steps per pass.
FileShards worker_dataset(const WorkerGroup& group, const DatasetPtr& dataset);

}  // namespace mr
