#include "nn/loss.h"

#include "core/error.h"

namespace mr {

LossKind loss_kind(const std::string& name) {
  if (name == "sparse_categorical_crossentropy") return LossKind::sparse_categorical_crossentropy;
  if (name == "categorical_crossentropy") return LossKind::categorical_crossentropy;
  if (name == "binary_crossentropy") return LossKind::binary_crossentropy;
  if (name == "mean_squared_error" || name == "mse") return LossKind::mean_squared_error;
  fail(ErrorKind::value, "unknown loss '", name, "'");
}

int64_t target_width(LossKind kind, int64_t cols) {
  return kind == LossKind::sparse_categorical_crossentropy ? 1 : cols;
}

}  // namespace mr
