// i16: datasets stored as several files (data/file_parts.h), the .npz
// writer and headers they rest on, and the FILE shard policy of a
// multi-worker job (data/auto_shard.h).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/auto_shard.h"
#include "data/cache.h"
#include "data/file_parts.h"
#include "data/prefetch.h"
#include "data/transforms.h"
#include "io/file_util.h"
#include "io/npz.h"

namespace mr {
namespace {

// Per test: ctest runs the tests of this file in parallel processes.
std::string temp_path(const std::string& name) {
  return testing::TempDir() + "/mr_parts_" +
         testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + name;
}

NpyMember f64_member(const std::string& name, std::vector<int64_t> dims,
                     const std::vector<double>& v) {
  NpyMember m{name, std::move(dims), NpyDtype::f64, std::vector<uint8_t>(v.size() * 8)};
  std::memcpy(m.data.data(), v.data(), m.data.size());
  return m;
}

NpyMember i64_member(const std::string& name, const std::vector<int64_t>& v) {
  NpyMember m{
      name, {static_cast<int64_t>(v.size())}, NpyDtype::i64, std::vector<uint8_t>(v.size() * 8)};
  std::memcpy(m.data.data(), v.data(), m.data.size());
  return m;
}

// A part of `rows` rows whose x rows are (id, -id) and y the id, ids from `first`.
std::string write_part(const std::string& name, int64_t first, int64_t rows) {
  std::vector<double> x;
  std::vector<int64_t> y;
  for (int64_t i = first; i < first + rows; ++i) {
    x.push_back(static_cast<double>(i));
    x.push_back(-static_cast<double>(i));
    y.push_back(i);
  }
  const std::string path = temp_path(name);
  write_file_atomic(path, npz_bytes({f64_member("x", {rows, 2}, x), i64_member("y", y)}, path));
  return path;
}

// Component `comp` of every element, flattened.
std::vector<float> values(const Dataset& ds, size_t comp) {
  std::vector<float> out;
  auto it = ds.iterate(0);
  Element e;
  while (it->next(e))
    out.insert(out.end(), e.parts.at(comp).values.begin(), e.parts.at(comp).values.end());
  return out;
}

std::vector<float> range(int64_t from, int64_t to) {
  std::vector<float> v;
  for (int64_t i = from; i < to; ++i) v.push_back(static_cast<float>(i));
  return v;
}

std::vector<float> concat(std::vector<float> a, const std::vector<float>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Sizes and parts' rows of the five-part dataset used below: 4, 3, 5, 2, 6.
std::vector<std::vector<std::string>> five_parts() {
  const int64_t rows[5] = {4, 3, 5, 2, 6};
  std::vector<std::vector<std::string>> parts;
  int64_t first = 0;
  for (int i = 0; i < 5; ++i) {
    parts.push_back({write_part("p" + std::to_string(i) + ".npz", first, rows[i])});
    first += rows[i];
  }
  return parts;
}

std::vector<std::string> labels(const DatasetPtr& ds) {
  std::vector<std::string> out;
  for (DatasetPtr d = ds; d; d = d->input()) out.push_back(d->label());
  return out;
}

TEST(NpzWriter, RoundTripsEveryTypeAndReadsHeadersAlone) {
  const std::string path = temp_path("round.npz");
  NpyMember u{"u", {2, 3}, NpyDtype::u8, {0, 1, 2, 253, 254, 255}};
  NpyMember f{"f", {3}, NpyDtype::f32, std::vector<uint8_t>(12)};
  const float fv[3] = {0.5f, -1.25f, 3e38f};
  std::memcpy(f.data.data(), fv, 12);
  write_file_atomic(path, npz_bytes({u, f, f64_member("d", {1, 1, 2}, {1.0 / 3, -2.5}),
                                     i64_member("i", {-(int64_t{1} << 40), 7})},
                                    path));
  const auto arrays = read_npz(path);
  ASSERT_EQ(arrays.size(), 4u);
  EXPECT_EQ(arrays.at("u").dims, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(arrays.at("u").u8, std::vector<uint8_t>({0, 1, 2, 253, 254, 255}));
  EXPECT_EQ(arrays.at("f").f32, std::vector<float>({0.5f, -1.25f, 3e38f}));
  EXPECT_EQ(arrays.at("d").dims, std::vector<int64_t>({1, 1, 2}));
  EXPECT_EQ(arrays.at("d").f32, std::vector<float>({static_cast<float>(1.0 / 3), -2.5f}));
  EXPECT_EQ(arrays.at("i").i64, std::vector<int64_t>({-(int64_t{1} << 40), 7}));
  const auto headers = read_npz_headers(path);
  EXPECT_EQ(headers.at("d").dtype, NpyDtype::f64);
  EXPECT_EQ(headers.at("d").data_offset % 64, 0u);  // numpy's alignment
  EXPECT_EQ(headers.at("u").data_bytes, 6u);
  EXPECT_EQ(headers.at("i").dims, std::vector<int64_t>({2}));
  // The writer refuses names that are not safe member names.
  EXPECT_THROW(npz_bytes({i64_member("../x", {1})}, path), Error);
}

TEST(FileParts, ReadsThePartsInOrderOneAtATime) {
  const FilePartsDataset ds(FileFormat::npz, five_parts(), {"x", "y"});
  EXPECT_EQ(ds.cardinality(), 20);
  EXPECT_EQ(ds.total_parts(), 5);
  EXPECT_FALSE(ds.sharded());
  EXPECT_EQ(ds.spec().parts.at(0).shape, std::vector<int64_t>({2}));
  EXPECT_EQ(ds.spec().parts.at(0).rtype, RType::dbl);
  EXPECT_EQ(ds.spec().parts.at(1).rtype, RType::integer);
  EXPECT_EQ(ds.label(), "npz_dataset(5 parts, 2 components, 20 rows)");
  EXPECT_EQ(values(ds, 1), range(0, 20));
  const std::vector<float> x = values(ds, 0);
  ASSERT_EQ(x.size(), 40u);
  EXPECT_EQ(x[2 * 13], 13.0f);
  EXPECT_EQ(x[2 * 13 + 1], -13.0f);
}

TEST(FileParts, AFileShardIsEveryNthPart) {
  const FilePartsDataset ds(FileFormat::npz, five_parts(), {"x", "y"});
  auto w0 = ds.file_shard(2, 0), w1 = ds.file_shard(2, 1);
  // Parts 1, 3, 5 (rows 0-3, 7-11, 14-19) and parts 2, 4 (rows 4-6, 12-13).
  EXPECT_EQ(values(*w0, 1), concat(concat(range(0, 4), range(7, 12)), range(14, 20)));
  EXPECT_EQ(values(*w1, 1), concat(range(4, 7), range(12, 14)));
  EXPECT_EQ(w0->cardinality(), 15);
  EXPECT_TRUE(w0->sharded());
  EXPECT_EQ(w1->label(), "npz_dataset(parts 2, 4 of 5, 2 components, 5 rows)");
}

TEST(FileParts, BadPartsAreErrorsWhenMadeOrRead) {
  auto parts = five_parts();
  // A part whose rows have another shape.
  const std::string odd = temp_path("odd.npz");
  write_file_atomic(
      odd, npz_bytes({f64_member("x", {2, 3}, {1, 2, 3, 4, 5, 6}), i64_member("y", {1, 2})}, odd));
  auto with_odd = parts;
  with_odd.push_back({odd});
  EXPECT_THROW(FilePartsDataset(FileFormat::npz, with_odd, {"x", "y"}), Error);
  EXPECT_THROW(FilePartsDataset(FileFormat::npz, parts, {"x", "z"}), Error);
  EXPECT_THROW(FilePartsDataset(FileFormat::npz, {}, {"x"}), Error);
  EXPECT_THROW(FilePartsDataset(FileFormat::npz, {{temp_path("missing.npz")}}, {"x"}), Error);
  // A part rewritten after the dataset was made: its pass stops with an io
  // error instead of yielding a dataset of another length.
  const FilePartsDataset ds(FileFormat::npz, parts, {"x", "y"});
  write_part("p3.npz", 12, 3);
  try {
    values(ds, 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_NE(std::string(e.what()).find("changed"), std::string::npos) << e.what();
  }
}

void write_idx(const std::string& path, const std::vector<uint8_t>& dims_rows_width,
               const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b = {0, 0, 8, static_cast<uint8_t>(dims_rows_width.size())};
  for (uint8_t d : dims_rows_width) b.insert(b.end(), {0, 0, 0, d});
  b.insert(b.end(), data.begin(), data.end());
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
}

TEST(FileParts, IdxPartsHaveOneFilePerComponent) {
  write_idx(temp_path("a-x.gz"), {2, 2}, {1, 2, 3, 4});
  write_idx(temp_path("a-y.gz"), {2}, {7, 8});
  write_idx(temp_path("b-x.gz"), {1, 2}, {5, 6});
  write_idx(temp_path("b-y.gz"), {1}, {9});
  const FilePartsDataset ds(
      FileFormat::idx,
      {{temp_path("a-x.gz"), temp_path("a-y.gz")}, {temp_path("b-x.gz"), temp_path("b-y.gz")}}, {});
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(values(ds, 0), std::vector<float>({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(ds, 1), std::vector<float>({7, 8, 9}));
  // Labels with images' row count, and a part missing a component.
  EXPECT_THROW(FilePartsDataset(FileFormat::idx, {{temp_path("a-x.gz"), temp_path("b-y.gz")}}, {}),
               Error);
  EXPECT_THROW(
      FilePartsDataset(FileFormat::idx,
                       {{temp_path("a-x.gz"), temp_path("a-y.gz")}, {temp_path("b-x.gz")}}, {}),
      Error);
}

// Worker w of 2, one replica each: the batch-split rule's halves.
int64_t halves(int64_t rows, int w) { return rows / 2 + (w < rows % 2 ? 1 : 0); }

TEST(AutoShard, EachWorkerReadsItsPartsAndBatchesItsRowsOfTheGlobalBatch) {
  auto parts = std::make_shared<FilePartsDataset>(FileFormat::npz, five_parts(),
                                                  std::vector<std::string>{"x", "y"});
  const std::string cache = temp_path("cache.bin");
  std::remove((cache + ".worker0").c_str());
  std::remove((cache + ".worker1").c_str());
  const DatasetPtr chain = make_prefetch(make_batch(make_cache(parts, cache), 5, false), 2);
  const FileShards w0 = shard_by_files(chain, 2, 0, halves);
  const FileShards w1 = shard_by_files(chain, 2, 1, halves);
  ASSERT_NE(w0.dataset, nullptr);
  ASSERT_NE(w1.dataset, nullptr);
  EXPECT_EQ(labels(w0.dataset),
            std::vector<std::string>({"prefetch(buffer_size = 2)",
                                      "batch(batch_size = 3, drop_remainder = FALSE)",
                                      "cache(filename = \"" + cache + ".worker0\")",
                                      "npz_dataset(parts 1, 3, 5 of 5, 2 components, 15 rows)"}));
  EXPECT_EQ(labels(w1.dataset)[1], "batch(batch_size = 2, drop_remainder = FALSE)");
  EXPECT_TRUE(w0.dataset->sharded());
  // Worker 0: 15 rows in batches of 3 (5 steps); worker 1: 5 rows in
  // batches of 2 (3 steps). The job's pass is the longer one.
  EXPECT_EQ(w0.dataset->cardinality(), 5);
  EXPECT_EQ(w1.dataset->cardinality(), 3);
  EXPECT_EQ(w0.global_batches, 5);
  EXPECT_EQ(w1.global_batches, 5);
  EXPECT_EQ(values(*w1.dataset, 1), concat(range(4, 7), range(12, 14)));
  // The user's dataset is untouched.
  EXPECT_EQ(chain->input()->label(), "batch(batch_size = 5, drop_remainder = FALSE)");
}

TEST(AutoShard, KeepsDatasetsItCannotShardByFile) {
  auto parts = std::make_shared<FilePartsDataset>(FileFormat::npz, five_parts(),
                                                  std::vector<std::string>{"x", "y"});
  const DatasetPtr batched = make_batch(parts, 4, true);
  // Fewer parts than workers (TF falls back to DATA sharding too).
  EXPECT_EQ(shard_by_files(batched, 6, 0, halves).dataset, nullptr);
  // Already sharded by the user, and elements that are not batches.
  EXPECT_EQ(shard_by_files(make_batch(make_shard(parts, 2, 0), 4, false), 2, 0, halves).dataset,
            nullptr);
  EXPECT_EQ(shard_by_files(parts, 2, 0, halves).dataset, nullptr);
  // A worker that would take no row of a global batch.
  EXPECT_EQ(shard_by_files(make_batch(parts, 1, false), 2, 0, halves).dataset, nullptr);
  // One worker: nothing to shard.
  EXPECT_EQ(shard_by_files(batched, 1, 0, halves).dataset, nullptr);
  // Only the outermost batch() holds the global batch; drop_remainder stays.
  const FileShards s =
      shard_by_files(make_batch(make_batch(parts, 2, false), 4, true), 2, 1, halves);
  ASSERT_NE(s.dataset, nullptr);
  EXPECT_EQ(labels(s.dataset)[0], "batch(batch_size = 2, drop_remainder = TRUE)");
  EXPECT_EQ(labels(s.dataset)[1], "batch(batch_size = 2, drop_remainder = FALSE)");
}

}  // namespace
}  // namespace mr
