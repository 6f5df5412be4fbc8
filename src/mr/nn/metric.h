// Metrics as the training loop uses them: a MetricSpec (core/metric_spec.h,
// what the metric op reads) plus the log name, and the host-side finalize
// that turns a metric's state (summed over replicas) into its logged values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/metric_spec.h"

namespace mr {

class TracedGraph;  // i15-users: nn/traced_graph.h

struct MetricConfig : MetricSpec {
  std::string name = "sparse_categorical_accuracy";
  // An entry of Keras' weighted_metrics: its state is weighted by the
  // samples' weights; plain metrics ignore them.
  bool weighted = false;
  // ---- i15-users: a metric written in R with op_* (Keras'
  // MeanMetricWrapper; kind mean_metric_wrapper): its traced graph of
  // inputs (y_true, y_pred); null: the built-in `kind` ----
  std::shared_ptr<const TracedGraph> graph;
  // ---- state_metric (a Metric() class): `graph` is its update_state(),
  // whose one output is the batch's increments of its variables
  // (state_floats, unbatched); result_graph its result(), one unbatched
  // input of state_floats (the variables, flattened in order) and one value
  // out; reset_values the variables after reset_state() (state_floats) ----
  std::shared_ptr<const TracedGraph> result_graph;
  std::vector<float> reset_values;
};

MetricKind metric_kind(const std::string& name);

// Throws mr::Error (value) when the spec's parameters cannot work with
// predictions of `cols` columns (a class_id out of range, ...).
void validate_metric(const MetricSpec& m, int64_t cols);

// How many values a metric logs: the per-class scores of fbeta_score with
// average = none (cols), else 1.
int64_t metric_value_count(const MetricSpec& m, int64_t cols);

// Writes metric_value_count() values computed from `state`
// (metric_state_size() doubles) to `out`, Keras 3's result() in double.
void metric_finalize(const MetricSpec& m, int64_t cols, const double* state, double* out);

}  // namespace mr
