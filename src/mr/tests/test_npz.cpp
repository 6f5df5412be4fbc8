// The .npy/.npz reader.
#include <gtest/gtest.h>
#include <zip.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/npz.h"

namespace mr {
namespace {

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

TEST(Npz, ParsesBytesInt64AndFloatsAndRefusesOthers) {
  auto a = parse_npy(npy("|u1", "(2, 3)", 6), "x");
  EXPECT_EQ(a.dims, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(a.u8[5], 15);
  auto b = parse_npy(npy("<i8", "(2,)", 16), "y");
  EXPECT_EQ(b.dtype, NpyDtype::i64);
  EXPECT_EQ(b.dims, std::vector<int64_t>({2}));
  EXPECT_EQ(b.i64[0], 0x15120f0c09060300LL);
  EXPECT_EQ(parse_npy(npy("<f4", "(2,)", 8), "z").f32.size(), 2u);
  EXPECT_THROW(parse_npy(npy("<f2", "(2,)", 4), "z"), Error);
  EXPECT_THROW(parse_npy(npy(">f8", "(2,)", 16), "z"), Error);
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
