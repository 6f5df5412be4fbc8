// Counter-based random numbers (Philox4x32-10, Salmon et al. 2011). A value is a
// pure function of (key, counter): dropout masks, shuffles and initial weights
// therefore depend on the seed and on the global position of an element, never
// on which thread or replica draws it, nor on how many draws came before.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/hd.h"

namespace mr {

// Four 32-bit words. A plain aggregate (not std::array) so that the CUDA
// kernels draw the same numbers with the same code.
struct Philox4 {
  uint32_t w[4];
  MR_HD uint32_t operator[](uint64_t i) const { return w[i]; }
};

MR_HD Philox4 philox4x32(Philox4 ctr, uint64_t key) {
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * ctr[2];
    ctr = Philox4{{static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ k0, static_cast<uint32_t>(p1),
                   static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ k1, static_cast<uint32_t>(p0)}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

// The random stream of one purpose (a layer's dropout at one step, an
// initializer, an epoch's shuffle): element i of the stream is word i % 4 of
// block i / 4.
class RandomStream {
 public:
  MR_HD RandomStream(uint64_t seed, uint64_t step, uint32_t stream)
      : seed_(seed), step_(step), stream_(stream) {}

  MR_HD uint32_t bits(uint64_t index) const { return block(index >> 2)[index & 3]; }
  // Elements 4*b .. 4*b+3 at once (one Philox call for four draws).
  MR_HD Philox4 block(uint64_t b) const {
    const Philox4 ctr{{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                       static_cast<uint32_t>(step_), stream_ ^ static_cast<uint32_t>(step_ >> 32)}};
    return philox4x32(ctr, seed_);
  }
  // The uniform of a word of block(): bits >> 8 scaled to [0, 1).
  MR_HD static float uniform_of(uint32_t word) {
    return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
  }
  // Uniform in [0, 1) with 24 random bits (exactly representable in float).
  MR_HD float uniform(uint64_t index) const { return uniform_of(bits(index)); }
  // Uniform in [0, 1) with 53 random bits, from elements 2i and 2i+1.
  double uniform_double(uint64_t index) const {
    const uint64_t hi = bits(2 * index) >> 5, lo = bits(2 * index + 1) >> 6;
    return static_cast<double>((hi << 26) | lo) * (1.0 / 9007199254740992.0);
  }
  // Standard normal (Box-Muller on elements 2i and 2i+1 of the double stream).
  double normal(uint64_t index) const {
    const double u1 = 1.0 - uniform_double(2 * index);  // (0, 1]: log is finite
    const double u2 = uniform_double(2 * index + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t seed_;
  uint64_t step_;
  uint32_t stream_;
};

}  // namespace mr
