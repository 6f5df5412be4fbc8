// i16: a dataset stored as several files ("parts"), as large datasets are
// written (part-00000.npz, part-00001.npz, ...): its rows are the rows of
// part 1, then of part 2, and so on. A part is one .npz archive (the arrays
// `keys`, one per component) or one IDX file per component.
//
// Only the headers are read when the dataset is made (every part's row count
// and element shapes, which must agree); a pass then reads one part at a time
// and keeps only that part in memory (dataset_cache() keeps them all). So a
// worker of a multi-worker job that reads only its own parts
// (data/auto_shard.h) never reads the others' files.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace mr {

enum class FileFormat { idx, npz };

class FilePartsDataset final : public Dataset {
 public:
  // parts[i]: the files of part i (npz: one; idx: one per component).
  FilePartsDataset(FileFormat format, std::vector<std::vector<std::string>> parts,
                   std::vector<std::string> keys);

  std::unique_ptr<Iterator> iterate(uint64_t key) const override;
  int64_t cardinality() const override;
  ElementSpec spec() const override;
  std::string label() const override;
  void fingerprint(Hasher& h) const override;
  bool sharded() const override { return shard_count_ > 1; }

  // Parts of the whole dataset (not only this shard's).
  int64_t total_parts() const { return total_parts_; }
  // Parts index, index + num_shards, ... of the whole dataset: what worker
  // `index` of `num_shards` reads (TF's FILE shard policy).
  std::shared_ptr<const FilePartsDataset> file_shard(int64_t num_shards, int64_t index) const;

 private:
  struct ShardKey {
    explicit ShardKey() = default;
  };

 public:
  // file_shard()'s (the key keeps it private to the class).
  FilePartsDataset(ShardKey, const FilePartsDataset& whole, int64_t num_shards, int64_t index);

  struct Part {
    std::vector<std::string> paths;
    int64_t rows = 0;
    int64_t number = 0;  // 1-based, among all the dataset's parts (for errors and print())
  };

 private:
  FileFormat format_ = FileFormat::npz;
  std::vector<std::string> keys_;
  std::shared_ptr<const std::vector<Part>> parts_;
  std::vector<std::vector<int64_t>> shapes_;  // per component, without the row dimension
  std::vector<RType> rtypes_;
  int64_t total_parts_ = 0;
  int64_t shard_count_ = 1;  // > 1: the parts of one worker of shard_count_
};

}  // namespace mr
