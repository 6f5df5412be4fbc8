// The combining transforms of data/combine.h against the same operation
// written out by hand: unbatch, enumerate, filter, zip, concatenate and
// padded_batch, with their cardinalities and errors.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "data/combine.h"
#include "data/sources.h"
#include "data/transforms.h"
#include "data/windows.h"
#include "tests/dataset_rows.h"

namespace mr {
namespace {

std::vector<Element> all(const Dataset& ds, uint64_t key = 0) {
  std::vector<Element> out;
  auto it = ds.iterate(key);
  Element e;
  while (it->next(e)) out.push_back(e);
  return out;
}

TEST(DatasetCombine, UnbatchInvertsBatchWithAPartialLastBatch) {
  const DatasetPtr src = range_source(7);
  const auto want = all(*src);
  const auto got = all(*make_unbatch(make_batch(src, 3, false)));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(got[i].parts[k].values, want[i].parts[k].values) << "element " << i;
      EXPECT_EQ(got[i].parts[k].shape, want[i].parts[k].shape);
      EXPECT_EQ(got[i].parts[k].rtype, want[i].parts[k].rtype);
    }
  EXPECT_EQ(make_unbatch(make_batch(src, 3, true))->cardinality(), 6);
  EXPECT_EQ(make_unbatch(make_batch(src, 3, false))->cardinality(), kUnknown);
  EXPECT_THROW(make_unbatch(src), Error);  // component 1 is a scalar
}

TEST(DatasetCombine, EnumerateCountsFromStart) {
  const auto got = all(*make_enumerate(range_source(4), 10));
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(got[i].parts.size(), 3u);
    EXPECT_TRUE(got[i].parts[0].shape.empty());
    EXPECT_EQ(got[i].parts[0].values[0], 10.0f + static_cast<float>(i));
    EXPECT_EQ(got[i].parts[0].rtype, RType::integer);
    EXPECT_EQ(got[i].parts[2].values[0], static_cast<float>(i));
  }
  EXPECT_EQ(make_enumerate(range_source(4), 0)->spec().parts.size(), 3u);
}

class EvenRows final : public ElementPredicate {
 public:
  bool keep(const Element& e) override { return static_cast<int>(e.parts[1].values[0]) % 2 == 0; }
  std::string label() const override { return "filter(even)"; }
};

TEST(DatasetCombine, FilterKeepsWhatThePredicateKeeps) {
  const DatasetPtr f = make_filter(range_source(9), std::make_shared<EvenRows>());
  std::vector<float> ids;
  for (const Element& e : all(*f)) ids.push_back(e.parts[1].values[0]);
  EXPECT_EQ(ids, (std::vector<float>{0, 2, 4, 6, 8}));
  EXPECT_EQ(f->cardinality(), kUnknown);
}

TEST(DatasetCombine, ZipStopsAtTheShortestAndPlacesComponentsInOrder) {
  const DatasetPtr z = make_zip({range_source(5), range_source(3, 1000)});
  const auto got = all(*z);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(got[i].parts.size(), 4u);
    EXPECT_EQ(got[i].parts[1].values[0], static_cast<float>(i));
    EXPECT_EQ(got[i].parts[3].values[0], 1000.0f + static_cast<float>(i));
  }
  EXPECT_EQ(z->cardinality(), 3);
  EXPECT_EQ(z->spec().parts.size(), 4u);
  EXPECT_EQ(make_zip({make_repeat(range_source(2), -1), range_source(4)})->cardinality(), 4);
}

TEST(DatasetCombine, ConcatenateChainsAndChecksComponents) {
  const DatasetPtr c = make_concatenate(range_source(2), range_source(3, 50));
  std::vector<float> ids;
  for (const Element& e : all(*c)) ids.push_back(e.parts[1].values[0]);
  EXPECT_EQ(ids, (std::vector<float>{0, 1, 50, 51, 52}));
  EXPECT_EQ(c->cardinality(), 5);
  EXPECT_EQ(make_concatenate(range_source(2), make_repeat(range_source(1), -1))->cardinality(),
            kInfinite);
  EXPECT_THROW(make_concatenate(range_source(2), make_enumerate(range_source(2), 0)), Error);
}

// Elements whose single component is 0, 1, .., n-1 (lengths 1..n).
class Ragged final : public Dataset {
 public:
  explicit Ragged(int64_t n) : n_(n) {}
  std::unique_ptr<Iterator> iterate(uint64_t) const override {
    struct It final : Iterator {
      int64_t i = 0, n = 0;
      bool next(Element& out) override {
        if (i >= n) return false;
        ++i;
        out.parts.assign(1, Component{});
        out.parts[0].shape = {i};
        for (int64_t v = 0; v < i; ++v) out.parts[0].values.push_back(static_cast<float>(v + 1));
        return true;
      }
    };
    auto it = std::make_unique<It>();
    it->n = n_;
    return it;
  }
  int64_t cardinality() const override { return n_; }
  ElementSpec spec() const override { return ElementSpec{true, {ComponentSpec{{-1}}}, nullptr}; }
  std::string label() const override { return "ragged"; }

 private:
  int64_t n_;
};

TEST(DatasetCombine, PaddedBatchPadsToTheLongestOrTheGivenShape) {
  const DatasetPtr src = std::make_shared<Ragged>(3);
  const auto longest = all(*make_padded_batch(src, 2, {}, {}, false));
  ASSERT_EQ(longest.size(), 2u);
  EXPECT_EQ(longest[0].parts[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(longest[0].parts[0].values, (std::vector<float>{1, 0, 1, 2}));
  EXPECT_EQ(longest[1].parts[0].shape, (std::vector<int64_t>{1, 3}));
  const auto fixed = all(*make_padded_batch(src, 3, {{4}}, {-1.0f}, false));
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0].parts[0].values,
            (std::vector<float>{1, -1, -1, -1, 1, 2, -1, -1, 1, 2, 3, -1}));
  EXPECT_THROW(all(*make_padded_batch(src, 3, {{2}}, {}, false)), Error);
  EXPECT_EQ(make_padded_batch(src, 2, {}, {}, true)->cardinality(), 1);
}

TEST(DatasetCombine, WindowStacksConsecutiveElements) {
  // Component 1 of rows_source is the row id: windows of 3, every 2.
  const DatasetPtr w = make_window(range_source(7), 3, 2, 1, false);
  std::vector<std::vector<float>> ids;
  for (const Element& e : all(*w)) {
    ids.push_back(e.parts[1].values);
    EXPECT_EQ(e.parts[0].shape.size(), 2u);
  }
  EXPECT_EQ(ids, (std::vector<std::vector<float>>{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}, {6}}));
  EXPECT_EQ(w->cardinality(), 4);
  const DatasetPtr d = make_window(range_source(10), 3, 4, 2, true);
  ids.clear();
  for (const Element& e : all(*d)) ids.push_back(e.parts[1].values);
  EXPECT_EQ(ids, (std::vector<std::vector<float>>{{0, 2, 4}, {4, 6, 8}}));
  EXPECT_EQ(d->cardinality(), 2);
  EXPECT_THROW(make_window(range_source(3), 0, 1, 1, false), Error);
}

// Element i (its id component) to a dataset of i + 1 rows.
class FirstRows final : public DatasetFunction {
 public:
  DatasetPtr apply(const Element& e) override {
    return range_source(static_cast<int64_t>(e.parts[1].values[0]) + 1, 100 * e.parts[1].values[0]);
  }
  std::string label() const override { return "first_rows"; }
};

TEST(DatasetCombine, FlatMapAndInterleaveOrders) {
  std::vector<float> flat;
  for (const Element& e : all(*make_flat_map(range_source(3), std::make_shared<FirstRows>())))
    flat.push_back(e.parts[1].values[0]);
  EXPECT_EQ(flat, (std::vector<float>{0, 100, 101, 200, 201, 202}));
  std::vector<float> inter;
  for (const Element& e :
       all(*make_interleave(range_source(3), std::make_shared<FirstRows>(), 2, 1)))
    inter.push_back(e.parts[1].values[0]);
  // slots: [0] and [100 101]; 0 ends, its slot takes [200 201 202]
  EXPECT_EQ(inter, (std::vector<float>{0, 100, 101, 200, 201, 202}));
  inter.clear();
  // cycle 3, block 2: [0], [100 101], [200 201 202] read two at a time in turn
  for (const Element& e :
       all(*make_interleave(range_source(3), std::make_shared<FirstRows>(), 3, 2)))
    inter.push_back(e.parts[1].values[0]);
  EXPECT_EQ(inter, (std::vector<float>{0, 100, 101, 200, 201, 202}));
  inter.clear();
  // cycle 2, block 2 over 4 elements: an ended dataset passes its turn on; the
  // next slot that finds itself empty takes the next element
  for (const Element& e :
       all(*make_interleave(range_source(4), std::make_shared<FirstRows>(), 2, 2)))
    inter.push_back(e.parts[1].values[0]);
  EXPECT_EQ(inter, (std::vector<float>{0, 100, 101, 200, 201, 202, 300, 301, 302, 303}));
  EXPECT_THROW(make_interleave(range_source(3), std::make_shared<FirstRows>(), 0, 1), Error);
}

}  // namespace
}  // namespace mr
