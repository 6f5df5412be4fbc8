// Reader and writer for NumPy .npz archives (a zip of .npy files), as Keras
// ships mnist.npz. Only what datasets need: unsigned bytes ('|u1'),
// little-endian int64 ('<i8'), float32 ('<f4') and float64 ('<f8') arrays in
// C order; anything else is refused with an io error naming the archive and
// the member. float64 values are read as float32, what the core computes in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace mr {

enum class NpyDtype { u8, i64, f32, f64 };
inline bool is_float(NpyDtype t) { return t == NpyDtype::f32 || t == NpyDtype::f64; }

struct NpyArray {
  std::vector<int64_t> dims;
  NpyDtype dtype = NpyDtype::u8;  // as stored in the file
  std::vector<uint8_t> u8;        // when u8
  std::vector<int64_t> i64;       // when i64
  std::vector<float> f32;         // when f32 or f64
  int64_t size() const;
};

// The header of a .npy file: what parse_npy() would return, without the data.
struct NpyHeader {
  std::vector<int64_t> dims;
  NpyDtype dtype = NpyDtype::u8;
  size_t data_offset = 0;  // where the values start
  size_t data_bytes = 0;   // what the shape and type need
};
// Parses the header at the start of `n` bytes (which may end after it).
NpyHeader parse_npy_header(const uint8_t* bytes, size_t n, const std::string& what);

// Parses one .npy file held in memory (`what` names it in errors).
NpyArray parse_npy(const std::vector<uint8_t>& bytes, const std::string& what);

// The members of an .npz archive, keyed without their ".npy" suffix.
std::map<std::string, NpyArray> read_npz(const std::string& path);

// An array to write: its values row-major (C order), little-endian, as
// `dtype` says (u8: 1 byte each, i64 and f64: 8, f32: 4).
struct NpyMember {
  std::string name;  // without ".npy"
  std::vector<int64_t> dims;
  NpyDtype dtype = NpyDtype::f64;
  std::vector<uint8_t> data;
};

// The bytes of an .npz archive holding `members` (stored, uncompressed, as
// numpy.savez writes them); `what` names it in errors.
std::vector<uint8_t> npz_bytes(const std::vector<NpyMember>& members, const std::string& what);

// The member `key` of the archive at `path` read as `members` (arrays or
// headers); Error(value) listing the members it has when there is none.
template <class Members>
auto find_array(Members& members, const std::string& path, const std::string& key) {
  auto it = members.find(key);
  if (it == members.end()) {
    std::string have;
    for (const auto& kv : members) have += (have.empty() ? "" : ", ") + kv.first;
    fail(ErrorKind::value, "'", path, "' has no array '", key, "' (it has: ", have, ")");
  }
  return it;
}

// The headers of an .npz archive's members, reading (inflating) only the
// headers; a member whose size does not match its header is refused.
std::map<std::string, NpyHeader> read_npz_headers(const std::string& path);

}  // namespace mr
