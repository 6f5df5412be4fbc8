// The trainable ranges of the flat parameter buffer: runs of consecutive
// trainable variables joined across their alignment padding, split by frozen
// ones, checked against offsets computed by hand from the layout rule.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "tests/graphs.h"
#include "train/param_ranges.h"

namespace mr {
namespace {

// input(5) -> dense 3 -> dense 7 -> dense 2: kernels 15, 21, 14 floats and
// biases 3, 7, 2, each at a multiple of 16 floats.
std::shared_ptr<const Graph> three_dense() {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{5}));
  l.push_back(make_dense(3, Activation::relu, true, glorot_uniform(1), Initializer{}));
  l.push_back(make_dense(7, Activation::relu, true, glorot_uniform(2), Initializer{}));
  l.push_back(make_dense(2, Activation::linear, true, glorot_uniform(3), Initializer{}));
  return chain(std::move(l));
}

TEST(ParamRanges, LayoutIsWhatTheTestAssumes) {
  auto g = three_dense();
  const std::vector<int64_t> offsets{0, 16, 32, 64, 80, 96}, sizes{15, 3, 21, 7, 14, 2};
  ASSERT_EQ(g->params().size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(g->params()[i].offset, offsets[i]);
    EXPECT_EQ(g->params()[i].size, sizes[i]);
  }
  EXPECT_EQ(g->param_floats(), 112);
}

TEST(ParamRanges, EmptyFlagsMeanAllTrainableInOneRun) {
  auto g = three_dense();
  auto r = trainable_ranges(*g, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].offset, 0);
  EXPECT_EQ(r[0].size, 98);  // up to the end of the last bias, not its padding
  EXPECT_EQ(range_floats(r), 98);
  auto all = trainable_ranges(*g, std::vector<char>(6, 1));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].size, 98);
}

TEST(ParamRanges, FrozenMiddleLayerSplitsTheBuffer) {
  auto g = three_dense();
  auto r = trainable_ranges(*g, {1, 1, 0, 0, 1, 1});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].offset, 0);
  EXPECT_EQ(r[0].size, 19);  // kernel 0..15, padding, bias 16..19
  EXPECT_EQ(r[1].offset, 80);
  EXPECT_EQ(r[1].size, 18);  // kernel 80..94, padding, bias 96..98
  EXPECT_EQ(range_floats(r), 37);
}

TEST(ParamRanges, SingleVariablesAndNoneTrainable) {
  auto g = three_dense();
  auto r = trainable_ranges(*g, {0, 1, 0, 1, 0, 0});  // the first two biases only
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].offset, 16);
  EXPECT_EQ(r[0].size, 3);
  EXPECT_EQ(r[1].offset, 64);
  EXPECT_EQ(r[1].size, 7);
  EXPECT_TRUE(trainable_ranges(*g, std::vector<char>(6, 0)).empty());
}

TEST(ParamRanges, WrongFlagCountIsAValueError) {
  auto g = three_dense();
  try {
    trainable_ranges(*g, {1, 0});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::value);
  }
}

}  // namespace
}  // namespace mr
