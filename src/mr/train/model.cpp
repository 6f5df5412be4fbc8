#include "train/model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "dist/worker_group.h"    // i16
#include "nn/traced_objective.h"  // i15-users
#include "train/frozen.h"
#include "train/param_ranges.h"

namespace mr {

namespace {
// Target floats per sample of output o's loss and of its metric m: a traced
// one takes y_true's whole per-sample shape, a built-in one its width per
// row times the output's positions (nn/loss.h output_positions).
// `positions`: the output's in the batch's graph (Step::positions()).
int64_t loss_sample_width(const OutputConfig& o, int64_t positions) {
  return o.loss.graph != nullptr ? loss_target_width(o.loss, o.cols)
                                 : loss_target_width(o.loss, o.cols) * positions;
}
int64_t metric_sample_width(const MetricConfig& m, const OutputConfig& o) {
  const int64_t w = metric_config_target_width(m, o.cols);
  return m.graph != nullptr ? w : w * o.positions;
}

// Keras 3 (Functional._adjust_input_rank) takes per-sample shapes equal to
// the input's, or differing by one trailing dimension of 1. No allocation:
// it runs for every batch.
bool keras_rank_compatible(const int64_t* got, size_t ng, const std::vector<int64_t>& want) {
  auto same = [&](size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (got[i] != want[i]) return false;
    return true;
  };
  const size_t nw = want.size();
  if (ng == nw) return same(nw);
  if (ng + 1 == nw) return want.back() == 1 && same(ng);
  if (ng == nw + 1) return got[ng - 1] == 1 && same(nw);
  return false;
}

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

// i16: in a multi-worker job the workers compare their models before any
// step: the layers with their configs and output shapes, and every variable.
PlacementOptions with_model(const PlacementOptions& options,
                            const std::shared_ptr<const Graph>& g) {
  PlacementOptions o = options;
  if (!o.workers) return o;
  const Graph& graph = checked(g);
  std::string d;
  for (int i = 0; i < graph.size(); ++i) {
    // The layer's Keras config without its name: names count the layers a
    // session made before, which need not agree between workers.
    Json config = graph.layer(i).config();
    if (config.is_object()) config.erase("name");
    d += std::string(graph.layer(i).class_name()) + " " + graph.out_shape(i).str() + " " +
         config.dump() + "\n";
  }
  for (const Graph::Param& p : graph.params())
    d += std::to_string(p.node) + "/" + p.name + " " + p.shape.str() +
         (p.trainable ? "" : " non-trainable") + "\n";
  for (const Graph::Param& p : graph.states())
    d += std::to_string(p.node) + "/" + p.name + " " + p.shape.str() + " state\n";
  o.model_description = d;
  o.model_summary = std::to_string(graph.size()) + " layers and " +
                    std::to_string(graph.param_count()) + " parameters";
  return o;
}
}  // namespace

Model::Model(std::shared_ptr<const Graph> graph, std::vector<DeviceSpec> devices,
             int threads_per_replica, double collective_timeout, bool initialize)
    : Model(std::move(graph), std::move(devices),
            threads_and_timeout(threads_per_replica, collective_timeout), initialize) {}

Model::Model(std::shared_ptr<const Graph> graph, std::vector<DeviceSpec> devices,
             const PlacementOptions& options, bool initialize)
    : graph_(std::move(graph)),
      replicas_(std::move(devices), with_model(options, graph_)),
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

void Model::compile(const CompileConfig& config, bool keep_optimizer_state) {
  validate(config.optimizer);
  CompileConfig c = config;
  if (c.outputs.empty()) c.outputs.push_back({c.loss, 1.0f, c.metrics, ""});
  const size_t n_out = graph_->outputs().size();
  MR_CHECK(c.outputs.size() == n_out, value, "compile() got ", c.outputs.size(),
           " output losses; the model has ", n_out, " outputs");
  for (size_t k = 0; k < n_out; ++k) {
    MR_CHECK(output_width(static_cast<int>(k)) > 0, shape, "model output ", k + 1, " is empty");
    MR_CHECK(std::isfinite(c.outputs[k].weight) && c.outputs[k].weight >= 0.0f, value,
             "the loss weight of output ", k + 1, " must be a finite number >= 0, got ",
             c.outputs[k].weight);
    MR_CHECK(n_out == 1 || !c.outputs[k].name.empty(), value, "output ", k + 1, " has no name");
    OutputConfig& o = c.outputs[k];
    const Shape& shape = graph_->out_shape(graph_->outputs()[k]);
    o.cols = shape.last();
    o.positions = output_positions(shape);
    compile_variable_output(o, graph_->symbolic_out_shape(graph_->outputs()[k]));
    for (const MetricConfig& m : o.metrics) {
      validate_metric(m, o.cols);
      // The metrics read the loss's targets.
      MR_CHECK(metric_sample_width(m, o) == loss_sample_width(o, o.positions), value, "metric '",
               m.name, "' needs targets of ", metric_sample_width(m, o),
               " values per sample, but the loss '", o.loss.name, "' takes ",
               loss_sample_width(o, o.positions));
    }
  }
  c.loss = c.outputs[0].loss;
  c.metrics = c.outputs[0].metrics;
  compile_precision(c);  // i14-mpcore: train/model_precision.cpp
  resolve_frozen(*graph_, c);
  step_.traced().configure(c, *graph_);  // i15-users: checks, then keeps the traced graphs
  const bool keep = keep_optimizer_state && compiled_ &&
                    slot_count(c.optimizer) == state_.slot_count() &&
                    metric_doubles(c) == state_.metric_doubles();
  config_ = c;
  if (!keep) {
    state_.allocate(slot_count(config_.optimizer), metric_doubles(config_));
    // Slots that do not start at zero (Adagrad's and Ftrl's accumulators).
    for (int k = 0; k < slot_count(config_.optimizer); ++k) {
      const float v = slot_initial_value(config_.optimizer, k);
      if (v != 0.0f) state_.set_slot(k, std::vector<float>(graph_->param_floats(), v));
    }
  }
  // Frozen variables get no all-reduce and no update (train/param_ranges.h).
  step_.update().prepare(config_.optimizer, trainable_ranges(*graph_, config_.trainable));
  step_.set_trainable(config_.trainable);
  step_.configure_logits(config_);  // Keras-TF's logits of softmax / sigmoid outputs
  step_.update().set_loss_scaling(config_.loss_scale.dynamic);  // i14-mpcore
  compiled_ = true;
}

void Model::compile_variable_output(OutputConfig& o, const Shape& symbolic) const {
  for (int d = 0; d + 1 < symbolic.rank(); ++d) o.variable = o.variable || symbolic[d] < 0;
  MR_CHECK(symbolic.rank() == 0 || symbolic.last() >= 0, shape, "output '", o.name, "' has shape ",
           symbolic.str_with_batch(),
           ": its last axis follows a variable-length input; losses and metrics need a fixed "
           "last axis (the values of one position)");
  if (!o.variable) return;
  MR_CHECK(o.loss.graph == nullptr, value, "the loss of output '", o.name, "' (shape ",
           symbolic.str_with_batch(),
           ") is written in R; on an output whose length varies "
           "by batch only built-in losses are supported yet");
  for (const MetricConfig& m : o.metrics)
    MR_CHECK(m.graph == nullptr && m.kind != MetricKind::state_metric, value, "metric '", m.name,
             "' of output '", o.name, "' (shape ", symbolic.str_with_batch(),
             ") is written in R; on an output whose length varies by batch only built-in "
             "metrics are supported yet");
}

void Model::set_learning_rate(double lr) {
  MR_CHECK(compiled_, value, "the model is not compiled");
  // Keras refuses to set the learning rate of an optimizer made with a schedule.
  MR_CHECK(config_.optimizer.schedule.kind == LrSchedule::Kind::constant, value,
           "this optimizer was created with a learning rate schedule; its learning rate is not "
           "settable");
  OptimizerConfig c = config_.optimizer;
  c.learning_rate = lr;
  validate(c);
  settle_loss_scale();
  config_.optimizer.learning_rate = lr;
  device_scale_.armed = false;  // the table holds the old rate
}

void Model::finalize_optimizer() {
  MR_CHECK(compiled_, value, "the model is not compiled");
  step_.update().finalize(config_.optimizer);
}

std::vector<float> Model::get_slot(int k, int rank) const {
  MR_CHECK(compiled_, value, "no optimizer slot ", k);
  return state_.get_slot(k, rank);
}

void Model::set_slot(int k, const std::vector<float>& flat) {
  MR_CHECK(compiled_, value, "no optimizer slot ", k);
  state_.set_slot(k, flat);
}

int Model::accumulator_slot() const {
  if (!compiled_ || config_.optimizer.gradient_accumulation_steps <= 0) return -1;
  return slot_count(config_.optimizer) - 1;  // slot_names(): always last
}

std::vector<float> Model::get_accumulator() const {
  const int k = accumulator_slot();
  MR_CHECK(k >= 0, value, "the optimizer accumulates no gradients");
  std::vector<float> total = state_.get_slot(k, 0);
  for (int r = 1; r < replicas_.size(); ++r) {
    const std::vector<float> part = state_.get_slot(k, r);
    for (size_t i = 0; i < total.size(); ++i) total[i] += part[i];
  }
  return total;
}

void Model::set_accumulator(const std::vector<float>& flat) {
  const int k = accumulator_slot();
  MR_CHECK(k >= 0, value, "the optimizer accumulates no gradients");
  state_.set_slot_first_only(k, flat);
}

int64_t Model::output_width(int k) const {
  const Graph& g = step_.active_graph();
  return g.out_shape(g.outputs().at(static_cast<size_t>(k))).numel();
}

Shape Model::output_shape(int k) const {
  const Graph& g = step_.active_graph();
  return g.out_shape(g.outputs().at(static_cast<size_t>(k)));
}

void Model::select_graph(const HostBatch& batch) {
  if (!graph_->variable()) return;
  const size_t n_in = graph_->inputs().size();
  MR_CHECK(batch.parts.size() >= n_in, value, "the batch has ", batch.parts.size(),
           " components; the model needs ", n_in, " input(s)");
  std::vector<int64_t> lengths(n_in, -1);
  for (size_t k = 0; k < n_in; ++k) {
    const int axis = graph_->variable_axis(static_cast<int>(k));
    if (axis < 0) continue;
    const Shape& declared = graph_->symbolic_out_shape(graph_->inputs()[k]);
    const HostComponent& c = batch.parts[k];
    int64_t len = -1;
    if (c.rank == declared.rank()) {
      len = c.dims[static_cast<size_t>(axis)];  // a dataset's element shape says it
    } else {
      // Arrays: the width over the fixed axes' product.
      int64_t fixed = 1;
      for (int d = 0; d < declared.rank(); ++d)
        if (d != axis) fixed *= declared[d];
      len = fixed > 0 && c.width % fixed == 0 ? c.width / fixed : -1;
    }
    MR_CHECK(len >= 1, shape, "input ", k + 1, " has ", c.width,
             " values per sample, which is no length of the model's input shape ",
             declared.str_with_batch());
    lengths[k] = len;
  }
  step_.select(lengths);
}

void Model::check_batch(const HostBatch& batch, bool targets) const {
  const size_t n_in = graph_->inputs().size();
  MR_CHECK(batch.parts.size() >= n_in + (targets ? 1 : 0), value, "the batch has ",
           batch.parts.size(), " components; the model needs ", n_in, " input(s)",
           targets ? " and the targets" : "");
  const Graph& g = step_.active_graph();  // the batch's (select_graph())
  for (size_t k = 0; k < n_in; ++k) {
    const Shape& s = g.out_shape(g.inputs()[k]);
    const HostComponent& c = batch.parts[k];
    if (c.rank >= 0 &&
        !keras_rank_compatible(c.dims.data(), static_cast<size_t>(c.rank), s.dims())) {
      const std::vector<int64_t> got(c.dims.begin(), c.dims.begin() + c.rank);
      fail(ErrorKind::shape, "input ", k + 1, " (x) has samples of shape ",
           Shape(got).str_with_batch(), "; the model expects shape ", s.str_with_batch(),
           " (Keras adds or drops a trailing dimension of 1 only; it does not reshape)");
    }
    MR_CHECK(c.width == s.numel(), shape, "input ", k + 1, " has ", c.width,
             " values per sample; the model expects shape ", s.str_with_batch());
  }
  if (targets) {
    const size_t n_out = config_.outputs.size();
    MR_CHECK(batch.parts.size() >= n_in + n_out, value, "the batch has ", batch.parts.size(),
             " components; the model needs ", n_in, " input(s) and ", n_out, " target(s)");
    for (size_t k = 0; k < n_out; ++k) {
      const OutputConfig& o = config_.outputs[k];
      const int64_t want = loss_sample_width(o, step_.positions(k));
      MR_CHECK(batch.parts[n_in + k].width == want, shape, "the targets",
               n_out > 1 ? " of output " + std::to_string(k + 1) : std::string(), " have ",
               batch.parts[n_in + k].width, " values per sample; loss ", o.loss.name,
               " on an output of shape ", g.out_shape(g.outputs()[k]).str_with_batch(), " needs ",
               want);
    }
    // Sample weights after the targets (weight_part()): one part shared by
    // the outputs or one per output, each one value per sample or (Keras'
    // "temporal" weights) one per position of an output of rank > 2. A
    // traced loss or metric reduces whole samples and takes the former.
    const size_t extra = batch.parts.size() - n_in - n_out;
    MR_CHECK(extra == 0 || extra == 1 || extra == n_out, value, "the batch has ",
             batch.parts.size(), " components; the model takes ", n_in, " input(s), ", n_out,
             " target(s) and optionally sample weights (one array, or one per output)");
    for (size_t k = 0; k < n_out && extra > 0; ++k) {
      const OutputConfig& o = config_.outputs[k];
      const int64_t got = batch.parts[n_in + n_out + (extra > 1 ? k : 0)].width;
      bool traced = o.loss.graph != nullptr;
      for (const MetricConfig& m : o.metrics) traced = traced || (m.weighted && m.graph != nullptr);
      const std::string which = extra > 1 ? " of output " + std::to_string(k + 1) : std::string();
      const int64_t positions = step_.positions(k);
      MR_CHECK(got == 1 || got == positions, shape, "the sample weights", which, " have ", got,
               " values per sample; they take one value per sample",
               positions > 1
                   ? " or one per position of the output (" + std::to_string(positions) + ")"
                   : std::string());
      MR_CHECK(got == 1 || !traced, value, "the sample weights", which,
               " have one value per position; a loss or metric written in R takes one value "
               "per sample (give a vector of one weight per sample)");
    }
  }
}

bool Model::has_weights(const HostBatch& batch) const {
  return batch.parts.size() > graph_->inputs().size() + config_.outputs.size();
}

std::vector<int64_t> Model::target_widths(const HostBatch& batch) const {
  const size_t n_in = graph_->inputs().size();
  std::vector<int64_t> w;
  for (size_t k = 0; k < config_.outputs.size(); ++k) w.push_back(batch.parts[n_in + k].width);
  return w;
}

void Model::start_train_step(const HostBatch& batch) {
  MR_CHECK(compiled_, value, "the model must be compiled before training");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  // i16: a worker whose shard ended still joins the step with no rows, so
  // that the others' collectives complete.
  MR_CHECK(batch.rows > 0 || replicas_.sharded(), value, "empty batch");
  select_graph(batch);
  check_batch(batch, true);
  step_.reserve(batch.rows, target_widths(batch), has_weights(batch));
  step_.post_train(batch, config_, begin_train_step());
  in_flight_ = true;
  in_flight_train_ = true;
  state_.samples_seen += replicas_.local_rows(batch.rows);
}

void Model::start_eval_step(const HostBatch& batch) {
  MR_CHECK(compiled_, value, "the model must be compiled before evaluation");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  if (batch.rows == 0) return;
  select_graph(batch);
  check_batch(batch, true);
  step_.reserve(batch.rows, target_widths(batch), has_weights(batch));
  step_.post_eval(batch, config_);
  in_flight_ = true;
  in_flight_train_ = false;
  state_.samples_seen += replicas_.local_rows(batch.rows);
}

bool Model::finish_step(const std::function<bool()>& interrupted) {
  if (!in_flight_) return false;
  in_flight_ = false;
  bool stop = false;
  try {
    stop = replicas_.wait(in_flight_train_ ? "training" : "evaluation", state_.iterations + 1,
                          interrupted);
  } catch (...) {
    end_step_input(false);  // i14-devinput
    if (in_flight_train_) end_train_step(true);
    throw;
  }
  end_step_input(true);  // i14-devinput (no late staging: stage_late_input())
  // A step skipped by loss scaling applied nothing: Keras' iterations stay
  // (counted on the device: settle_loss_scale()).
  if (in_flight_train_) end_train_step(false);
  return stop;
}

void Model::predict_step(const HostBatch& batch, int k, float* out) {
  std::vector<float*> outs(graph_->outputs().size(), nullptr);
  outs.at(static_cast<size_t>(k)) = out;
  predict_step(batch, outs);
}

void Model::predict_step(const HostBatch& batch, const std::vector<float*>& outs) {
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  MR_CHECK(outs.size() == graph_->outputs().size(), internal, "predict_step needs ",
           graph_->outputs().size(), " output pointers");
  if (batch.rows == 0) return;
  select_graph(batch);
  check_batch(batch, false);
  step_.reserve(batch.rows, {});
  step_.predict(batch, outs);
}

namespace {
// A metric of several values (F1 by class) logs one key per value,
// "<name>_<class>" (classes from 0): logs are scalars.
void push_metric_names(std::vector<std::string>& names, const std::string& prefix,
                       const OutputConfig& o) {
  for (const MetricConfig& m : o.metrics) {
    const int64_t n = metric_value_count(m, o.cols);
    if (n == 1) {
      names.push_back(prefix + m.name);
      continue;
    }
    for (int64_t i = 0; i < n; ++i) names.push_back(prefix + m.name + "_" + std::to_string(i));
  }
}

// The log keys in the order the unsorted means come (read_means()).
std::vector<std::string> raw_names(const CompileConfig& c) {
  std::vector<std::string> names{"loss"};
  if (c.outputs.size() == 1) {
    push_metric_names(names, "", c.outputs[0]);
    return names;
  }
  for (const OutputConfig& o : c.outputs) {
    names.push_back(o.name + "_loss");
    push_metric_names(names, o.name + "_", o);
  }
  return names;
}

// Keras 3 reports the logs of a model of several outputs sorted by key
// (checked with Keras 3.15: "loss", "out1_loss", "out1_mae", "out2_accuracy",
// "out2_loss"); one output keeps "loss" then the metrics in compile order.
std::vector<size_t> log_order(const std::vector<std::string>& names, size_t outputs) {
  std::vector<size_t> idx(names.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  if (outputs > 1)
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t a, size_t b) { return names[a] < names[b]; });
  return idx;
}
}  // namespace

std::vector<std::string> Model::metric_names() const {
  const std::vector<std::string> raw = raw_names(config_);
  std::vector<std::string> names;
  for (size_t i : log_order(raw, config_.outputs.size())) names.push_back(raw[i]);
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

int64_t Model::share_rows(int64_t rows) {
  const std::shared_ptr<WorkerGroup>& w = replicas_.workers();
  MR_CHECK(w != nullptr, internal, "a sharded step outside a multi-worker job");
  std::vector<int64_t> all(static_cast<size_t>(w->size()));
  ProcessGroup* g = w->group();
  if (g != nullptr) {
    try {
      g->all_gather(&rows, sizeof(rows), all.data());
    } catch (const Error& e) {
      w->rethrow(e, "exchanging the workers' batch sizes");
    }
  } else {
    const std::vector<std::string> t = w->all_gather_text("rows", std::to_string(rows));
    for (size_t i = 0; i < t.size(); ++i) all[i] = std::stoll(t[i]);
  }
  int64_t offset = 0, total = 0;
  for (int i = 0; i < w->size(); ++i) {
    if (i < w->rank()) offset += all[static_cast<size_t>(i)];
    total += all[static_cast<size_t>(i)];
  }
  replicas_.set_shard(offset, total);
  return total;
}

std::vector<double> Model::read_metrics(bool across_workers) const {
  MR_CHECK(compiled_, value, "the model is not compiled");
  std::vector<double> total = state_.metric_totals();
  const std::vector<size_t> off = metric_offsets(config_);
  double seen = static_cast<double>(state_.samples_seen);
  // i16: this worker's sums cover its replicas' rows; the job's are the sums
  // over every worker (exact: counts and sums, like the replicas' own).
  if (across_workers && replicas_.workers()) {
    total.push_back(seen);
    replicas_.workers()->all_reduce_host(total.data(), static_cast<int64_t>(total.size()));
    seen = total.back();
    total.pop_back();
  }
  // Raw order: the weighted total, then per output its loss and metrics.
  std::vector<double> raw{0.0};
  for (size_t k = 0; k < config_.outputs.size(); ++k) {
    const OutputConfig& o = config_.outputs[k];
    // A built-in loss summed one value per position (Keras divides by the
    // number of loss values); a traced one already averaged each sample.
    // A variable-length output's rows carried 1 / their batch's positions.
    const double values =
        seen * static_cast<double>(o.loss.graph != nullptr || o.variable ? 1 : o.positions);
    const double loss = seen > 0 ? total[off[k]] / values : 0.0;
    raw[0] += static_cast<double>(o.weight) * loss;
    if (config_.outputs.size() > 1) raw.push_back(loss);
    size_t at = off[k] + 1;
    for (const MetricConfig& m : o.metrics) {
      const size_t first = raw.size();
      raw.resize(first + static_cast<size_t>(metric_value_count(m, o.cols)));
      if (m.kind == MetricKind::state_metric)  // a Metric() class: its result()
        raw[first] = step_.traced().state_metric_result(m, total.data() + at);
      else
        metric_finalize(m, o.cols, total.data() + at, raw.data() + first);
      at += static_cast<size_t>(metric_state_size(m, o.cols));
    }
  }
  // Keras' logged loss includes the regularization losses (i13-reg).
  if (seen > 0) raw[0] += total[regularization_sum_offset(config_)] / seen;
  std::vector<double> means;
  for (size_t i : log_order(raw_names(config_), config_.outputs.size())) means.push_back(raw[i]);
  return means;
}

std::vector<const void*> Model::replica_param_buffers() const {
  std::vector<const void*> p;
  for (int r = 0; r < replicas(); ++r) p.push_back(state_.param_buffer(r));
  return p;
}

}  // namespace mr
