#include "data/auto_shard.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "data/cache.h"
#include "data/file_parts.h"
#include "data/transforms.h"

namespace mr {

namespace {

// The chain from the output down to its source.
std::vector<const Dataset*> chain_of(const Dataset& ds) {
  std::vector<const Dataset*> out{&ds};
  for (DatasetPtr in = ds.input(); in; in = in->input()) out.push_back(in.get());
  return out;
}

// Worker w's chain (nodes as chain_of() lists them; outer: the index of
// the outermost batch()); null when worker w takes no rows of a batch.
DatasetPtr rebuild(const std::vector<const Dataset*>& nodes, size_t outer,
                   const FilePartsDataset& source, int num_workers, int w,
                   const std::function<int64_t(int64_t, int)>& worker_rows) {
  DatasetPtr cur = source.file_shard(num_workers, w);
  for (size_t i = nodes.size() - 1; i-- > 0;) {
    const Dataset& node = *nodes[i];
    int64_t size = 0;
    bool drop = false;
    const std::string file = node.cache_file();
    if (i == outer && node.batching(size, drop)) {
      const int64_t rows = worker_rows(size, w);
      if (rows <= 0) return nullptr;
      cur = make_batch(std::move(cur), rows, drop);
    } else if (!file.empty()) {
      cur = make_cache(std::move(cur), file + ".worker" + std::to_string(w));
    } else {
      cur = node.with_input(std::move(cur));
    }
  }
  return cur;
}

}  // namespace

FileShards shard_by_files(const DatasetPtr& dataset, int num_workers, int index,
                          const std::function<int64_t(int64_t, int)>& worker_rows) {
  MR_CHECK(dataset != nullptr && num_workers >= 1 && index >= 0 && index < num_workers, internal,
           "shard_by_files(): worker ", index, " of ", num_workers);
  FileShards out;
  if (num_workers < 2 || dataset->sharded()) return out;
  const std::vector<const Dataset*> nodes = chain_of(*dataset);
  const auto* source = dynamic_cast<const FilePartsDataset*>(nodes.back());
  if (source == nullptr || source->total_parts() < num_workers) return out;
  size_t outer = nodes.size();
  for (size_t i = 0; i < nodes.size() && outer == nodes.size(); ++i) {
    int64_t size = 0;
    bool drop = false;
    if (nodes[i]->batching(size, drop)) outer = i;
  }
  // Without a batch() the elements are not batches: fit() says so.
  if (outer == nodes.size()) return out;
  int64_t most = 0;
  for (int w = 0; w < num_workers; ++w) {
    DatasetPtr mine = rebuild(nodes, outer, *source, num_workers, w, worker_rows);
    if (mine == nullptr) return FileShards{};
    const int64_t n = mine->cardinality();
    if (n == kInfinite || most == kInfinite)
      most = kInfinite;
    else if (n == kUnknown || most == kUnknown)
      most = kUnknown;
    else
      most = std::max(most, n);
    if (w == index) out.dataset = std::move(mine);
  }
  out.global_batches = most;
  return out;
}

}  // namespace mr
