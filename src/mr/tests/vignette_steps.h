// The training steps several GPU tests run: `steps` steps of the vignette's
// MLP on Philox inputs (784 features, labels r % 10), batches of 64 rows and
// the last one 37 (uneven replica slices).
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "data/batch.h"
#include "train/model.h"

namespace mr {

inline void train_vignette_steps(Model& m, int steps) {
  for (int s = 0; s < steps; ++s) {
    const int64_t rows = s == steps - 1 ? 37 : 64;
    const RandomStream rs(777, 0, static_cast<uint32_t>(s));
    std::vector<float> x(static_cast<size_t>(rows * 784)), y;
    for (size_t i = 0; i < x.size(); ++i) x[i] = rs.uniform(i);
    for (int64_t r = 0; r < rows; ++r) y.push_back(static_cast<float>(r % 10));
    HostBatch b;
    b.rows = rows;
    b.parts = {HostComponent{x.data(), 784}, HostComponent{y.data(), 1}};
    m.train_step(b);
  }
}

}  // namespace mr
