// The training state of a model on a replica set: per replica the flat
// buffers of the parameters, their gradients, the non-trainable state and
// the optimizer slots (Graph layouts), and the metric sums; plus the
// optimizer's iteration count and the samples the metric sums cover.
//
// Invariant: after every public call returns, all replicas hold
// bit-identical parameters, state and slots (a set broadcasts from the
// first replica) — except the gradient accumulator slot (train/update.h),
// which holds each replica's local sum between applying steps: its value is
// the sum over replicas (set_slot_first_only() puts it back that way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/backend.h"
#include "dist/replica_set.h"
#include "nn/graph.h"

namespace mr {

class TrainingState {
 public:
  TrainingState(const Graph& graph, ReplicaSet& replicas);

  float* params(int rank) { return f(buffers_[static_cast<size_t>(rank)].params); }
  float* grads(int rank) { return f(buffers_[static_cast<size_t>(rank)].grads); }
  float* state(int rank) { return f(buffers_[static_cast<size_t>(rank)].state); }
  // The block of per-step values (core/step_scalars.h) of replica `rank`.
  StepScalars* scalars(int rank) {
    return static_cast<StepScalars*>(buffers_[static_cast<size_t>(rank)].scalars.get());
  }
  // Dynamic loss scaling on the device (core/step_scalars.h): the scale's
  // word and the table of the coming steps' blocks, `rows` of them (0 rows:
  // released; compile()).
  void allocate_loss_scale(int64_t rows);
  int64_t loss_scale_rows() const { return loss_scale_rows_; }
  LossScaleWord* loss_scale_word(int rank) {
    return static_cast<LossScaleWord*>(buffers_[static_cast<size_t>(rank)].ls_word.get());
  }
  StepScalars* loss_scale_table(int rank) {
    return static_cast<StepScalars*>(buffers_[static_cast<size_t>(rank)].ls_table.get());
  }
  double* metric_sums(int rank) {
    return static_cast<double*>(buffers_[static_cast<size_t>(rank)].metrics.get());
  }
  std::vector<float*> slots(int rank);
  // Slot k of replica `rank` (no allocation: the step's accessor).
  float* slot_ptr(int rank, int k) {
    return f(buffers_[static_cast<size_t>(rank)].slots[static_cast<size_t>(k)]);
  }
  const void* param_buffer(int rank) const {
    return buffers_[static_cast<size_t>(rank)].params.get();
  }

  // Makes `count` zeroed optimizer slots and `metric_doubles` metric sums on
  // every replica (compile()).
  void allocate(int slot_count, size_t metric_doubles);
  int slot_count() const { return slot_count_; }
  size_t metric_doubles() const { return metric_doubles_; }

  std::vector<float> get_params(int rank) const;
  void set_params(const std::vector<float>& flat);
  std::vector<float> get_state(int rank) const;
  void set_state(const std::vector<float>& flat);
  std::vector<float> get_slot(int k, int rank) const;
  void set_slot(int k, const std::vector<float>& flat);
  // Slot k = flat on the first replica and zeros on the others (a gradient
  // accumulator, whose value is the sum over replicas).
  void set_slot_first_only(int k, const std::vector<float>& flat);

  int64_t iterations = 0;    // applied updates (Keras' optimizer.iterations)
  int64_t samples_seen = 0;  // since reset_metrics()
  void reset_metrics();
  // The metric sums added over replicas.
  std::vector<double> metric_totals() const;

 private:
  struct Buffers {
    DeviceBuffer params{nullptr, DeviceFree{}}, grads{nullptr, DeviceFree{}};
    DeviceBuffer state{nullptr, DeviceFree{}};
    std::vector<DeviceBuffer> slots;
    DeviceBuffer metrics{nullptr, DeviceFree{}};
    DeviceBuffer scalars{nullptr, DeviceFree{}};
    DeviceBuffer ls_word{nullptr, DeviceFree{}}, ls_table{nullptr, DeviceFree{}};
  };
  static float* f(const DeviceBuffer& b) { return static_cast<float*>(b.get()); }
  std::vector<float> download(const DeviceBuffer& b, int rank, int64_t floats) const;
  // Uploads `flat` to replica 0's buffer picked by `pick`, then broadcasts it.
  template <typename Pick>
  void upload_and_broadcast(const std::vector<float>& flat, Pick pick);

  const Graph& graph_;
  ReplicaSet& replicas_;
  std::vector<Buffers> buffers_;
  int slot_count_ = 0;
  size_t metric_doubles_ = 0;
  int64_t loss_scale_rows_ = 0;
};

}  // namespace mr
