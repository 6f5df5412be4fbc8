#include "data/file_sources.h"

#include <limits>

#include "core/error.h"
#include "io/idx.h"
#include "io/npz.h"

namespace mr {

namespace {

// dims[0] rows of dims[1..] each.
std::vector<int64_t> element_shape(const std::vector<int64_t>& dims) {
  return std::vector<int64_t>(dims.begin() + 1, dims.end());
}

void add_column(SourceData& data, Column col, int64_t rows, const std::string& what) {
  if (data.cols.empty()) data.rows = rows;
  MR_CHECK(rows == data.rows, value, what, " has ", rows, " rows but the first component has ",
           data.rows, " (components are sliced along their first dimension)");
  data.cols.push_back(std::move(col));
}

}  // namespace

std::shared_ptr<const SourceData> idx_source(const std::vector<std::string>& paths) {
  MR_CHECK(!paths.empty(), value, "idx_dataset() needs at least one file");
  auto data = std::make_shared<SourceData>();
  for (const std::string& path : paths) {
    IdxArray a = read_idx(path);
    Column col;
    col.shape = element_shape(a.dims);
    col.rtype = RType::integer;
    col.u8 = std::move(a.data);
    add_column(*data, std::move(col), a.dims[0], "'" + path + "'");
  }
  data->validate();
  return data;
}

std::shared_ptr<const SourceData> npz_source(const std::string& path,
                                             const std::vector<std::string>& keys) {
  MR_CHECK(!keys.empty(), value, "npz_dataset() needs at least one array name");
  std::map<std::string, NpyArray> arrays = read_npz(path);
  auto data = std::make_shared<SourceData>();
  for (const std::string& key : keys) {
    auto it = find_array(arrays, path, key);
    NpyArray& a = it->second;
    MR_CHECK(!a.dims.empty(), value, "array '", key, "' of '", path,
             "' is a scalar; components are sliced along a first dimension");
    Column col;
    col.shape = element_shape(a.dims);
    col.rtype = is_float(a.dtype) ? RType::dbl : RType::integer;
    if (is_float(a.dtype)) {
      col.f32 = std::move(a.f32);
    } else if (a.dtype == NpyDtype::i64) {
      col.f32.reserve(a.i64.size());
      for (int64_t v : a.i64) {
        // float32 holds integers exactly up to 2^24; labels and counts fit.
        MR_CHECK(v >= -(int64_t{1} << 24) && v <= (int64_t{1} << 24), value, "array '", key,
                 "' of '", path, "' holds ", v, ", too large to represent exactly in float32");
        col.f32.push_back(static_cast<float>(v));
      }
    } else {
      col.u8 = std::move(a.u8);
    }
    add_column(*data, std::move(col), a.dims[0], "array '" + key + "' of '" + path + "'");
  }
  data->validate();
  return data;
}

}  // namespace mr
