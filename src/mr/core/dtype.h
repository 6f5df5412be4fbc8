// Element types of buffers (DESIGN §8). Every buffer has one; ops name the
// dtypes they implement and reject the others with mr::Error (value), so an
// unimplemented combination is a clear error and never a reinterpretation of
// bytes. Today every layer computes in f32; bf16/f16 inputs to gemm come with
// mixed precision.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mr {

enum class DType : uint8_t { f32, bf16, f16, int32, boolean };

// Bytes of one element.
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::int32:
      return 4;
    case DType::bf16:
    case DType::f16:
      return 2;
    case DType::boolean:
      return 1;
  }
  return 0;
}

// "float32", "bfloat16", "float16", "int32", "bool": Keras' dtype names.
constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::bf16:
      return "bfloat16";
    case DType::f16:
      return "float16";
    case DType::int32:
      return "int32";
    case DType::boolean:
      return "bool";
  }
  return "unknown";
}

// A typed view of device memory: what an op checks before it reads bytes.
struct TypedPtr {
  void* data = nullptr;
  DType dtype = DType::f32;
};

}  // namespace mr
