// Loss and metric configurations as the training loop uses them. The
// arithmetic is in the backends (Backend::loss / Backend::metric).
#pragma once

#include <string>
#include <vector>

#include "core/backend.h"
#include "nn/metric.h"  // MetricConfig, for the files that include loss.h

namespace mr {

struct LossConfig {
  LossKind kind = LossKind::sparse_categorical_crossentropy;
  bool from_logits = false;
  std::string name = "sparse_categorical_crossentropy";
};

LossKind loss_kind(const std::string& name);
// Width of one target row for a loss whose prediction has `cols` columns.
int64_t target_width(LossKind kind, int64_t cols);

}  // namespace mr
