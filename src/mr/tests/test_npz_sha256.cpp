// SHA-256 known answers (FIPS 180-4 examples) and the .npy/.npz reader.
#include <gtest/gtest.h>
#include <zip.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/npz.h"
#include "io/sha256.h"

namespace mr {
namespace {

TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(two.data(), two.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 h;  // a million 'a', fed in uneven pieces
  const std::string a(999, 'a');
  size_t fed = 0;
  while (fed < 1000000) {
    const size_t n = std::min<size_t>(a.size() - fed % 7, 1000000 - fed);
    h.update(a.data(), n);
    fed += n;
  }
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  const std::string path = testing::TempDir() + "/mr_sha_abc";
  { std::ofstream(path, std::ios::binary) << "abc"; }
  EXPECT_EQ(sha256_file(path), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(sha256_file(path + "-missing"), Error);
  std::remove(path.c_str());
}

std::vector<uint8_t> npy(const std::string& descr, const std::string& shape, size_t data_bytes,
                         bool fortran = false) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                  ", 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  std::vector<uint8_t> b = {0x93,
                            'N',
                            'U',
                            'M',
                            'P',
                            'Y',
                            1,
                            0,
                            static_cast<uint8_t>(h.size() & 255),
                            static_cast<uint8_t>(h.size() >> 8)};
  b.insert(b.end(), h.begin(), h.end());
  for (size_t i = 0; i < data_bytes; ++i) b.push_back(static_cast<uint8_t>(i * 3));
  return b;
}

TEST(Npz, ParsesBytesAndInt64AndRefusesOthers) {
  auto a = parse_npy(npy("|u1", "(2, 3)", 6), "x");
  EXPECT_EQ(a.dims, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(a.u8[5], 15);
  auto b = parse_npy(npy("<i8", "(2,)", 16), "y");
  EXPECT_TRUE(b.is_int64);
  EXPECT_EQ(b.dims, std::vector<int64_t>({2}));
  EXPECT_EQ(b.i64[0], 0x15120f0c09060300LL);
  EXPECT_THROW(parse_npy(npy("<f4", "(2,)", 8), "z"), Error);
  EXPECT_THROW(parse_npy(npy("|u1", "(2, 3)", 6, true), "z"), Error);
  EXPECT_THROW(parse_npy(npy("|u1", "(2, 3)", 5), "z"), Error);
  auto bad = npy("|u1", "(1,)", 1);
  bad[1] = 'X';
  EXPECT_THROW(parse_npy(bad, "z"), Error);
}

TEST(Npz, ReadsAZipOfNpyMembers) {
  const std::string path = testing::TempDir() + "/mr_test.npz";
  std::remove(path.c_str());
  const auto x = npy("|u1", "(4, 2, 2)", 16), y = npy("<i8", "(4,)", 32);
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  zip_file_add(z, "x_train.npy", zip_source_buffer(z, x.data(), x.size(), 0), 0);
  zip_file_add(z, "y_train.npy", zip_source_buffer(z, y.data(), y.size(), 0), 0);
  ASSERT_EQ(zip_close(z), 0);
  auto m = read_npz(path);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("x_train").dims, std::vector<int64_t>({4, 2, 2}));
  EXPECT_EQ(m.at("y_train").i64.size(), 4u);
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << "PK not really"; }
  EXPECT_THROW(read_npz(path), Error);
  EXPECT_THROW(read_npz(path + ".missing"), Error);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mr
