// HDF5 files in memory, on libhdf5: the writer builds a file image (core
// driver, no backing store) that the caller writes atomically; the reader
// opens an image already read into memory. Only what Keras' weights files
// use: groups, float32 datasets of any rank, int64/float scalars and string
// attributes.
//
// HDF5's own error printing is silenced (H5Eset_auto) on every entry; a
// failing HDF5 call becomes mr::Error (io) naming the file (`what`), the
// object and HDF5's innermost message. Readers check every dataset's rank and
// dimensions before allocating anything for it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/file_util.h"

namespace mr {

class H5Writer {
 public:
  explicit H5Writer(std::string what);
  ~H5Writer();
  H5Writer(const H5Writer&) = delete;
  H5Writer& operator=(const H5Writer&) = delete;

  // Creates the group and any missing parents ("layers/dense/vars").
  void group(const std::string& path);
  // A variable-length UTF-8 string attribute on a group ("" = the root), as
  // h5py writes Python strings.
  void attr_string(const std::string& path, const std::string& name, const std::string& value);
  void dataset_f32(const std::string& path, const std::vector<int64_t>& dims, const float* data);
  void scalar_f32(const std::string& path, float v);
  void scalar_i64(const std::string& path, int64_t v);
  // Flushes and returns the file's bytes; the writer is closed afterwards.
  Bytes finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class H5Reader {
 public:
  H5Reader(const Bytes& image, std::string what);
  ~H5Reader();
  H5Reader(const H5Reader&) = delete;
  H5Reader& operator=(const H5Reader&) = delete;

  const std::string& what() const { return what_; }
  bool is_group(const std::string& path) const;
  bool is_dataset(const std::string& path) const;
  // Names of a group's members (sorted by name, HDF5's default index).
  std::vector<std::string> children(const std::string& path) const;
  // A string attribute of a group ("" = the root); `found` false when absent.
  std::string attr_string(const std::string& path, const std::string& name, bool* found) const;
  // Rank and dimensions of a dataset; absurd ranks (> 32) or dimensions
  // (negative, or more than 2^40 elements in all) are errors.
  std::vector<int64_t> dims(const std::string& path) const;
  // Reads a numeric dataset converted to float32; its dimensions must equal
  // `expect` (checked before allocating).
  std::vector<float> read_f32(const std::string& path, const std::vector<int64_t>& expect) const;
  double read_scalar(const std::string& path) const;
  int64_t read_scalar_i64(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string what_;
};

}  // namespace mr
