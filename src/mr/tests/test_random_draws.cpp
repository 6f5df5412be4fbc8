// The random_* draws (nn/random_draws.h): moments against the
// distributions' closed forms (200k draws, bounds of 5 standard errors on a
// fixed seed), determinism, independence of the element count, and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "nn/random_draws.h"

namespace mr {
namespace {

constexpr int64_t kN = 200000;

std::vector<double> draws(RandomKind kind, double a, double b, int64_t n = kN, uint64_t seed = 7,
                          uint64_t counter = 0) {
  std::vector<double> out(static_cast<size_t>(n));
  random_draws(kind, n, &a, 0, &b, 0, seed, counter, out.data());
  return out;
}

struct Moments {
  double mean = 0, var = 0;
};
Moments moments(const std::vector<double>& x) {
  Moments m;
  for (double v : x) m.mean += v;
  m.mean /= static_cast<double>(x.size());
  for (double v : x) m.var += (v - m.mean) * (v - m.mean);
  m.var /= static_cast<double>(x.size() - 1);
  return m;
}

// |mean - mu| within 5 standard errors, and the variance within 5 % (the
// distributions here have moderate fourth moments).
void expect_moments(const std::vector<double>& x, double mu, double var, const char* what) {
  const Moments m = moments(x);
  EXPECT_NEAR(m.mean, mu, 5.0 * std::sqrt(var / static_cast<double>(x.size()))) << what;
  EXPECT_NEAR(m.var, var, 0.05 * var) << what;
}

TEST(RandomDraws, MomentsMatchTheDistributions) {
  expect_moments(draws(RandomKind::normal, 1.5, 2.0), 1.5, 4.0, "normal");
  expect_moments(draws(RandomKind::uniform, -1.0, 3.0), 1.0, 16.0 / 12.0, "uniform");
  // Normal truncated at 2 standard deviations: variance 1 - 2 * 2 phi(2) / (2 Phi(2) - 1).
  const double phi2 = std::exp(-2.0) / std::sqrt(2.0 * M_PI);
  const double mass = std::erf(2.0 / std::sqrt(2.0));
  expect_moments(draws(RandomKind::truncated_normal, 0.0, 1.0), 0.0, 1.0 - 4.0 * phi2 / mass,
                 "truncated normal");
  expect_moments(draws(RandomKind::gamma, 2.5, 1.0), 2.5, 2.5, "gamma(2.5)");
  expect_moments(draws(RandomKind::gamma, 0.4, 1.0), 0.4, 0.4, "gamma(0.4)");
  const double a = 2.0, b = 5.0;
  expect_moments(draws(RandomKind::beta, a, b), a / (a + b),
                 a * b / ((a + b) * (a + b) * (a + b + 1.0)), "beta(2, 5)");
  expect_moments(draws(RandomKind::binomial, 10.0, 0.3, 50000), 3.0, 2.1, "binomial(10, 0.3)");
  // Integers of [-3, 4): uniform on 7 values.
  const std::vector<double> k = draws(RandomKind::integer, -3.0, 4.0);
  EXPECT_EQ(*std::min_element(k.begin(), k.end()), -3.0);
  EXPECT_EQ(*std::max_element(k.begin(), k.end()), 3.0);
  expect_moments(k, 0.0, (49.0 - 1.0) / 12.0, "integer");
}

TEST(RandomDraws, BoundsHold) {
  for (double v : draws(RandomKind::truncated_normal, 1.0, 0.5)) {
    EXPECT_LE(std::fabs(v - 1.0), 1.0 + 1e-12);
  }
  for (double v : draws(RandomKind::uniform, 0.0, 1e-7)) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(static_cast<float>(v), 1e-7f);  // [minval, maxval) after rounding to float
  }
  for (double v : draws(RandomKind::beta, 0.5, 0.5)) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
  }
}

TEST(RandomDraws, AValueDependsOnlyOnSeedCounterAndItsIndex) {
  const std::vector<double> many = draws(RandomKind::gamma, 0.7, 1.0, 1000, 11, 3);
  const std::vector<double> few = draws(RandomKind::gamma, 0.7, 1.0, 10, 11, 3);
  EXPECT_TRUE(std::equal(few.begin(), few.end(), many.begin()));
  EXPECT_EQ(draws(RandomKind::normal, 0, 1, 100, 11, 3),
            draws(RandomKind::normal, 0, 1, 100, 11, 3));
  EXPECT_NE(draws(RandomKind::normal, 0, 1, 100, 11, 3),
            draws(RandomKind::normal, 0, 1, 100, 11, 4));
  EXPECT_NE(draws(RandomKind::normal, 0, 1, 100, 11, 3),
            draws(RandomKind::normal, 0, 1, 100, 12, 3));
  // Per-element parameters: element i uses a[i], b[i].
  const double as[] = {0.0, 100.0}, bs[] = {1.0};
  double out[2];
  random_draws(RandomKind::normal, 2, as, 1, bs, 0, 5, 0, out);
  EXPECT_LT(std::fabs(out[0]), 10.0);
  EXPECT_GT(out[1], 90.0);
}

TEST(RandomDraws, PermutationsAreUniform) {
  // Over 6000 permutations of 4, each element lands at each position
  // about 1500 times.
  int counts[4][4] = {};
  std::vector<int64_t> p(4);
  for (uint64_t c = 0; c < 6000; ++c) {
    random_permutation(4, 9, c, p.data());
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3}));
    for (int i = 0; i < 4; ++i) ++counts[p[static_cast<size_t>(i)]][i];
  }
  for (auto& row : counts)
    for (int n : row) EXPECT_NEAR(n, 1500, 5.0 * std::sqrt(1500.0 * 0.75));
}

TEST(RandomDraws, CategoricalFollowsTheSoftmax) {
  const double logits[] = {0.0, std::log(3.0), -INFINITY, std::log(6.0)};  // p = 0.1, 0.3, 0, 0.6
  std::vector<int64_t> s(static_cast<size_t>(kN));
  random_categorical(logits, 1, 4, kN, 3, 0, s.data());
  double freq[4] = {};
  for (int64_t c : s) freq[c] += 1.0 / kN;
  const double want[4] = {0.1, 0.3, 0.0, 0.6};
  for (int c = 0; c < 4; ++c)
    EXPECT_NEAR(freq[c], want[c], 5.0 * std::sqrt(want[c] * (1 - want[c]) / kN) + 1e-12) << c;
  const double bad[] = {0.0, NAN};
  EXPECT_THROW(random_categorical(bad, 1, 2, 3, 3, 0, s.data()), Error);
  const double none[] = {-INFINITY, -INFINITY};
  EXPECT_THROW(random_categorical(none, 1, 2, 3, 3, 0, s.data()), Error);
}

TEST(RandomDraws, ParametersOutsideTheDomainAreErrors) {
  EXPECT_THROW(draws(RandomKind::normal, 0.0, -1.0, 3), Error);
  EXPECT_THROW(draws(RandomKind::uniform, 1.0, 1.0, 3), Error);
  EXPECT_THROW(draws(RandomKind::integer, 0.5, 3.0, 3), Error);
  EXPECT_THROW(draws(RandomKind::gamma, 0.0, 1.0, 3), Error);
  EXPECT_THROW(draws(RandomKind::beta, 1.0, NAN, 3), Error);
  EXPECT_THROW(draws(RandomKind::binomial, 2.5, 0.5, 3), Error);
  EXPECT_THROW(draws(RandomKind::binomial, 3.0, 1.5, 3), Error);
}

}  // namespace
}  // namespace mr
