// Loss and metric configurations as the training loop uses them. The
// arithmetic is in the backends (Backend::loss / Backend::metric).
#pragma once

#include <string>
#include <vector>

#include "core/backend.h"

namespace mr {

struct LossConfig {
  LossKind kind = LossKind::sparse_categorical_crossentropy;
  bool from_logits = false;
  std::string name = "sparse_categorical_crossentropy";
};

struct MetricConfig {
  MetricKind kind = MetricKind::sparse_categorical_accuracy;
  float threshold = 0.5f;  // binary_accuracy
  std::string name = "sparse_categorical_accuracy";
};

LossKind loss_kind(const std::string& name);
MetricKind metric_kind(const std::string& name);
// Width of one target row for a loss whose prediction has `cols` columns.
int64_t target_width(LossKind kind, int64_t cols);

}  // namespace mr
