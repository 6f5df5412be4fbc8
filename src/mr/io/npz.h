// Reader for NumPy .npz archives (a zip of .npy files), as Keras ships
// mnist.npz. Only what datasets need: unsigned bytes ('|u1') and little-endian
// int64 ('<i8') arrays in C order; anything else is refused with an io error
// naming the archive and the member.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mr {

struct NpyArray {
  std::vector<int64_t> dims;
  bool is_int64 = false;
  std::vector<uint8_t> u8;   // when !is_int64
  std::vector<int64_t> i64;  // when is_int64
  int64_t size() const;
};

// Parses one .npy file held in memory (`what` names it in errors).
NpyArray parse_npy(const std::vector<uint8_t>& bytes, const std::string& what);

// The members of an .npz archive, keyed without their ".npy" suffix.
std::map<std::string, NpyArray> read_npz(const std::string& path);

}  // namespace mr
