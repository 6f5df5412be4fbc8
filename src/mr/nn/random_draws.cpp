#include "nn/random_draws.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/rng.h"

namespace mr {

namespace {

// The stream of the random_* functions, apart from dropout's and the
// initializers' (their stream ids are node indices and small constants).
constexpr uint32_t kRandomStream = 0x72000000u;
// Element i draws the uniforms (i << kDrawBits) + j, j = 0, 1, ...: its
// values do not depend on how many elements are drawn, nor on the others'
// rejections.
constexpr int kDrawBits = 20;
constexpr uint64_t kMaxDraws = uint64_t{1} << kDrawBits;

class Draws {
 public:
  Draws(const RandomStream& s, uint64_t element) : s_(s), base_(element << kDrawBits) {}
  // Uniform in [0, 1), 53 bits.
  double uniform() {
    MR_CHECK(j_ < kMaxDraws, internal, "random draws: more than ", kMaxDraws,
             " draws for one element");
    return s_.uniform_double(base_ + j_++);
  }
  // Standard normal (Box-Muller on two uniforms; (0, 1] keeps the log finite).
  double normal() {
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Gamma(shape a, scale 1): Marsaglia and Tsang's squeeze for a >= 1; for
  // a < 1, gamma(a + 1) U^(1 / a).
  double gamma(double a) {
    if (a < 1.0) {
      const double g = gamma(a + 1.0);
      return g * std::pow(1.0 - uniform(), 1.0 / a);
    }
    const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = 1.0 - uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
  }

 private:
  const RandomStream& s_;
  uint64_t base_;
  uint64_t j_ = 0;
};

void check_param(bool ok, const char* what, double got) {
  MR_CHECK(ok, value, what, ", got ", got);
}

double draw(RandomKind kind, double a, double b, Draws& d) {
  switch (kind) {
    case RandomKind::normal:
      return a + b * d.normal();
    case RandomKind::uniform: {
      // a + (b - a) u rounded to float may reach b: TensorFlow's interval
      // is [a, b), so such a draw takes the float below b.
      const double v = a + (b - a) * d.uniform();
      const auto f = static_cast<float>(v);
      if (b > a && static_cast<double>(f) >= b)
        return static_cast<double>(std::nextafter(static_cast<float>(b), static_cast<float>(a)));
      return v;
    }
    case RandomKind::integer:
      return std::floor(a + (b - a) * d.uniform());
    case RandomKind::truncated_normal:
      for (;;) {
        const double z = d.normal();
        if (std::fabs(z) <= 2.0) return a + b * z;
      }
    case RandomKind::gamma:
      return d.gamma(a);
    case RandomKind::beta: {
      const double x = d.gamma(a), y = d.gamma(b);
      return x + y > 0.0 ? x / (x + y) : (a >= b ? 1.0 : 0.0);
    }
    case RandomKind::binomial: {
      double k = 0.0;
      for (int64_t t = 0; t < static_cast<int64_t>(a); ++t) k += d.uniform() < b ? 1.0 : 0.0;
      return k;
    }
  }
  throw Error(ErrorKind::internal, "random draws: unknown kind");
}

void check_params(RandomKind kind, double a, double b) {
  switch (kind) {
    case RandomKind::normal:
    case RandomKind::truncated_normal:
      check_param(std::isfinite(a) && std::isfinite(b) && b >= 0.0,
                  "the mean must be finite and the standard deviation finite and >= 0",
                  std::isfinite(a) ? b : a);
      break;
    case RandomKind::uniform:
      check_param(std::isfinite(a) && std::isfinite(b) && a < b,
                  "minval and maxval must be finite with minval < maxval",
                  std::isfinite(a) ? b : a);
      break;
    case RandomKind::integer:
      check_param(
          std::isfinite(a) && std::isfinite(b) && a < b && a == std::floor(a) && b == std::floor(b),
          "minval and maxval must be whole numbers with minval < maxval", a);
      break;
    case RandomKind::gamma:
      check_param(std::isfinite(a) && a > 0.0, "alpha must be finite and > 0", a);
      break;
    case RandomKind::beta:
      check_param(std::isfinite(a) && a > 0.0 && std::isfinite(b) && b > 0.0,
                  "alpha and beta must be finite and > 0", a > 0.0 ? b : a);
      break;
    case RandomKind::binomial:
      check_param(a >= 0.0 && a == std::floor(a) && a <= kMaxBinomialTrials,
                  "counts must be whole numbers in 0..1e6", a);
      check_param(b >= 0.0 && b <= 1.0, "probabilities must be in [0, 1]", b);
      break;
  }
}

}  // namespace

void random_draws(RandomKind kind, int64_t n, const double* a, int64_t a_step, const double* b,
                  int64_t b_step, uint64_t seed, uint64_t counter, double* out) {
  MR_CHECK(n >= 0 && n < (int64_t{1} << 40), value, "random draws: ", n, " values");
  const RandomStream s(seed, counter, kRandomStream + static_cast<uint32_t>(kind));
  for (int64_t i = 0; i < n; ++i) check_params(kind, a[i * a_step], b[i * b_step]);
  for (int64_t i = 0; i < n; ++i) {
    Draws d(s, static_cast<uint64_t>(i));
    out[i] = draw(kind, a[i * a_step], b[i * b_step], d);
  }
}

void random_permutation(int64_t n, uint64_t seed, uint64_t counter, int64_t* out) {
  MR_CHECK(n >= 0, value, "random permutation of ", n, " elements");
  const RandomStream s(seed, counter, kRandomStream + 0x100u);
  for (int64_t i = 0; i < n; ++i) out[i] = i;
  for (int64_t k = n - 1; k > 0; --k) {
    const auto j = static_cast<int64_t>(s.uniform_double(static_cast<uint64_t>(k)) *
                                        static_cast<double>(k + 1));
    std::swap(out[k], out[j < k ? j : k]);
  }
}

void random_categorical(const double* logits, int64_t rows, int64_t classes, int64_t samples,
                        uint64_t seed, uint64_t counter, int64_t* out) {
  MR_CHECK(rows >= 0 && classes > 0 && samples >= 0, value, "random_categorical: ", rows,
           " rows of ", classes, " classes, ", samples, " samples");
  const RandomStream s(seed, counter, kRandomStream + 0x101u);
  std::vector<double> cdf(static_cast<size_t>(classes));
  for (int64_t r = 0; r < rows; ++r) {
    const double* z = logits + r * classes;
    double top = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < classes; ++c) {
      MR_CHECK(!std::isnan(z[c]) && z[c] != std::numeric_limits<double>::infinity(), value,
               "random_categorical: row ", r + 1, " of the logits holds ", z[c]);
      top = std::max(top, z[c]);
    }
    MR_CHECK(std::isfinite(top), value, "random_categorical: row ", r + 1,
             " of the logits is all -Inf");
    double total = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      total += std::exp(z[c] - top);
      cdf[static_cast<size_t>(c)] = total;
    }
    for (int64_t k = 0; k < samples; ++k) {
      const double u = s.uniform_double(static_cast<uint64_t>(r * samples + k)) * total;
      int64_t c = 0;
      while (c + 1 < classes && cdf[static_cast<size_t>(c)] <= u) ++c;
      // A class of probability 0 (logit -Inf) is never drawn: equal
      // cumulative sums skip it.
      out[r * samples + k] = c;
    }
  }
}

}  // namespace mr
