// IDX reading: plain and gzip files, and every kind of malformed file.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/idx.h"

namespace mr {
namespace {

std::string temp_path(const std::string& name) { return (testing::TempDir() + "/mr_idx_" + name); }

std::vector<unsigned char> idx_bytes(std::vector<uint32_t> dims, unsigned char type = 0x08,
                                     size_t extra = 0, long drop = 0) {
  std::vector<unsigned char> b{0, 0, type, static_cast<unsigned char>(dims.size())};
  size_t n = 1;
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(d >> s));
    n *= d;
  }
  for (size_t i = 0; i < n + extra; ++i) b.push_back(static_cast<unsigned char>(i * 7));
  b.resize(b.size() - static_cast<size_t>(drop));
  return b;
}

void write_plain(const std::string& path, const std::vector<unsigned char>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void write_gz(const std::string& path, const std::vector<unsigned char>& b) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
}

TEST(Idx, ReadsPlainAndGzipInRowMajorOrder) {
  const auto bytes = idx_bytes({3, 2, 4});
  write_plain(temp_path("plain"), bytes);
  write_gz(temp_path("gz"), bytes);
  for (const char* name : {"plain", "gz"}) {
    const IdxArray a = read_idx(temp_path(name));
    EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2, 4}));
    ASSERT_EQ(a.data.size(), 24u);
    for (size_t i = 0; i < 24; ++i) EXPECT_EQ(a.data[i], static_cast<unsigned char>(i * 7));
  }
}

void expect_io_error(const std::string& path, const std::string& fragment) {
  try {
    read_idx(path);
    FAIL() << "no error for " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Idx, RejectsMalformedFiles) {
  expect_io_error(temp_path("missing-file"), "cannot open");
  auto bad_magic = idx_bytes({2});
  bad_magic[0] = 1;
  write_gz(temp_path("magic"), bad_magic);
  expect_io_error(temp_path("magic"), "bad magic");
  write_gz(temp_path("type"), idx_bytes({2}, 0x0D));
  expect_io_error(temp_path("type"), "only unsigned bytes");
  write_gz(temp_path("short"), idx_bytes({10, 10}, 0x08, 0, 5));
  expect_io_error(temp_path("short"), "truncated");
  write_gz(temp_path("long"), idx_bytes({4}, 0x08, 3));
  expect_io_error(temp_path("long"), "longer than its header");
  write_gz(temp_path("absurd"),
           std::vector<unsigned char>{0, 0, 8, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                      0x7F, 0xFF, 0xFF, 0xFF});
  expect_io_error(temp_path("absurd"), "absurd");
  write_gz(temp_path("header"), std::vector<unsigned char>{0, 0});
  expect_io_error(temp_path("header"), "truncated");
}

}  // namespace
}  // namespace mr
