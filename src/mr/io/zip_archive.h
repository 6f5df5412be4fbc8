// Zip archives in memory, on libzip: what a .keras file is. Members are
// stored uncompressed (ZIP_STORED), as Keras writes them.
//
// Member names are checked on both sides: relative, '/'-separated, no empty,
// "." or ".." component, no backslash, no NUL, no drive letter, unique. A
// reader never writes to the file system, and never allocates more for a
// member than its declared size, which is checked against limits first.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "io/file_util.h"

namespace mr {

struct ZipMember {
  std::string name;
  Bytes data;
  std::time_t mtime = 0;  // 0: 1980-01-01 00:00 (the zip epoch, as Keras' JSON members)
};

// The archive's bytes. `what` names it in errors.
Bytes zip_write(const std::vector<ZipMember>& members, const std::string& what);

// Throws mr::Error (io) naming `what` when `name` is not a safe member name.
void check_member_name(const std::string& name, const std::string& what);

struct ZipLimits {
  uint64_t max_member_bytes = uint64_t{1} << 38;  // one member
  uint64_t max_members = 100000;
};

class ZipReader {
 public:
  // Opens the archive held in `bytes` (kept alive by the reader). Throws
  // mr::Error (io) naming `what` for anything that is not a consistent zip
  // archive or that holds an unsafe member name.
  ZipReader(std::shared_ptr<const Bytes> bytes, std::string what, ZipLimits limits = {});
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const;
  // The member's bytes; the CRC is checked. Throws for a missing member.
  Bytes read(const std::string& name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string what_;
  ZipLimits limits_;
  std::vector<std::string> names_;
};

}  // namespace mr
