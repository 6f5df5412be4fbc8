// SHA-256 (FIPS 180-4), to check downloaded files against published digests.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace mr {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  // The digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> finish();
  // finish() as 64 lower-case hex digits.
  std::string hex();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t bytes_ = 0;
};

std::string sha256_hex(const void* data, size_t n);
// Streams the file; throws mr::Error (io) when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace mr
