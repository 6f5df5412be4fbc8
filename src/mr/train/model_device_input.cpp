// Model's side of input staged ahead on the device (i14-devinput): the
// checks and the host bookkeeping of train/device_input.h's slots.
#include <exception>

#include "core/error.h"
#include "train/model.h"

namespace mr {

void Model::set_device_input(int mode) {
  MR_CHECK(mode >= -1 && mode <= 1, value, "device input mode must be -1, 0 or 1, got ", mode);
  MR_CHECK(!in_flight_, internal, "a step is in flight");
  device_input_mode_ = mode;
}

bool Model::device_input_active() const {
  // A variable-length model selects each batch's graph on the posting
  // thread (Step::select), which a batch staged ahead would bypass: it takes
  // the host path.
  if (graph_->variable()) return false;
  if (device_input_mode_ >= 0) return device_input_mode_ == 1;
  // Automatic: only a backend with a copy lane gains from it; on the CPU it
  // would only add a copy.
  for (int r = 0; r < replicas_.size(); ++r)
    if (replicas_.backend(r).kind() != DeviceKind::cuda) return false;
  return true;
}

bool Model::accept_staged(int slot, const HostBatch& batch, bool train) {
  auto& error = slot_error_[static_cast<size_t>(slot)];
  error = nullptr;
  slot_skip_[static_cast<size_t>(slot)] = false;
  // Evaluation skips a batch of no rows, as start_eval_step() does.
  if (!train && batch.rows == 0) {
    slot_skip_[static_cast<size_t>(slot)] = true;
    return false;
  }
  // The checks of start_train_step(), whose error is raised at the batch's
  // own step (start_staged_step), after the steps before it ran, as on the
  // host path.
  try {
    MR_CHECK(batch.rows > 0, value, "empty batch");
    check_batch(batch, true);
  } catch (const Error&) {
    error = std::current_exception();
    return false;
  }
  return true;
}

void Model::stage_inputs(const HostBatch& first, const HostBatch* second, bool train) {
  MR_CHECK(compiled_, value, "the model must be compiled before ",
           train ? "training" : "evaluation");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  late_ahead_ = nullptr;  // a pass that ended in an error may have left one
  const HostBatch* batches[2] = {&first, second};
  bool stage[2] = {false, false};
  for (int slot = 0; slot < 2; ++slot) {
    const HostBatch* b = batches[slot];
    if (b == nullptr) {
      slot_error_[static_cast<size_t>(slot)] = nullptr;
      slot_skip_[static_cast<size_t>(slot)] = false;
      continue;
    }
    stage[slot] = accept_staged(slot, *b, train);
    if (!stage[slot]) continue;
    // Pinned staging and the step's buffers for the batch (Step::reserve).
    step_.reserve(b->rows, target_widths(*b), has_weights(*b));
    step_.device_input().reserve(slot, *b);
    step_.prepare_slot(slot, *b, config_);
  }
  for (int slot = 0; slot < 2; ++slot)
    if (stage[slot]) step_.stage_slot_now(slot, *batches[slot]);
}

void Model::start_staged_step(bool train, int slot, const HostBatch* ahead) {
  MR_CHECK(compiled_, value, "the model must be compiled before ",
           train ? "training" : "evaluation");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  MR_CHECK(slot >= 0 && slot < DeviceInput::kSlots, internal, "no input slot ", slot);
  MR_CHECK(late_ahead_ == nullptr, internal, "a late batch was not staged (stage_late_input)");
  const auto at = static_cast<size_t>(slot);
  // The batch's own check failed when it was staged: its step fails now.
  if (slot_error_[at] != nullptr) {
    const std::exception_ptr e = slot_error_[at];
    slot_error_[at] = nullptr;
    std::rethrow_exception(e);
  }
  const bool skip = slot_skip_[at];
  const bool stage_ahead = ahead != nullptr && accept_staged(slot, *ahead, train);
  if (skip) {
    // An evaluation batch of no rows: no step; the slot holds nothing, so
    // `ahead` goes into it after this (empty) step, between steps.
    if (stage_ahead) {
      step_.prepare_slot(slot, *ahead, config_);
      late_ahead_ = ahead;
      late_slot_ = slot;
    }
    return;
  }
  staged_desc_ = step_.device_input().descriptor(slot);  // reuses its capacity
  MR_CHECK(staged_desc_.rows > 0, internal, "input slot ", slot, " holds no batch");
  step_.reserve(staged_desc_.rows, target_widths(staged_desc_), has_weights(staged_desc_));
  // A batch larger than the slot (a source whose batches grow) cannot be
  // staged inside the step: the slot grows after it (stage_late_input).
  const bool fits = !stage_ahead || step_.device_input().fits(slot, *ahead);
  late_ahead_ = fits || !stage_ahead ? nullptr : ahead;
  late_slot_ = slot;
  step_.use_slot(slot, stage_ahead && fits ? ahead : nullptr);
  try {
    if (train) {
      step_.post_train(staged_desc_, config_, begin_train_step());
    } else {
      step_.post_eval(staged_desc_, config_);
    }
  } catch (...) {
    step_.use_slot(-1, nullptr);
    late_ahead_ = nullptr;
    throw;
  }
  in_flight_ = true;
  in_flight_train_ = train;
  state_.samples_seen += replicas_.local_rows(staged_desc_.rows);
  // The replicas read neither the descriptor nor the loss arguments of a
  // slot (the step in flight copied its own), so the batch after next takes
  // the slot's host side now, while its host data are valid.
  if (stage_ahead) step_.prepare_slot(slot, *ahead, config_);
}

void Model::end_step_input(bool ok) {
  step_.use_slot(-1, nullptr);
  step_.stop_resident();
  if (!ok) late_ahead_ = nullptr;
}

void Model::stage_late_input(bool go_on) {
  MR_CHECK(!in_flight_, internal, "a step is in flight");
  const HostBatch* late = late_ahead_;
  late_ahead_ = nullptr;
  if (!go_on || late == nullptr) return;
  step_.reserve(late->rows, target_widths(*late), has_weights(*late));
  step_.device_input().reserve(late_slot_, *late);
  step_.stage_slot_now(late_slot_, *late);
}

// ---- datasets resident on the device ----

void Model::set_resident_input(int mode, int64_t budget) {
  MR_CHECK(mode >= -1 && mode <= 1, value, "resident input mode must be -1, 0 or 1, got ", mode);
  MR_CHECK(budget >= 0, value, "the resident data budget must be >= 0 bytes, got ", budget);
  MR_CHECK(!in_flight_, internal, "a step is in flight");
  resident_mode_ = mode;
  resident_budget_ = budget;
}

bool Model::resident_input_for(const std::shared_ptr<const ArrayData>& data) {
  bool on = resident_mode_ == 1;
  if (resident_mode_ < 0) {
    on = true;
    for (int r = 0; r < replicas_.size(); ++r)
      if (replicas_.backend(r).kind() != DeviceKind::cuda) on = kResidentOnCpuByDefault;
  }
  if (!on || !compiled_ || graph_->variable()) return false;  // variable: see above
  return step_.resident().attach(data, resident_budget_);
}

void Model::release_resident_input() {
  MR_CHECK(!in_flight_, internal, "a step is in flight");
  step_.resident().release();
}

void Model::start_resident_step(bool train, const ArrayData& data, const int64_t* order,
                                int64_t rows) {
  MR_CHECK(compiled_, value, "the model must be compiled before ",
           train ? "training" : "evaluation");
  MR_CHECK(!in_flight_, internal, "a step is already in flight");
  MR_CHECK(rows > 0, value, "empty batch");
  resident_desc_.rows = rows;
  resident_desc_.parts.resize(data.widths.size());  // allocates at the first step only
  for (size_t k = 0; k < data.widths.size(); ++k)
    resident_desc_.parts[k] = HostComponent{nullptr, data.widths[k]};
  check_batch(resident_desc_, true);
  step_.reserve(rows, target_widths(resident_desc_), has_weights(resident_desc_));
  step_.use_resident(data, order, rows, config_);
  try {
    if (train) {
      step_.post_train(resident_desc_, config_, begin_train_step());
    } else {
      step_.post_eval(resident_desc_, config_);
    }
  } catch (...) {
    step_.stop_resident();
    throw;
  }
  in_flight_ = true;
  in_flight_train_ = train;
  state_.samples_seen += replicas_.local_rows(rows);
}

}  // namespace mr
