// Random numbers for keras3's random_* functions (R/random.R): draws of a
// distribution, a permutation, categorical samples, all a pure function of
// (seed, counter), from the same Philox stream as dropout and the
// initializers (core/rng.h). keras3's seed semantics live in R: an integer
// seed gives the same draws at every call (counter 0), a seed generator
// advances its counter by one per call, no seed draws one from R's RNG.
//
// Written here rather than taken from a library: the draws must come from
// the core's counter-based stream (the same numbers on every machine and
// thread, and a stream a GPU kernel can reproduce), which the standard
// library's distributions do not promise (their algorithms differ between
// implementations).
#pragma once

#include <cstdint>

namespace mr {

enum class RandomKind {
  normal,            // a = mean, b = stddev
  uniform,           // [a, b)
  integer,           // floor of uniform [a, b): a, b whole numbers
  truncated_normal,  // normal, redrawn while more than 2 stddev from the mean (TensorFlow's)
  gamma,             // shape a, scale 1 (Marsaglia and Tsang 2000; a < 1 boosted)
  beta,              // X / (X + Y), X ~ gamma(a), Y ~ gamma(b)
  binomial  // successes of a trials (a whole number <= kMaxBinomialTrials) of probability b
};

constexpr double kMaxBinomialTrials = 1e6;

// out[i] = a draw of `kind` with parameters a[i * a_step], b[i * b_step]
// (a step of 0 shares one value), i < n, from stream (seed, counter). Each
// element draws from its own sub-streams, so element i is the same whatever n.
// mr::Error (value) for parameters outside a distribution's domain.
void random_draws(RandomKind kind, int64_t n, const double* a, int64_t a_step, const double* b,
                  int64_t b_step, uint64_t seed, uint64_t counter, double* out);

// A uniformly random permutation of 0..n-1 (Fisher-Yates on the stream).
void random_permutation(int64_t n, uint64_t seed, uint64_t counter, int64_t* out);

// For each of `rows` rows of `classes` logits (row-major), `samples` class
// indices drawn from softmax(row) by inversion of its distribution (in
// double); out is rows x samples, row-major. A row of non-finite logits
// (or all -Inf) is mr::Error (value).
void random_categorical(const double* logits, int64_t rows, int64_t classes, int64_t samples,
                        uint64_t seed, uint64_t counter, int64_t* out);

}  // namespace mr
