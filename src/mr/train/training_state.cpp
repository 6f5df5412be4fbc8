#include "train/training_state.h"

#include "core/error.h"

namespace mr {

TrainingState::TrainingState(const Graph& graph, ReplicaSet& replicas)
    : graph_(graph), replicas_(replicas) {
  const auto pbytes = static_cast<size_t>(graph.param_floats()) * sizeof(float);
  const auto sbytes = static_cast<size_t>(graph.state_floats()) * sizeof(float);
  for (int r = 0; r < replicas.size(); ++r) {
    Backend& be = replicas.backend(r);
    Buffers b;
    b.params = be.allocate(pbytes);
    b.grads = be.allocate(pbytes);
    b.state = be.allocate(sbytes);
    b.scalars = be.allocate(sizeof(StepScalars));
    buffers_.push_back(std::move(b));
  }
}

void TrainingState::allocate_loss_scale(int64_t rows) {
  MR_CHECK(rows >= 0, internal, "allocate_loss_scale: rows must be >= 0");
  for (int r = 0; r < replicas_.size(); ++r) {
    Buffers& b = buffers_[static_cast<size_t>(r)];
    Backend& be = replicas_.backend(r);
    b.ls_word = rows > 0 ? be.allocate(sizeof(LossScaleWord)) : DeviceBuffer{nullptr, DeviceFree{}};
    b.ls_table = rows > 0 ? be.allocate(static_cast<size_t>(rows) * sizeof(StepScalars))
                          : DeviceBuffer{nullptr, DeviceFree{}};
  }
  loss_scale_rows_ = rows;
}

std::vector<float*> TrainingState::slots(int rank) {
  std::vector<float*> out;
  for (auto& s : buffers_[static_cast<size_t>(rank)].slots) out.push_back(f(s));
  return out;
}

void TrainingState::allocate(int slot_count, size_t metric_doubles) {
  const auto bytes = static_cast<size_t>(graph_.param_floats()) * sizeof(float);
  for (int r = 0; r < replicas_.size(); ++r) {
    Buffers& b = buffers_[static_cast<size_t>(r)];
    b.slots.clear();
    for (int k = 0; k < slot_count; ++k) b.slots.push_back(replicas_.backend(r).allocate(bytes));
    b.metrics = replicas_.backend(r).allocate(metric_doubles * sizeof(double));
  }
  slot_count_ = slot_count;
  metric_doubles_ = metric_doubles;
  iterations = 0;
  samples_seen = 0;
}

std::vector<float> TrainingState::download(const DeviceBuffer& b, int rank, int64_t floats) const {
  std::vector<float> flat(static_cast<size_t>(floats));
  replicas_.backend(rank).download(flat.data(), b.get(), flat.size() * sizeof(float));
  return flat;
}

template <typename Pick>
void TrainingState::upload_and_broadcast(const std::vector<float>& flat, Pick pick) {
  if (flat.empty()) return;
  replicas_.backend(0).upload(pick(buffers_[0]), flat.data(), flat.size() * sizeof(float));
  if (replicas_.global_size() == 1) return;
  const auto n = static_cast<int64_t>(flat.size());
  replicas_.run("broadcast", iterations + 1, [this, n, &pick](int r) {
    replicas_.comm().broadcast(r, 0, replicas_.backend(r),
                               static_cast<float*>(pick(buffers_[static_cast<size_t>(r)])), n);
  });
}

std::vector<float> TrainingState::get_params(int rank) const {
  MR_CHECK(rank >= 0 && rank < replicas_.size(), value, "no replica ", rank);
  return download(buffers_[static_cast<size_t>(rank)].params, rank, graph_.param_floats());
}

void TrainingState::set_params(const std::vector<float>& flat) {
  MR_CHECK(static_cast<int64_t>(flat.size()) == graph_.param_floats(), shape, "expected ",
           graph_.param_floats(), " parameter values, got ", flat.size());
  upload_and_broadcast(flat, [](Buffers& b) { return b.params.get(); });
}

std::vector<float> TrainingState::get_state(int rank) const {
  MR_CHECK(rank >= 0 && rank < replicas_.size(), value, "no replica ", rank);
  return download(buffers_[static_cast<size_t>(rank)].state, rank, graph_.state_floats());
}

void TrainingState::set_state(const std::vector<float>& flat) {
  MR_CHECK(static_cast<int64_t>(flat.size()) == graph_.state_floats(), shape, "expected ",
           graph_.state_floats(), " state values, got ", flat.size());
  upload_and_broadcast(flat, [](Buffers& b) { return b.state.get(); });
}

std::vector<float> TrainingState::get_slot(int k, int rank) const {
  MR_CHECK(k >= 0 && k < slot_count_, value, "no optimizer slot ", k);
  MR_CHECK(rank >= 0 && rank < replicas_.size(), value, "no replica ", rank);
  return download(buffers_[static_cast<size_t>(rank)].slots[static_cast<size_t>(k)], rank,
                  graph_.param_floats());
}

void TrainingState::set_slot(int k, const std::vector<float>& flat) {
  MR_CHECK(k >= 0 && k < slot_count_, value, "no optimizer slot ", k);
  MR_CHECK(static_cast<int64_t>(flat.size()) == graph_.param_floats(), shape, "slot size mismatch");
  upload_and_broadcast(flat, [k](Buffers& b) { return b.slots[static_cast<size_t>(k)].get(); });
}

void TrainingState::set_slot_first_only(int k, const std::vector<float>& flat) {
  MR_CHECK(k >= 0 && k < slot_count_, value, "no optimizer slot ", k);
  MR_CHECK(static_cast<int64_t>(flat.size()) == graph_.param_floats(), shape, "slot size mismatch");
  const std::vector<float> zeros(flat.size(), 0.0f);
  for (int r = 0; r < replicas_.size(); ++r) {
    Backend& be = replicas_.backend(r);
    be.upload(buffers_[static_cast<size_t>(r)].slots[static_cast<size_t>(k)].get(),
              (r == 0 ? flat : zeros).data(), flat.size() * sizeof(float));
    be.synchronize();  // the host vectors die at return
  }
}

void TrainingState::reset_metrics() {
  samples_seen = 0;
  const std::vector<double> zeros(metric_doubles_, 0.0);
  if (zeros.empty()) return;
  for (int r = 0; r < replicas_.size(); ++r)
    replicas_.backend(r).upload(buffers_[static_cast<size_t>(r)].metrics.get(), zeros.data(),
                                zeros.size() * sizeof(double));
}

std::vector<double> TrainingState::metric_totals() const {
  std::vector<double> total(metric_doubles_, 0.0), part(metric_doubles_);
  for (int r = 0; r < replicas_.size(); ++r) {
    replicas_.backend(r).download(part.data(), buffers_[static_cast<size_t>(r)].metrics.get(),
                                  part.size() * sizeof(double));
    for (size_t i = 0; i < total.size(); ++i) total[i] += part[i];
  }
  return total;
}

}  // namespace mr
