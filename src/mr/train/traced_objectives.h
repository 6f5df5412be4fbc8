// The traced losses and metrics of a compiled model in the step (issue 15,
// docs/traced-graphs.md §5; the rules: nn/traced_objective.h). Per replica,
// buffers for the graphs' forward values (aux), backward scratch, output
// and output gradient, shared by every traced loss and metric (they run one
// after the other), and each graph's constants, uploaded once at
// configure(). Everything is allocated at configure() and reserve(), on the
// caller's thread between steps; loss() and metric() allocate nothing.
//
// Semantics (Keras' LossFunctionWrapper / MeanMetricWrapper with the
// "sum_over_batch_size" reduction, Backend::traced_reduce): a per-sample
// output of shape S gives l_r = mean over S of row r, the loss sum adds
// sum_r w_r l_r (the step divides by the global batch size, as for the
// built-in losses) and the gradient of the output is grad_scale * w_r / |S|,
// then the graph's VJP into y_pred. An unbatched output v is a batch mean:
// it adds v * sum_r w_r over the local rows, so 1 and N replicas agree for
// means. A metric's state is (sum_r w_r m_r, sum_r w_r), finalized as
// sum / count and reduced across replicas as the built-in means are.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "dist/replica_set.h"
#include "nn/graph.h"
#include "nn/loss.h"
#include "nn/traced_graph.h"

namespace mr {

struct CompileConfig;

class TracedObjectives {
 public:
  explicit TracedObjectives(ReplicaSet& replicas) : replicas_(replicas) {}

  // compile(): checks every traced loss and metric of `c` against model
  // `graph`'s outputs (mr::Error naming the loss or metric) before changing
  // anything, then keeps their graphs and uploads their constants on every
  // replica. Buffers are made by the next reserve().
  void configure(const CompileConfig& c, const Graph& graph);
  // Whether the compiled model runs a traced graph anywhere: a traced loss,
  // metric or layer (Step::graph_eligible keeps such steps eager).
  bool present() const { return present_; }
  // Buffers for slices of up to `rows` rows (grows only; outside steps).
  void reserve(int64_t rows);

  // Adds replica `rank`'s slice of `rows` rows (pred, target, sample weights
  // sw or null) to *sum and, when dpred is not null, writes the loss's
  // gradient with respect to pred (grad_scale times d(sum_r w_r l_r)) there.
  void loss(int rank, const LossConfig& l, int64_t rows, const float* pred, const float* target,
            const float* sw, float grad_scale, float* dpred, double* sum);
  // Adds the slice's (sum_r w_r m_r, sum_r w_r) to state[0], state[1].
  void metric(int rank, const MetricConfig& m, int64_t rows, const float* pred, const float* target,
              const float* sw, double* state);

  // ---- state_metric: a Metric() class written in R (nn/metric.h) ----
  // Adds the increments its update_state() computes from the slice to its
  // m.state_floats state doubles (nothing for a slice of no rows: Keras
  // never runs update_state() on an empty batch). Like Keras' metric
  // variables under a MirroredStrategy (synchronized on read by a sum),
  // each replica updates from its own rows and the sums add up.
  void state_metric(int rank, const MetricConfig& m, int64_t rows, const float* pred,
                    const float* target, double* state);
  // Its result(): the graph run on the reset values plus `state` (the
  // sums), on a host CPU backend of the compiled model (outside steps).
  double state_metric_result(const MetricConfig& m, const double* state) const;

 private:
  struct Entry {
    std::shared_ptr<const TracedGraph> graph;
    bool batched = true;  // the output keeps the batch axis
    int64_t width = 1;    // floats of the output per row (batched) or in all
    bool backward = false;
    std::vector<DeviceBuffer> constants;  // per replica
  };
  struct Buffers {
    DeviceBuffer aux, scratch, out, dout;
  };
  const Entry& entry(const TracedGraph* g) const;
  // Forward of entry `e` over the slice; returns the output buffer.
  float* run_forward(int rank, const Entry& e, int64_t rows, const float* const* ins);

  // state_metric results: their graphs' buffers on host_ (made at configure()).
  struct ResultRun {
    std::shared_ptr<const TracedGraph> graph;
    DeviceBuffer constants, in, aux, out;
  };
  std::unique_ptr<Backend> host_;
  mutable std::vector<ResultRun> results_;
  mutable std::vector<float> result_in_;  // the variables' values, host side

  ReplicaSet& replicas_;
  std::vector<Entry> entries_;
  std::vector<Buffers> bufs_;  // per replica
  int64_t capacity_ = 0;
  bool present_ = false;
};

}  // namespace mr
