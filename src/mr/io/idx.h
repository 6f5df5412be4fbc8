// Reader for IDX files (the MNIST format), plain or gzip-compressed: a
// big-endian header (two zero bytes, a type code, the number of dimensions,
// then each dimension as a 32-bit integer) followed by the values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mr {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // row-major (C order), dims product values
};

// Only unsigned-byte files (type 0x08) are accepted: that is what MNIST uses.
// Throws mr::Error (io) naming the file for a missing file, a wrong magic
// number, absurd dimensions or a file shorter (or longer) than its header says.
IdxArray read_idx(const std::string& path);

// The dimensions alone, from the header (the data is not read).
std::vector<int64_t> read_idx_dims(const std::string& path);

}  // namespace mr
