// The dataset graph: every transform against the same operation written out
// by hand, shuffle properties, cache files, prefetch threads and errors, and
// the BatchSource adapter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/builtin_transforms.h"
#include "data/cache.h"
#include "data/dataset_source.h"
#include "data/map.h"
#include "data/prefetch.h"
#include "data/sources.h"
#include "data/transforms.h"
#include "tests/dataset_rows.h"
#include "tests/test_util.h"

namespace mr {
namespace {

// The first value of component 0 of every element (a row id for unbatched data).
std::vector<std::vector<float>> collect(const Dataset& ds, uint64_t key = 0, size_t comp = 1) {
  std::vector<std::vector<float>> out;
  auto it = ds.iterate(key);
  Element e;
  while (it->next(e)) out.push_back(e.parts.at(comp).values);
  return out;
}

std::vector<int64_t> ids(const Dataset& ds, uint64_t key = 0) {
  std::vector<int64_t> out;
  for (const auto& v : collect(ds, key)) out.push_back(static_cast<int64_t>(v.at(0)));
  return out;
}

std::vector<int64_t> seq(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

TEST(Dataset, SlicesKeepRowsShapesAndTypes) {
  auto ds = range_source(5);
  EXPECT_EQ(ds->cardinality(), 5);
  auto it = ds->iterate(0);
  Element e;
  ASSERT_TRUE(it->next(e));
  ASSERT_TRUE(it->next(e));
  EXPECT_EQ(e.parts[0].shape, std::vector<int64_t>({2}));
  EXPECT_EQ(e.parts[0].values, std::vector<float>({1, 101}));
  EXPECT_TRUE(e.parts[1].shape.empty());
  EXPECT_EQ(e.parts[1].rtype, RType::integer);
}

TEST(Dataset, BatchMatchesHandWrittenBatches) {
  auto src = range_source(7);
  auto b = make_batch(src, 3, false);
  EXPECT_EQ(b->cardinality(), 3);
  auto it = b->iterate(0);
  Element e;
  std::vector<int64_t> sizes;
  std::vector<float> all;
  while (it->next(e)) {
    sizes.push_back(e.parts[0].shape[0]);
    EXPECT_EQ(e.parts[0].shape.size(), 2u);
    EXPECT_EQ(e.parts[1].shape, std::vector<int64_t>({e.parts[0].shape[0]}));
    all.insert(all.end(), e.parts[0].values.begin(), e.parts[0].values.end());
  }
  EXPECT_EQ(sizes, std::vector<int64_t>({3, 3, 1}));
  std::vector<float> want;
  for (int i = 0; i < 7; ++i) {
    want.push_back(static_cast<float>(i));
    want.push_back(static_cast<float>(100 + i));
  }
  EXPECT_EQ(all, want);
  auto d = make_batch(src, 3, true);
  EXPECT_EQ(d->cardinality(), 2);
  EXPECT_EQ(collect(*d).size(), 2u);
  EXPECT_THROW(make_batch(src, 0, false), Error);
}

TEST(Dataset, RepeatTakeSkipCompose) {
  auto src = range_source(4);
  EXPECT_EQ(ids(*make_repeat(src, 2)), std::vector<int64_t>({0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(make_repeat(src, -1)->cardinality(), kInfinite);
  EXPECT_EQ(ids(*make_take(make_repeat(src, -1), 6)), std::vector<int64_t>({0, 1, 2, 3, 0, 1}));
  EXPECT_EQ(ids(*make_skip(src, 1)), std::vector<int64_t>({1, 2, 3}));
  EXPECT_EQ(ids(*make_skip(src, 9)), std::vector<int64_t>({}));
  EXPECT_EQ(ids(*make_take(src, -1)), seq(0, 4));
  EXPECT_EQ(make_skip(src, -1)->cardinality(), 0);
  EXPECT_EQ(make_take(make_skip(src, 1), 2)->cardinality(), 2);
  EXPECT_EQ(ids(*make_take(make_skip(make_repeat(src, 3), 3), 5)),
            std::vector<int64_t>({3, 0, 1, 2, 3}));
  // Repeating nothing forever ends.
  EXPECT_TRUE(ids(*make_repeat(make_take(src, 0), -1)).empty());
}

TEST(Dataset, ShuffleIsASeededPermutationWithBoundedLookahead) {
  const int64_t n = 200, buffer = 10;
  auto src = range_source(n);
  auto sh = make_shuffle(src, buffer, 42, true);
  const auto a = ids(*sh, 0), again = ids(*sh, 0), next_epoch = ids(*sh, 1);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, seq(0, n));
  EXPECT_EQ(a, again);
  EXPECT_NE(a, next_epoch);
  EXPECT_NE(a, ids(*make_shuffle(src, buffer, 43, true), 0));
  EXPECT_NE(a, seq(0, n));
  EXPECT_EQ(ids(*make_shuffle(src, buffer, 42, false), 0),
            ids(*make_shuffle(src, buffer, 42, false), 1));
  for (int64_t pos = 0; pos < n; ++pos) EXPECT_GE(pos, a[static_cast<size_t>(pos)] - buffer + 1);
  // A buffer of one keeps the order; a buffer larger than the data is a full shuffle.
  EXPECT_EQ(ids(*make_shuffle(src, 1, 3, true)), seq(0, n));
  auto full = ids(*make_shuffle(src, 1000, 3, true));
  std::sort(full.begin(), full.end());
  EXPECT_EQ(full, seq(0, n));
}

TEST(Dataset, ShuffleThenRepeatReshufflesEachRepetition) {
  auto ds = make_repeat(make_shuffle(range_source(50), 50, 7, true), 2);
  const auto v = ids(*ds);
  ASSERT_EQ(v.size(), 100u);
  EXPECT_NE(std::vector<int64_t>(v.begin(), v.begin() + 50),
            std::vector<int64_t>(v.begin() + 50, v.end()));
}

TEST(Dataset, MemoryCacheReplaysTheFirstCompletePass) {
  int calls = 0;
  class Count final : public ElementFunction {
   public:
    explicit Count(int* n) : n_(n) {}
    void apply(Element&) override { ++*n_; }
    ElementSpec spec(const ElementSpec& in) const override { return in; }
    std::string label() const override { return "count"; }

   private:
    int* n_;
  };
  auto cached = make_cache(make_map(range_source(6), std::make_shared<Count>(&calls)), "");
  {  // a partial pass records nothing
    auto it = cached->iterate(0);
    Element e;
    it->next(e);
  }
  EXPECT_EQ(cached->memory_bytes(), 0);
  EXPECT_EQ(ids(*cached), seq(0, 6));
  const int after_first = calls;
  EXPECT_EQ(ids(*cached), seq(0, 6));
  EXPECT_EQ(calls, after_first);
  EXPECT_GT(cached->memory_bytes(), 0);
}

TEST(Dataset, FileCacheIsAtomicAndFingerprinted) {
  const std::string path = testing::TempDir() + "/mr_cache_test.bin";
  std::remove(path.c_str());
  auto src = range_source(9);
  auto ds = make_cache(make_batch(src, 4, false), path);
  {
    auto it = ds->iterate(0);
    Element e;
    ASSERT_TRUE(it->next(e));  // interrupted first pass: nothing at `path`
  }
  EXPECT_FALSE(std::ifstream(path).good());
  const auto first = collect(*ds, 0, 0);
  ASSERT_EQ(first.size(), 3u);
  std::ifstream check(path, std::ios::binary);
  ASSERT_TRUE(check.good());
  check.close();
  EXPECT_EQ(collect(*ds, 1, 0), first);  // replayed from the file
  // Another dataset refuses this file.
  auto other = make_cache(make_batch(src, 3, false), path);
  EXPECT_THROW(collect(*other), Error);
  // A truncated file is refused.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 5));
  }
  try {
    collect(*ds);
    FAIL() << "a truncated cache was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << "not a cache at all, just text";
  }
  EXPECT_THROW(collect(*ds), Error);
  std::remove(path.c_str());
}

TEST(Dataset, PrefetchYieldsTheSameElementsAndJoinsItsThread) {
  auto src = make_batch(range_source(100), 8, false);
  const int before = thread_count();
  {
    auto pf = make_prefetch(src, kAutotune);
    EXPECT_EQ(collect(*pf), collect(*src));
    auto it = pf->iterate(0);  // abandoned mid-pass
    Element e;
    ASSERT_TRUE(it->next(e));
    EXPECT_EQ(thread_count(), before + 1);
  }
  EXPECT_EQ(thread_count(), before);
}

TEST(Dataset, PrefetchRethrowsOnTheCallersThread) {
  // One-hot of a label 12 with 10 classes fails on the prefetch thread.
  auto bad = make_prefetch(make_map(range_source(20), make_one_hot({1}, 10)), 2);
  const int before = thread_count();
  auto it = bad->iterate(0);
  Element e;
  int got = 0;
  try {
    while (it->next(e)) ++got;
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::value);
  }
  EXPECT_EQ(got, 10);  // the elements produced before the error came first
  it.reset();
  EXPECT_EQ(thread_count(), before);
}

TEST(Dataset, BuiltinTransforms) {
  auto src = range_source(3);
  auto ds =
      make_map(make_map(src, make_affine({0}, {0.5f}, {1.0f}, "rescale")), make_one_hot({1}, 4));
  auto it = ds->iterate(0);
  Element e;
  ASSERT_TRUE(it->next(e));
  ASSERT_TRUE(it->next(e));
  EXPECT_EQ(e.parts[0].values, std::vector<float>({1.5f, 51.5f}));
  EXPECT_EQ(e.parts[0].rtype, RType::dbl);
  EXPECT_EQ(e.parts[1].shape, std::vector<int64_t>({4}));
  EXPECT_EQ(e.parts[1].values, std::vector<float>({0, 1, 0, 0}));
  auto per = make_map(src, make_affine({0}, {1.0f, 2.0f}, {0.0f, -200.0f}, "normalize"));
  EXPECT_EQ(collect(*per, 0, 0)[2], std::vector<float>({2, 4}));
  auto cast = make_map(make_map(src, make_affine({0}, {0.3f}, {0.0f}, "rescale")),
                       make_cast({0}, RType::integer));
  EXPECT_EQ(collect(*cast, 0, 0)[2], std::vector<float>({0, 30}));
  EXPECT_THROW(collect(*make_map(src, make_affine({0}, {1, 2, 3}, {0}, "rescale"))), Error);
  EXPECT_THROW(collect(*make_map(src, make_cast({5}, RType::logical))), Error);
}

TEST(Dataset, BatchRejectsRaggedElements) {
  class Grow final : public ElementFunction {
   public:
    void apply(Element& e) override {
      const auto n = static_cast<int64_t>(e.parts[1].values[0]) + 1;
      e.parts[0].shape = {n};
      e.parts[0].values.assign(static_cast<size_t>(n), 1.0f);
    }
    ElementSpec spec(const ElementSpec&) const override { return {false, {}, nullptr}; }
    std::string label() const override { return "grow"; }
  };
  auto ds = make_batch(make_map(range_source(4), std::make_shared<Grow>()), 2, false);
  try {
    collect(*ds);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::shape);
  }
}

class CountingAllocator final : public HostAllocator {
 public:
  void* allocate(size_t bytes) override {
    ++allocations;
    return inner.allocate(bytes);
  }
  void deallocate(void* p, size_t bytes) noexcept override { inner.deallocate(p, bytes); }
  int allocations = 0;
  AlignedHostAllocator inner;
};

TEST(Dataset, SourceAdapterStagesBatchesThroughTheAllocator) {
  auto alloc = std::make_shared<CountingAllocator>();
  DatasetSource s(make_batch(range_source(10), 4, false), false, alloc);
  EXPECT_EQ(s.batches(), 3);
  s.reset(0);
  HostBatch b, c;
  ASSERT_TRUE(s.next(b));
  ASSERT_TRUE(s.next(c));
  EXPECT_EQ(b.rows, 4);
  ASSERT_EQ(b.parts.size(), 2u);
  EXPECT_EQ(b.parts[0].width, 2);
  EXPECT_EQ(b.parts[1].width, 1);
  EXPECT_EQ(b.parts[0].data[2], 1.0f);  // still valid after the next batch
  EXPECT_EQ(b.parts[1].data[3], 3.0f);
  EXPECT_EQ(c.parts[1].data[0], 4.0f);
  ASSERT_TRUE(s.next(b));
  EXPECT_EQ(b.rows, 2);
  EXPECT_FALSE(s.next(b));
  EXPECT_EQ(alloc->allocations, 2);
  // Unbatched elements are refused with a hint.
  DatasetSource u(range_source(3), false);
  u.reset(0);
  EXPECT_THROW(u.next(b), Error);
}

TEST(Dataset, SourceAdapterCanContinueAPassAcrossEpochs) {
  DatasetSource s(make_batch(range_source(10), 2, false), true);
  HostBatch b;
  s.reset(0);
  ASSERT_TRUE(s.next(b));
  s.reset(1);
  ASSERT_TRUE(s.next(b));
  EXPECT_EQ(b.parts[1].data[0], 2.0f);
}

}  // namespace
}  // namespace mr
