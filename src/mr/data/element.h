// Elements of a dataset: a tuple of components, each a row-major float32
// tensor with its own shape and the R type it converts back to. Components
// keep their values as float32 whatever the R type, so every transform works
// on one representation; integers are exact up to 2^24.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mr {

// The R type a component converts back to (R has no float32).
enum class RType : uint8_t { dbl = 0, integer = 1, logical = 2 };
const char* rtype_name(RType t) noexcept;

struct Component {
  std::vector<int64_t> shape;  // per-element shape; empty = a scalar
  std::vector<float> values;   // row-major, numel(shape) values
  RType rtype = RType::dbl;
};

using Names = std::shared_ptr<const std::vector<std::string>>;

struct Element {
  std::vector<Component> parts;
  Names names;  // component names (a named R list), or null
};

int64_t numel(const std::vector<int64_t>& shape);
std::string shape_string(const std::vector<int64_t>& shape);

// What is known about a component before iterating: dims of -1 are unknown
// (e.g. the size of a last partial batch).
struct ComponentSpec {
  std::vector<int64_t> shape;
  RType rtype = RType::dbl;
};

// The static structure of a dataset's elements; `known` is false after a
// transform whose output is only known by running it (an R map).
struct ElementSpec {
  bool known = true;
  std::vector<ComponentSpec> parts;
  Names names;
};

std::string spec_string(const ElementSpec& spec);

// 64-bit hashing of a dataset definition (a cache file's fingerprint): not
// cryptographic, only meant to tell datasets apart.
class Hasher {
 public:
  void bytes(const void* data, size_t n);
  void u64(uint64_t v);
  void str(const std::string& s);
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0x243F6A8885A308D3ull;
};

}  // namespace mr
