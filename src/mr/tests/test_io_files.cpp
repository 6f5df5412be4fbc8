// Atomic writes, whole-file reads and zip archives (libzip), including
// hostile archives: truncated, corrupted, and member names that climb out.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/file_util.h"
#include "io/zip_archive.h"
#include "tests/test_util.h"

namespace mr {
namespace {

std::string temp_dir(const std::string& name) {
  const std::string d = testing::TempDir() + "/mr_io_" + name;
  ::mkdir(d.c_str(), 0755);
  return d;
}

std::vector<std::string> list_dir(const std::string& d) {
  std::vector<std::string> out;
  if (DIR* dp = ::opendir(d.c_str())) {
    while (dirent* e = ::readdir(dp)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    ::closedir(dp);
  }
  return out;
}

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

TEST(AtomicWrite, WritesReplacesAndLeavesNoTemporary) {
  const std::string d = temp_dir("atomic");
  const std::string p = d + "/ckpt.bin";
  write_file_atomic(p, bytes_of("first"));
  EXPECT_EQ(read_file(p), bytes_of("first"));
  write_file_atomic(p, bytes_of("second, longer"), 1);
  EXPECT_EQ(read_file(p), bytes_of("second, longer"));
  for (const auto& n : list_dir(d)) EXPECT_FALSE(is_temp_name(n)) << n;
}

TEST(AtomicWrite, FailureLeavesTheOldFileAndNoTemporary) {
  const std::string d = temp_dir("atomic_fail");
  const std::string p = d + "/ckpt.bin";
  write_file_atomic(p, bytes_of("good"));
  // A directory in the way of the rename: the write must fail cleanly.
  const std::string blocked = d + "/sub";
  ::mkdir(blocked.c_str(), 0755);
  EXPECT_NE(io_error([&] { write_file_atomic(blocked, bytes_of("x")); }).find("is a directory"),
            std::string::npos);
  EXPECT_NE(io_error([&] {
              write_file_atomic(d + "/missing/x.bin", bytes_of("x"));
            }).find("does not exist"),
            std::string::npos);
  if (::geteuid() != 0) {  // root ignores permissions
    ::chmod(d.c_str(), 0555);
    EXPECT_NE(io_error([&] { write_file_atomic(p, bytes_of("new")); }).find("temporary"),
              std::string::npos);
    ::chmod(d.c_str(), 0755);
  }
  EXPECT_EQ(read_file(p), bytes_of("good"));
  for (const auto& n : list_dir(d)) EXPECT_FALSE(is_temp_name(n)) << n;
}

TEST(ReadFile, NamesTheFileAndTheProblem) {
  const std::string d = temp_dir("read");
  EXPECT_NE(io_error([&] { read_file(d + "/nope"); }).find(d + "/nope"), std::string::npos);
  EXPECT_NE(io_error([&] { read_file(d); }).find("is a directory"), std::string::npos);
  write_file_atomic(d + "/big", Bytes(100, 1));
  EXPECT_NE(io_error([&] { read_file(d + "/big", 10); }).find("exceeds the limit"),
            std::string::npos);
}

TEST(Zip, RoundTripsStoredMembers) {
  std::vector<ZipMember> m(3);
  m[0].name = "metadata.json";
  m[0].data = bytes_of("{}");
  m[1].name = "config.json";
  m[1].data = bytes_of("{\"a\": 1}");
  m[2].name = "model.weights.h5";
  m[2].data = Bytes(5000, 7);
  m[2].mtime = 1700000000;
  auto z = std::make_shared<Bytes>(zip_write(m, "t.keras"));
  ZipReader r(z, "t.keras");
  EXPECT_EQ(r.names(),
            (std::vector<std::string>{"metadata.json", "config.json", "model.weights.h5"}));
  EXPECT_EQ(r.read("config.json"), bytes_of("{\"a\": 1}"));
  EXPECT_EQ(r.read("model.weights.h5"), Bytes(5000, 7));
  EXPECT_NE(io_error([&] { r.read("nope"); }).find("has no member 'nope'"), std::string::npos);
  // Stored, not deflated: the payload appears verbatim in the archive.
  const std::string raw(z->begin(), z->end());
  EXPECT_NE(raw.find("{\"a\": 1}"), std::string::npos);
}

TEST(Zip, RejectsUnsafeMemberNames) {
  for (const char* bad :
       {"../evil", "a/../../b", "/etc/passwd", "C:x", "a\\b", "", "./a", "a//b"}) {
    const std::string msg = io_error([&] { check_member_name(bad, "t.keras"); });
    EXPECT_NE(msg.find("unsafe member name"), std::string::npos) << bad << ": " << msg;
  }
  EXPECT_NO_THROW(check_member_name("assets/x/y.txt", "t"));
  EXPECT_NO_THROW(check_member_name("a..b", "t"));
  std::vector<ZipMember> m(1);
  m[0].name = "../evil";
  EXPECT_THROW(zip_write(m, "t"), Error);
}

TEST(Zip, ReaderRejectsClimbingNamesInAnArchive) {
  // Write a valid archive with a same-length placeholder name, then patch
  // the name bytes (local header and central directory) to "../x".
  std::vector<ZipMember> m(1);
  m[0].name = "aaaa";
  m[0].data = bytes_of("payload");
  Bytes z = zip_write(m, "t");
  std::string raw(z.begin(), z.end());
  for (size_t pos = raw.find("aaaa"); pos != std::string::npos; pos = raw.find("aaaa", pos + 4))
    raw.replace(pos, 4, "../x");
  auto patched = std::make_shared<Bytes>(raw.begin(), raw.end());
  const std::string msg = io_error([&] { ZipReader r(patched, "evil.keras"); });
  EXPECT_NE(msg.find("evil.keras"), std::string::npos);
  EXPECT_NE(msg.find("climbs out"), std::string::npos) << msg;
}

TEST(Zip, TruncatedAndCorruptedArchivesAreIoErrors) {
  std::vector<ZipMember> m(1);
  m[0].name = "config.json";
  m[0].data = Bytes(2000, 'x');
  const Bytes z = zip_write(m, "t");
  auto cut = std::make_shared<Bytes>(z.begin(), z.begin() + static_cast<long>(z.size() / 2));
  EXPECT_NE(io_error([&] { ZipReader r(cut, "cut.keras"); }).find("cut.keras"), std::string::npos);
  auto garbage = std::make_shared<Bytes>(bytes_of("this is not a zip file at all"));
  EXPECT_NE(io_error([&] { ZipReader r(garbage, "g.keras"); }).find("not a valid zip"),
            std::string::npos);
  // Flip payload bytes: the CRC check catches it on read.
  auto flipped = std::make_shared<Bytes>(z);
  const std::string raw(z.begin(), z.end());
  const size_t at = raw.find("xxxx");
  (*flipped)[at + 10] = 'y';
  ZipReader r(flipped, "crc.keras");
  EXPECT_NE(io_error([&] { r.read("config.json"); }).find("damaged"), std::string::npos);
}

}  // namespace
}  // namespace mr
