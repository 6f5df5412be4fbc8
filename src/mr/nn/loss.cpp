#include "nn/loss.h"

#include "core/error.h"

namespace mr {

LossKind loss_kind(const std::string& name) {
  using K = LossKind;
  static const struct {
    const char* name;
    LossKind kind;
  } kinds[] = {{"sparse_categorical_crossentropy", K::sparse_categorical_crossentropy},
               {"categorical_crossentropy", K::categorical_crossentropy},
               {"binary_crossentropy", K::binary_crossentropy},
               {"mean_squared_error", K::mean_squared_error},
               {"mse", K::mean_squared_error},
               {"huber", K::huber},
               {"mean_absolute_error", K::mean_absolute_error},
               {"mean_absolute_percentage_error", K::mean_absolute_percentage_error},
               {"mean_squared_logarithmic_error", K::mean_squared_logarithmic_error},
               {"log_cosh", K::log_cosh},
               {"kl_divergence", K::kl_divergence},
               {"poisson", K::poisson},
               {"cosine_similarity", K::cosine_similarity},
               {"hinge", K::hinge},
               {"squared_hinge", K::squared_hinge},
               {"categorical_hinge", K::categorical_hinge},
               {"binary_focal_crossentropy", K::binary_focal_crossentropy},
               {"categorical_focal_crossentropy", K::categorical_focal_crossentropy}};
  for (const auto& k : kinds)
    if (name == k.name) return k.kind;
  fail(ErrorKind::value, "unknown loss '", name, "'");
}

LossParams batch_loss_params(const LossConfig& c, const float* targets, int64_t rows,
                             int64_t width) {
  LossParams p = c;
  const int64_t n = rows * width;
  if (c.kind == LossKind::sparse_categorical_crossentropy && c.has_ignore) {
    int64_t valid = 0;
    for (int64_t i = 0; i < n; ++i) valid += targets[i] != c.ignore_class;
    // Keras' apply_mask: valid rows weigh total / valid (divide_no_nan).
    p.valid_weight = valid > 0 ? static_cast<float>(rows) / static_cast<float>(valid) : 0.0f;
  }
  if (c.kind == LossKind::hinge || c.kind == LossKind::squared_hinge) {
    bool binary = true;
    for (int64_t i = 0; i < n && binary; ++i) binary = targets[i] == 0.0f || targets[i] == 1.0f;
    p.binary_labels = binary;
  }
  return p;
}

bool loss_reads_targets(const LossConfig& c) {
  return (c.kind == LossKind::sparse_categorical_crossentropy && c.has_ignore) ||
         c.kind == LossKind::hinge || c.kind == LossKind::squared_hinge;
}

int64_t target_width(LossKind kind, int64_t cols) {
  return kind == LossKind::sparse_categorical_crossentropy ? 1 : cols;
}

}  // namespace mr
