#include "data/file_parts.h"

#include <sys/stat.h>

#include <sstream>

#include "core/error.h"
#include "data/file_sources.h"
#include "data/sources.h"
#include "io/idx.h"
#include "io/npz.h"

namespace mr {

namespace {

// Rows and per-element shapes of one part, from its headers.
void read_part_header(FileFormat format, const std::vector<std::string>& keys,
                      FilePartsDataset::Part& part, std::vector<std::vector<int64_t>>& shapes,
                      std::vector<RType>& rtypes) {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> names;  // what each component is, for errors
  std::vector<RType> types;
  if (format == FileFormat::idx) {
    for (const std::string& path : part.paths) {
      dims.push_back(read_idx_dims(path));
      types.push_back(RType::integer);
      names.push_back("'" + path + "'");
    }
  } else {
    const std::string& path = part.paths.at(0);
    const std::map<std::string, NpyHeader> headers = read_npz_headers(path);
    for (const std::string& key : keys) {
      auto it = find_array(headers, path, key);
      MR_CHECK(!it->second.dims.empty(), value, "array '", key, "' of '", path,
               "' is a scalar; components are sliced along a first dimension");
      dims.push_back(it->second.dims);
      types.push_back(is_float(it->second.dtype) ? RType::dbl : RType::integer);
      names.push_back("array '" + key + "' of '" + path + "'");
    }
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    const std::vector<int64_t> shape(dims[k].begin() + 1, dims[k].end());
    if (k == 0) part.rows = dims[k][0];
    MR_CHECK(dims[k][0] == part.rows, value, names[k], " has ", dims[k][0],
             " rows but the first component of part ", part.number, " has ", part.rows,
             " (components are sliced along their first dimension)");
    if (shapes.size() <= k) {
      shapes.push_back(shape);
      rtypes.push_back(types[k]);
    }
    MR_CHECK(shape == shapes[k], value, names[k], " (part ", part.number,
             ") has elements of shape ", shape_string(shape), " but part 1 has ",
             shape_string(shapes[k]), ": every part must hold the same kind of rows");
    MR_CHECK(types[k] == rtypes[k], value, names[k], " (part ", part.number, ") holds ",
             types[k] == RType::dbl ? "floats" : "integers", " but part 1 holds ",
             rtypes[k] == RType::dbl ? "floats" : "integers");
  }
}

// One pass: the parts in order, each loaded whole when its first row is
// needed and released when the next one is loaded.
class PartsIterator final : public Iterator {
 public:
  PartsIterator(FileFormat format, std::vector<std::string> keys,
                std::shared_ptr<const std::vector<FilePartsDataset::Part>> parts,
                std::vector<std::vector<int64_t>> shapes)
      : format_(format),
        keys_(std::move(keys)),
        parts_(std::move(parts)),
        shapes_(std::move(shapes)) {}

  bool next(Element& out) override {
    while (true) {
      if (rows_ && rows_->next(out)) return true;
      if (next_part_ >= parts_->size()) return false;
      load((*parts_)[next_part_++]);
    }
  }

 private:
  void load(const FilePartsDataset::Part& part) {
    rows_.reset();
    std::shared_ptr<const SourceData> data =
        format_ == FileFormat::idx ? idx_source(part.paths) : npz_source(part.paths.at(0), keys_);
    // The files were read when the dataset was made: one that changed since
    // would silently change the dataset's length mid-training.
    bool same = data->rows == part.rows && data->cols.size() == shapes_.size();
    for (size_t k = 0; same && k < shapes_.size(); ++k) same = data->cols[k].shape == shapes_[k];
    MR_CHECK(same, io, "part ", part.number, " ('", part.paths.at(0),
             "') is not what it was when the dataset was made (", part.rows,
             " rows): the file changed; make the dataset again");
    rows_ = TensorSlicesDataset(std::move(data)).iterate(0);
  }

  FileFormat format_;
  std::vector<std::string> keys_;
  std::shared_ptr<const std::vector<FilePartsDataset::Part>> parts_;
  std::vector<std::vector<int64_t>> shapes_;
  size_t next_part_ = 0;
  std::unique_ptr<Iterator> rows_;
};

}  // namespace

FilePartsDataset::FilePartsDataset(FileFormat format, std::vector<std::vector<std::string>> parts,
                                   std::vector<std::string> keys)
    : format_(format), keys_(std::move(keys)) {
  const char* fn = format == FileFormat::idx ? "idx_dataset()" : "npz_dataset()";
  MR_CHECK(!parts.empty(), value, fn, " needs at least one file");
  MR_CHECK(format == FileFormat::idx || !keys_.empty(), value, fn,
           " needs at least one array name");
  auto list = std::make_shared<std::vector<Part>>();
  for (auto& paths : parts) {
    Part p;
    p.number = static_cast<int64_t>(list->size()) + 1;
    MR_CHECK(!paths.empty(), value, fn, ": part ", p.number, " has no files");
    if (format == FileFormat::npz)
      MR_CHECK(paths.size() == 1, value, fn, ": an .npz part is one file, part ", p.number, " has ",
               paths.size());
    if (format == FileFormat::idx && !list->empty())
      MR_CHECK(paths.size() == list->front().paths.size(), value, fn, ": part ", p.number, " has ",
               paths.size(), " files but part 1 has ", list->front().paths.size(),
               " (one per component)");
    p.paths = std::move(paths);
    read_part_header(format_, keys_, p, shapes_, rtypes_);
    list->push_back(std::move(p));
  }
  total_parts_ = static_cast<int64_t>(list->size());
  parts_ = std::move(list);
}

FilePartsDataset::FilePartsDataset(ShardKey, const FilePartsDataset& whole, int64_t num_shards,
                                   int64_t index)
    : format_(whole.format_),
      keys_(whole.keys_),
      shapes_(whole.shapes_),
      rtypes_(whole.rtypes_),
      total_parts_(whole.total_parts_),
      shard_count_(num_shards) {
  MR_CHECK(whole.shard_count_ == 1, internal, "a file shard of a file shard");
  MR_CHECK(num_shards >= 1 && index >= 0 && index < num_shards && num_shards <= total_parts_,
           internal, "file shard ", index, " of ", num_shards, " of ", total_parts_, " parts");
  auto list = std::make_shared<std::vector<Part>>();
  for (size_t i = static_cast<size_t>(index); i < whole.parts_->size();
       i += static_cast<size_t>(num_shards))
    list->push_back((*whole.parts_)[i]);
  parts_ = std::move(list);
}

std::shared_ptr<const FilePartsDataset> FilePartsDataset::file_shard(int64_t num_shards,
                                                                     int64_t index) const {
  return std::make_shared<FilePartsDataset>(ShardKey{}, *this, num_shards, index);
}

std::unique_ptr<Iterator> FilePartsDataset::iterate(uint64_t) const {
  return std::make_unique<PartsIterator>(format_, keys_, parts_, shapes_);
}

int64_t FilePartsDataset::cardinality() const {
  int64_t n = 0;
  for (const Part& p : *parts_) n += p.rows;
  return n;
}

ElementSpec FilePartsDataset::spec() const {
  ElementSpec s;
  for (size_t k = 0; k < shapes_.size(); ++k) s.parts.push_back({shapes_[k], rtypes_[k]});
  return s;
}

std::string FilePartsDataset::label() const {
  std::ostringstream os;
  os << (format_ == FileFormat::idx ? "idx_dataset(" : "npz_dataset(");
  if (shard_count_ > 1) {
    os << "parts ";
    for (size_t i = 0; i < parts_->size(); ++i) os << (i ? ", " : "") << (*parts_)[i].number;
    os << " of " << total_parts_;
  } else {
    os << total_parts_ << (total_parts_ == 1 ? " part" : " parts");
  }
  os << ", " << shapes_.size() << (shapes_.size() == 1 ? " component" : " components") << ", "
     << cardinality() << " rows)";
  return os.str();
}

// The definition is the files' paths, sizes and modification times (as
// make's): hashing their content would read every file.
void FilePartsDataset::fingerprint(Hasher& h) const {
  h.str(label());
  for (const std::string& k : keys_) h.str(k);
  for (const Part& p : *parts_) {
    for (const std::string& path : p.paths) {
      h.str(path);
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0) {
        h.u64(static_cast<uint64_t>(st.st_size));
        h.u64(static_cast<uint64_t>(st.st_mtim.tv_sec));
        h.u64(static_cast<uint64_t>(st.st_mtim.tv_nsec));
      }
    }
  }
}

}  // namespace mr
