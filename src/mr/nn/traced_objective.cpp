#include "nn/traced_objective.h"

#include <vector>

#include "core/error.h"

namespace mr {

void check_traced_objective(const TracedGraph& g, const Shape& pred, const std::string& who) {
  MR_CHECK(g.num_inputs() == 2, value, who,
           ": its traced function must take 2 inputs (y_true, "
           "y_pred), its graph has ",
           g.num_inputs());
  MR_CHECK(g.num_weights() == 0, value, who, ": its traced graph must have no weights, it has ",
           g.num_weights());
  MR_CHECK(g.num_outputs() == 1, value, who,
           ": its traced function must return one value, its "
           "graph has ",
           g.num_outputs(), " outputs");
  for (int i = 0; i < 2; ++i)
    MR_CHECK(g.input_shape(i).batched, shape, who, ": input ", i + 1,
             " of its traced graph has no batch axis");
  const std::vector<int64_t>& d = g.input_shape(1).dims;
  const std::vector<int64_t> per(d.begin() + 1, d.end());
  MR_CHECK(per == pred.dims(), shape, who, ": y_pred was traced with samples of shape ",
           Shape(per).str_with_batch(), "; the model's output has shape ", pred.str_with_batch());
  MR_CHECK(g.output_floats(0, 1) >= 1, shape, who, ": its traced function returns an empty value");
}

int64_t traced_target_width(const TracedGraph& g) {
  int64_t n = 1;
  const std::vector<int64_t>& d = g.input_shape(0).dims;
  for (size_t i = 1; i < d.size(); ++i) n *= d[i];
  return n;
}

int64_t loss_target_width(const LossConfig& c, int64_t cols) {
  return c.graph != nullptr ? traced_target_width(*c.graph) : target_width(c.kind, cols);
}

int64_t metric_config_target_width(const MetricConfig& m, int64_t cols) {
  return m.graph != nullptr ? traced_target_width(*m.graph) : metric_target_width(m, cols);
}

}  // namespace mr
