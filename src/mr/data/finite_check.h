// Non-finite values (NaN, Inf) in a batch, found on the host while the batch
// is assembled: the step never syncs a device to look for them. The scan is
// one pass over the floats on integer bit patterns (an exponent of all ones
// is NaN or +-Inf), which the compiler vectorizes; only a block known to hold
// one is scanned again to locate it.
#pragma once

#include <cstdint>
#include <string>

namespace mr {

// Index of the first NaN or +-Inf of p[0..n), or -1 when all are finite.
int64_t first_non_finite(const float* p, int64_t n);

// "a NaN", "an Inf" or "a -Inf" for a non-finite value (error messages).
const char* non_finite_name(float v);

}  // namespace mr
