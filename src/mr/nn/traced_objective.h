// Traced losses and metrics (issue 15, docs/traced-graphs.md §5): the rules
// the model checks at compile() and per batch. A traced loss or metric is a
// graph of two batched inputs in Keras' order, (y_true, y_pred), with no
// weights and one output: per sample (batched) or a batch mean (unbatched).
// y_pred's per-sample shape is the model output's; y_true's defines the
// targets' width. The step's side is train/traced_objectives.h.
#pragma once

#include <cstdint>
#include <string>

#include "core/shape.h"
#include "nn/loss.h"
#include "nn/metric.h"
#include "nn/traced_graph.h"

namespace mr {

// Throws mr::Error naming `who` ("loss 'my_loss'", "metric 'mae2'") unless
// `g` can be a loss or metric of a model output of per-sample shape `pred`:
// value for the number of inputs, weights or outputs; shape for a y_pred
// traced for another shape or an input without the batch axis.
void check_traced_objective(const TracedGraph& g, const Shape& pred, const std::string& who);

// Floats per sample of y_true (the graph's input 0).
int64_t traced_target_width(const TracedGraph& g);

// The targets' floats per sample for loss `c` (traced or built-in) and
// metric `m` of an output of `cols` floats per sample.
int64_t loss_target_width(const LossConfig& c, int64_t cols);
int64_t metric_config_target_width(const MetricConfig& m, int64_t cols);

}  // namespace mr
