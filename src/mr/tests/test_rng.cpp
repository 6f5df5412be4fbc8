// Philox4x32-10 against Random123's published known-answer vectors
// (Random123 1.x, tests/kat_vectors, the three "philox4x32 10" lines:
// counter words 0..3, key words 0..1, expected output words 0..3). Our key is
// one 64-bit value: key word 0 is its low half, word 1 its high half.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/rng.h"

namespace mr {
namespace {

struct Kat {
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t want[4];
};

TEST(Philox, MatchesRandom123KnownAnswers) {
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    const uint64_t key = uint64_t{k.key[0]} | (uint64_t{k.key[1]} << 32);
    const Philox4 out = philox4x32(Philox4{{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}}, key);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out[i], k.want[i]) << "word " << i << " of ctr " << k.ctr[0];
  }
}

// RandomStream's block b is Philox of counter (b lo, b hi, step lo, stream ^
// step hi) under the seed: pinned here so a change of the stream layout (which
// would change every dropout mask and initial weight) is deliberate.
TEST(Philox, RandomStreamLayout) {
  const RandomStream rs(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0);
  EXPECT_EQ(rs.bits(0),
            philox4x32(Philox4{{0, 0, 0x13198a2eu, 0x03707344u}}, 0x299f31d0a4093822ull)[0]);
  const Philox4 b = rs.block((uint64_t{0x85a308d3u} << 32) | 0x243f6a88u);
  EXPECT_EQ(b[0], 0xd16cfe09u);
  EXPECT_EQ(b[3], 0x24126ea1u);
}

}  // namespace
}  // namespace mr
