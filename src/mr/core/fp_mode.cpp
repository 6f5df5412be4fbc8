#include "core/fp_mode.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define MR_HAVE_MXCSR 1
#endif

namespace mr {

#ifdef MR_HAVE_MXCSR
namespace {
constexpr unsigned int kFtzDaz = 0x8040;  // FTZ (bit 15) | DAZ (bit 6)
}
FlushToZeroGuard::FlushToZeroGuard() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtzDaz); }
FlushToZeroGuard::~FlushToZeroGuard() { _mm_setcsr(saved_); }
bool flush_to_zero_enabled() { return (_mm_getcsr() & kFtzDaz) == kFtzDaz; }
#else
FlushToZeroGuard::FlushToZeroGuard() = default;
FlushToZeroGuard::~FlushToZeroGuard() = default;
bool flush_to_zero_enabled() { return false; }
#endif

}  // namespace mr
