// The structural transforms of tf.data: batch, shuffle, repeat, take, skip.
// Arguments are checked here too (the R layer checks them first, with the
// argument names of tfdatasets).
#pragma once

#include <cstdint>

#include "data/dataset.h"

namespace mr {

// Stacks `batch_size` consecutive elements (a new leading dimension); the last
// batch is smaller unless drop_remainder. Components must keep their shape
// from element to element (a shape error names the component otherwise).
DatasetPtr make_batch(DatasetPtr input, int64_t batch_size, bool drop_remainder);

// A shuffle buffer of `buffer_size` elements: filled from the input, then each
// output is a uniformly drawn buffer slot, refilled with the next input. So an
// element at input position p comes out at position >= p - buffer_size + 1.
// Draws come from Philox keyed by (seed, pass key) — or (seed, 0) when
// reshuffle_each_iteration is false, which replays one order every pass.
DatasetPtr make_shuffle(DatasetPtr input, int64_t buffer_size, uint64_t seed,
                        bool reshuffle_each_iteration);

// count passes over the input (-1: forever). Stops early when a pass yields
// nothing, so repeating an empty dataset forever ends instead of spinning.
DatasetPtr make_repeat(DatasetPtr input, int64_t count);

// The first `count` elements (-1: all).
DatasetPtr make_take(DatasetPtr input, int64_t count);

// All but the first `count` elements (-1: skip everything).
DatasetPtr make_skip(DatasetPtr input, int64_t count);

// i16: tf.data's shard(): the elements at positions index, index +
// num_shards, index + 2 num_shards, ... of each pass (0 <= index <
// num_shards). A multi-worker job's worker i reads shard i of the data.
DatasetPtr make_shard(DatasetPtr input, int64_t num_shards, int64_t index);

}  // namespace mr
