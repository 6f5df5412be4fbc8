#include "train/model.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "core/error.h"
#include "dist/comm_threads.h"
#include "dist/worker.h"
#include "nn/executor.h"

namespace mr {

struct Model::Replica {
  int rank = 0;
  DeviceSpec device;
  std::unique_ptr<Backend> be;
  std::unique_ptr<Executor> exec;
  DeviceBuffer params{nullptr, DeviceFree{}}, grads{nullptr, DeviceFree{}};
  std::vector<DeviceBuffer> slots;
  DeviceBuffer acc{nullptr, DeviceFree{}};  // doubles: loss sum, then (sum, count) per metric
  DeviceBuffer targets{nullptr, DeviceFree{}};
  int64_t target_capacity = 0;  // floats
  int64_t rows_last = 0;
  // Declared last so that it is destroyed first: the thread stops before the
  // buffers it uses are freed.
  std::unique_ptr<Worker> worker;

  float* p() { return static_cast<float*>(params.get()); }
  float* g() { return static_cast<float*>(grads.get()); }
  double* a() { return static_cast<double*>(acc.get()); }
};

namespace {
PlacementOptions threads_and_timeout(int threads, double timeout) {
  PlacementOptions o;
  o.threads_per_replica = threads;
  o.collective_timeout = timeout;
  return o;
}
}  // namespace

Model::Model(std::shared_ptr<const Graph> graph, std::vector<DeviceSpec> devices,
             int threads_per_replica, double collective_timeout, bool initialize)
    : Model(std::move(graph), std::move(devices),
            threads_and_timeout(threads_per_replica, collective_timeout), initialize) {}

Model::Model(std::shared_ptr<const Graph> graph, std::vector<DeviceSpec> devices,
             const PlacementOptions& options, bool initialize)
    : graph_(std::move(graph)), devices_(std::move(devices)) {
  MR_CHECK(graph_ != nullptr, internal, "no graph");
  MR_CHECK(!devices_.empty(), value, "a model needs at least one device");
  for (size_t i = 0; i < devices_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      MR_CHECK(!(devices_[i] == devices_[j]), value, "device ", devices_[i].name(),
               " is listed twice");
  assign_gpu_ordinals(devices_, options.logical_per_gpu);
  comm_ = make_communicator(devices_, options.collective_timeout, options.cross_device_ops,
                            &comm_note_);
  comm_->reserve(graph_->param_floats());  // no collective allocates inside a step
  const auto bytes = static_cast<size_t>(graph_->param_floats()) * sizeof(float);
  for (size_t i = 0; i < devices_.size(); ++i) {
    auto r = std::make_unique<Replica>();
    r->rank = static_cast<int>(i);
    r->device = devices_[i];
    r->be = create_backend(devices_[i], std::max(1, options.threads_per_replica));
    if (options.tf32) r->be->set_tf32(true);
    r->be->set_wait_limits(WaitLimits{options.collective_timeout, comm_->abort_flag(), nullptr});
    r->exec = std::make_unique<Executor>(*graph_, *r->be);
    r->params = r->be->allocate(bytes);
    r->grads = r->be->allocate(bytes);
    r->worker = std::make_unique<Worker>();
    replicas_.push_back(std::move(r));
  }
  // Initialised once, on the first replica, then broadcast to the others;
  // without initialization every replica keeps its zeroed buffer.
  if (initialize) set_params(graph_->initial_params());
}

void Model::post_all(std::function<void(Replica&)> job) {
  auto shared = std::make_shared<std::function<void(Replica&)>>(std::move(job));
  for (auto& r : replicas_) {
    Replica* rp = r.get();
    Communicator* comm = comm_.get();
    r->worker->post([rp, comm, shared] {
      try {
        (*shared)(*rp);
      } catch (const std::exception& e) {
        comm->abort("replica " + std::to_string(rp->rank) + " failed: " + e.what());
        throw;
      }
    });
  }
}

// Uploads happen on the first replica; the communicator copies to the rest.
void Model::broadcast_from_first(bool slots) {
  run_all("broadcast", [this, slots](Replica& r) {
    const int64_t n = graph_->param_floats();
    if (slots) {
      for (auto& s : r.slots) comm_->broadcast(r.rank, 0, *r.be, static_cast<float*>(s.get()), n);
    } else {
      comm_->broadcast(r.rank, 0, *r.be, r.p(), n);
    }
  });
}

Model::~Model() = default;

void Model::run_all(const char* what, const std::function<void(Replica&)>& job) {
  post_all(job);
  wait_all(what);
}

void Model::wait_all(const char* what) {
  // Wait for every replica before reporting, so no job outlives the call. The
  // error reported is the root cause: a replica woken by an abort only says
  // that a peer failed.
  std::exception_ptr first;
  bool first_is_abort = true;
  ErrorKind kind = ErrorKind::internal;
  std::string message, where;
  for (auto& r : replicas_) {
    try {
      r->worker->wait();
    } catch (const std::exception& e) {
      const bool is_abort = dynamic_cast<const CollectiveAborted*>(&e) != nullptr;
      if (first && (is_abort || !first_is_abort)) continue;
      first = std::current_exception();
      first_is_abort = is_abort;
      const auto* err = dynamic_cast<const Error*>(&e);
      kind = err != nullptr ? err->kind() : ErrorKind::internal;
      message = e.what();
      where = "replica " + std::to_string(r->rank) + " (" + r->device.name() + ")";
    }
  }
  if (!first) return;
  comm_->reset();
  fail(kind, where, " failed during ", what, " at step ", iterations_ + 1, ": ", message);
}

std::vector<float> Model::get_params(int rank) const {
  MR_CHECK(rank >= 0 && rank < replicas(), value, "no replica ", rank);
  Replica& r = *replicas_[static_cast<size_t>(rank)];
  std::vector<float> flat(static_cast<size_t>(graph_->param_floats()));
  r.be->download(flat.data(), r.params.get(), flat.size() * sizeof(float));
  return flat;
}

void Model::set_params(const std::vector<float>& flat) {
  MR_CHECK(static_cast<int64_t>(flat.size()) == graph_->param_floats(), shape, "expected ",
           graph_->param_floats(), " parameter values, got ", flat.size());
  Replica& first = *replicas_.front();
  first.be->upload(first.params.get(), flat.data(), flat.size() * sizeof(float));
  if (replicas() > 1) broadcast_from_first(false);
}

void Model::compile(const CompileConfig& config) {
  validate(config.optimizer);
  const int64_t out_width = output_width(0);
  MR_CHECK(graph_->outputs().size() == 1, value,
           "compile() supports models with one output; this model has ", graph_->outputs().size());
  MR_CHECK(out_width > 0, shape, "the model output is empty");
  config_ = config;
  const auto bytes = static_cast<size_t>(graph_->param_floats()) * sizeof(float);
  const int nslots = slot_count(config.optimizer);
  const size_t acc_len = 1 + 2 * config.metrics.size();
  for (auto& r : replicas_) {
    r->slots.clear();
    for (int k = 0; k < nslots; ++k) r->slots.push_back(r->be->allocate(bytes));
    r->acc = r->be->allocate(acc_len * sizeof(double));
  }
  iterations_ = 0;
  samples_seen_ = 0;
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
  MR_CHECK(compiled_ && k >= 0 && k < slot_count(config_.optimizer), value, "no optimizer slot ",
           k);
  Replica& r = *replicas_.at(static_cast<size_t>(rank));
  std::vector<float> flat(static_cast<size_t>(graph_->param_floats()));
  r.be->download(flat.data(), r.slots[static_cast<size_t>(k)].get(), flat.size() * sizeof(float));
  return flat;
}

void Model::set_slot(int k, const std::vector<float>& flat) {
  MR_CHECK(compiled_ && k >= 0 && k < slot_count(config_.optimizer), value, "no optimizer slot ",
           k);
  MR_CHECK(static_cast<int64_t>(flat.size()) == graph_->param_floats(), shape,
           "slot size mismatch");
  Replica& first = *replicas_.front();
  first.be->upload(first.slots[static_cast<size_t>(k)].get(), flat.data(),
                   flat.size() * sizeof(float));
  if (replicas() > 1) broadcast_from_first(true);
}

void Model::inject_fault(int rank, int64_t step, Fault kind, double seconds) {
  MR_CHECK(rank >= 0 && rank < replicas(), value, "no replica ", rank);
  fault_.rank = rank;
  fault_.step = step;
  fault_.kind = kind;
  fault_.seconds = seconds;
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

void Model::stage(Replica& r, const HostBatch& batch, int64_t begin, int64_t count, bool targets) {
  r.exec->reserve(std::max<int64_t>(count, 1));
  for (const HostComponent& c : batch.parts)  // pinned staging grows with the batch, like exec
    r.be->reserve_staging(static_cast<size_t>(count * c.width) * sizeof(float));
  const size_t n_in = graph_->inputs().size();
  for (size_t k = 0; k < n_in; ++k) {
    const HostComponent& c = batch.parts[k];
    r.be->upload(r.exec->input(static_cast<int>(k)), c.data + begin * c.width,
                 static_cast<size_t>(count * c.width) * sizeof(float));
  }
  if (targets) {
    const HostComponent& c = batch.parts[n_in];
    const int64_t need = std::max<int64_t>(count, 1) * c.width;
    if (need > r.target_capacity) {
      r.targets = r.be->allocate(static_cast<size_t>(need) * sizeof(float));
      r.target_capacity = need;
    }
    r.be->upload(r.targets.get(), c.data + begin * c.width,
                 static_cast<size_t>(count * c.width) * sizeof(float));
  }
}

void Model::start_train_step(const HostBatch& batch) {
  MR_CHECK(compiled_, value, "the model must be compiled before training");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  MR_CHECK(batch.rows > 0, value, "empty batch");
  check_batch(batch, true);
  const int n = replicas();
  const int64_t global_rows = batch.rows;
  const uint64_t step = static_cast<uint64_t>(iterations_);
  const int64_t iteration = iterations_;
  const int64_t out_cols = output_width(0);
  const auto fault = fault_;
  auto job = [this, &batch, n, global_rows, step, iteration, out_cols, fault](Replica& r) {
    if (fault.rank == r.rank && fault.step == iteration + 1) {
      if (fault.kind == Fault::error) fail(ErrorKind::internal, "injected failure (test)");
      if (fault.kind == Fault::stall)
        std::this_thread::sleep_for(std::chrono::duration<double>(fault.seconds));
    }
    int64_t begin = 0, count = 0;
    replica_slice(global_rows, n, r.rank, begin, count);
    r.rows_last = count;
    stage(r, batch, begin, count, true);
    Backend& be = *r.be;
    r.exec->forward(count, begin, step, true, r.p());
    // Loss = sum of per-sample losses / global batch size, so the summed
    // gradients of all replicas equal the single-device gradient.
    const float scale = 1.0f / static_cast<float>(global_rows);
    float* dout = r.exec->output_grad(0);
    const float* out = r.exec->output(0);
    const auto* tgt = static_cast<const float*>(r.targets.get());
    if (count > 0) {
      be.loss(config_.loss.kind, config_.loss.from_logits, count, out_cols, out, tgt, scale, dout,
              r.a());
      for (size_t m = 0; m < config_.metrics.size(); ++m)
        be.metric(config_.metrics[m].kind, config_.metrics[m].threshold, count, out_cols, out, tgt,
                  r.a() + 1 + 2 * m);
    }
    r.exec->backward(count, true, r.p(), r.g());
    comm_->all_reduce_sum(r.rank, be, r.g(), graph_->param_floats());
    std::vector<float*> slots;
    for (auto& s : r.slots) slots.push_back(static_cast<float*>(s.get()));
    apply_update(be, config_.optimizer, iteration, graph_->param_floats(), r.p(), r.g(), slots);
  };
  post_all(job);
  in_flight_ = true;
  in_flight_train_ = true;
  samples_seen_ += global_rows;
}

void Model::start_eval_step(const HostBatch& batch) {
  MR_CHECK(compiled_, value, "the model must be compiled before evaluation");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  if (batch.rows == 0) return;
  check_batch(batch, true);
  const int n = replicas();
  const int64_t global_rows = batch.rows, out_cols = output_width(0);
  auto job = [this, &batch, n, global_rows, out_cols](Replica& r) {
    int64_t begin = 0, count = 0;
    replica_slice(global_rows, n, r.rank, begin, count);
    r.rows_last = count;
    if (count == 0) return;
    stage(r, batch, begin, count, true);
    r.exec->forward(count, begin, 0, false, r.p());
    const float* out = r.exec->output(0);
    const auto* tgt = static_cast<const float*>(r.targets.get());
    r.be->loss(config_.loss.kind, config_.loss.from_logits, count, out_cols, out, tgt, 0.0f,
               nullptr, r.a());
    for (size_t m = 0; m < config_.metrics.size(); ++m)
      r.be->metric(config_.metrics[m].kind, config_.metrics[m].threshold, count, out_cols, out, tgt,
                   r.a() + 1 + 2 * m);
  };
  post_all(job);
  in_flight_ = true;
  in_flight_train_ = false;
  samples_seen_ += global_rows;
}

void Model::finish_step() {
  if (!in_flight_) return;
  in_flight_ = false;
  wait_all(in_flight_train_ ? "training" : "evaluation");
  if (in_flight_train_) ++iterations_;
}

void Model::predict_step(const HostBatch& batch, int k, float* out) {
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  if (batch.rows == 0) return;
  check_batch(batch, false);
  const int n = replicas();
  const int64_t global_rows = batch.rows, width = output_width(k);
  run_all("prediction", [&](Replica& r) {
    int64_t begin = 0, count = 0;
    replica_slice(global_rows, n, r.rank, begin, count);
    r.rows_last = count;
    if (count == 0) return;
    stage(r, batch, begin, count, false);
    r.exec->forward(count, begin, 0, false, r.p());
    r.be->download(out + begin * width, r.exec->output(k),
                   static_cast<size_t>(count * width) * sizeof(float));
  });
}

std::vector<std::string> Model::metric_names() const {
  std::vector<std::string> names{"loss"};
  for (const MetricConfig& m : config_.metrics) names.push_back(m.name);
  return names;
}

void Model::reset_metrics() {
  MR_CHECK(!in_flight_, internal, "a step is in flight");
  samples_seen_ = 0;
  if (!compiled_) return;
  const std::vector<double> zeros(1 + 2 * config_.metrics.size(), 0.0);
  for (auto& r : replicas_)
    r->be->upload(r->acc.get(), zeros.data(), zeros.size() * sizeof(double));
}

std::vector<double> Model::read_metrics() const {
  MR_CHECK(compiled_, value, "the model is not compiled");
  const size_t len = 1 + 2 * config_.metrics.size();
  std::vector<double> total(len, 0.0), part(len);
  for (const auto& r : replicas_) {
    r->be->download(part.data(), r->acc.get(), len * sizeof(double));
    for (size_t i = 0; i < len; ++i) total[i] += part[i];
  }
  std::vector<double> means;
  means.push_back(samples_seen_ > 0 ? total[0] / static_cast<double>(samples_seen_) : 0.0);
  for (size_t m = 0; m < config_.metrics.size(); ++m) {
    const double count = total[2 + 2 * m];
    means.push_back(count > 0 ? total[1 + 2 * m] / count : 0.0);
  }
  return means;
}

std::vector<int64_t> Model::rows_last_step() const {
  std::vector<int64_t> rows;
  for (const auto& r : replicas_) rows.push_back(r->rows_last);
  return rows;
}

std::vector<std::thread::id> Model::replica_threads() const {
  std::vector<std::thread::id> ids;
  for (const auto& r : replicas_) ids.push_back(r->worker->id());
  return ids;
}

std::vector<const void*> Model::replica_param_buffers() const {
  std::vector<const void*> p;
  for (const auto& r : replicas_) p.push_back(r->params.get());
  return p;
}

}  // namespace mr
