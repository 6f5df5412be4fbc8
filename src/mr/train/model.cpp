#include "train/model.h"

#include <algorithm>

#include "core/error.h"

namespace mr {

namespace {
PlacementOptions threads_and_timeout(int threads, double timeout) {
  PlacementOptions o;
  o.threads_per_replica = threads;
  o.collective_timeout = timeout;
  return o;
}

const Graph& checked(const std::shared_ptr<const Graph>& g) {
  MR_CHECK(g != nullptr, internal, "no graph");
  return *g;
}
}  // namespace

Model::Model(std::shared_ptr<const Graph> graph, std::vector<DeviceSpec> devices,
             int threads_per_replica, double collective_timeout, bool initialize)
    : Model(std::move(graph), std::move(devices),
            threads_and_timeout(threads_per_replica, collective_timeout), initialize) {}

Model::Model(std::shared_ptr<const Graph> graph, std::vector<DeviceSpec> devices,
             const PlacementOptions& options, bool initialize)
    : graph_(std::move(graph)),
      replicas_(std::move(devices), options),
      state_(checked(graph_), replicas_),
      step_(*graph_, replicas_, state_) {
  replicas_.comm().reserve(graph_->param_floats());  // no collective allocates inside a step
  // Initialised once, on the host, uploaded to the first replica and
  // broadcast; without initialization every replica keeps zeroed buffers.
  if (initialize) {
    set_params(graph_->initial_params());
    set_state(graph_->initial_state());
  }
}

Model::~Model() = default;

void Model::compile(const CompileConfig& config) {
  validate(config.optimizer);
  MR_CHECK(graph_->outputs().size() == 1, value,
           "compile() supports models with one output; this model has ", graph_->outputs().size());
  MR_CHECK(output_width(0) > 0, shape, "the model output is empty");
  config_ = config;
  state_.allocate(slot_count(config.optimizer), 1 + 2 * config.metrics.size());
  compiled_ = true;
}

void Model::set_learning_rate(double lr) {
  MR_CHECK(compiled_, value, "the model is not compiled");
  OptimizerConfig c = config_.optimizer;
  c.learning_rate = lr;
  validate(c);
  config_.optimizer.learning_rate = lr;
}

std::vector<float> Model::get_slot(int k, int rank) const {
  MR_CHECK(compiled_, value, "no optimizer slot ", k);
  return state_.get_slot(k, rank);
}

void Model::set_slot(int k, const std::vector<float>& flat) {
  MR_CHECK(compiled_, value, "no optimizer slot ", k);
  state_.set_slot(k, flat);
}

int64_t Model::output_width(int k) const {
  return graph_->out_shape(graph_->outputs().at(static_cast<size_t>(k))).numel();
}

void Model::check_batch(const HostBatch& batch, bool targets) const {
  const size_t n_in = graph_->inputs().size();
  MR_CHECK(batch.parts.size() >= n_in + (targets ? 1 : 0), value, "the batch has ",
           batch.parts.size(), " components; the model needs ", n_in, " input(s)",
           targets ? " and the targets" : "");
  for (size_t k = 0; k < n_in; ++k) {
    const Shape& s = graph_->out_shape(graph_->inputs()[k]);
    MR_CHECK(batch.parts[k].width == s.numel(), shape, "input ", k + 1, " has ",
             batch.parts[k].width, " values per sample; the model expects shape ",
             s.str_with_batch());
  }
  if (targets) {
    const int64_t want = target_width(config_.loss.kind, output_width(0));
    MR_CHECK(batch.parts[n_in].width == want, shape, "the targets have ", batch.parts[n_in].width,
             " values per sample; loss ", config_.loss.name, " with ", output_width(0),
             " outputs needs ", want);
  }
}

void Model::start_train_step(const HostBatch& batch) {
  MR_CHECK(compiled_, value, "the model must be compiled before training");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  MR_CHECK(batch.rows > 0, value, "empty batch");
  check_batch(batch, true);
  step_.reserve(batch.rows, batch.parts[graph_->inputs().size()].width);
  step_.post_train(batch, config_, state_.iterations);
  in_flight_ = true;
  in_flight_train_ = true;
  state_.samples_seen += batch.rows;
}

void Model::start_eval_step(const HostBatch& batch) {
  MR_CHECK(compiled_, value, "the model must be compiled before evaluation");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  if (batch.rows == 0) return;
  check_batch(batch, true);
  step_.reserve(batch.rows, batch.parts[graph_->inputs().size()].width);
  step_.post_eval(batch, config_);
  in_flight_ = true;
  in_flight_train_ = false;
  state_.samples_seen += batch.rows;
}

bool Model::finish_step(const std::function<bool()>& interrupted) {
  if (!in_flight_) return false;
  in_flight_ = false;
  const bool stop = replicas_.wait(in_flight_train_ ? "training" : "evaluation",
                                   state_.iterations + 1, interrupted);
  if (in_flight_train_) ++state_.iterations;
  return stop;
}

void Model::predict_step(const HostBatch& batch, int k, float* out) {
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  if (batch.rows == 0) return;
  check_batch(batch, false);
  step_.reserve(batch.rows, 0);
  step_.predict(batch, k, output_width(k), out);
}

std::vector<std::string> Model::metric_names() const {
  std::vector<std::string> names{"loss"};
  for (const MetricConfig& m : config_.metrics) names.push_back(m.name);
  return names;
}

void Model::reset_metrics() {
  MR_CHECK(!in_flight_, internal, "a step is in flight");
  if (!compiled_) {
    state_.samples_seen = 0;
    return;
  }
  state_.reset_metrics();
}

std::vector<double> Model::read_metrics() const {
  MR_CHECK(compiled_, value, "the model is not compiled");
  const std::vector<double> total = state_.metric_totals();
  std::vector<double> means;
  means.push_back(state_.samples_seen > 0 ? total[0] / static_cast<double>(state_.samples_seen)
                                          : 0.0);
  for (size_t m = 0; m < config_.metrics.size(); ++m) {
    const double count = total[2 + 2 * m];
    means.push_back(count > 0 ? total[1 + 2 * m] / count : 0.0);
  }
  return means;
}

std::vector<const void*> Model::replica_param_buffers() const {
  std::vector<const void*> p;
  for (int r = 0; r < replicas(); ++r) p.push_back(state_.param_buffer(r));
  return p;
}

}  // namespace mr
