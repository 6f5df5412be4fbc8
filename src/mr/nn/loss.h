// Loss and metric configurations as the training loop uses them. The
// arithmetic is in the backends (Backend::loss / Backend::metric).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/shape.h"
#include "nn/metric.h"  // MetricConfig, for the files that include loss.h

namespace mr {

// A loss as compiled: its kind, its Keras arguments (the LossParams base, so
// that `config.from_logits` and the other arguments read as the loss's own,
// and a LossConfig passes as the op's LossParams) and its name.
struct LossConfig : LossParams {
  LossKind kind = LossKind::sparse_categorical_crossentropy;
  std::string name = "sparse_categorical_crossentropy";
  // ---- i15-users: a loss written in R with op_* (train/traced_objectives.h):
  // its traced graph of inputs (y_true, y_pred); null: the built-in `kind` ----
  std::shared_ptr<const TracedGraph> graph;
};

// The loss's arguments for one global batch of `rows` target rows of
// `width` floats (on the host, as the batch was assembled): LossParams'
// per-batch entries -- ignore_class's valid_weight (rows / valid rows, 0
// when none is valid) and hinge's binary_labels -- computed from the whole
// global batch, so that every replica uses the same values whatever its
// slice. Other losses get `c` unchanged.
LossParams batch_loss_params(const LossConfig& c, const float* targets, int64_t rows,
                             int64_t width);
// Whether batch_loss_params() reads the targets (sparse categorical
// crossentropy with ignore_class, the hinge losses); when not, `targets` may
// be null, which saves gathering them.
bool loss_reads_targets(const LossConfig& c);

// How the built-in losses and metrics see an output of per-sample shape s:
// Keras reduces a loss over the last axis only, and "sum_over_batch_size"
// divides by the number of loss values (samples x positions), so each
// position of the axes before the last (a time step, a pixel) is a row of
// s.last() values. A rank-1 output has one position; a rank-3 output
// (steps, h, w, ...) has the product of all but its last extent.
inline int64_t output_positions(const Shape& s) { return s.last() > 0 ? s.numel() / s.last() : 0; }

LossKind loss_kind(const std::string& name);
// Width of one target row for a loss whose prediction has `cols` columns.
int64_t target_width(LossKind kind, int64_t cols);

}  // namespace mr
