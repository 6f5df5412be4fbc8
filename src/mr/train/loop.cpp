#include "train/loop.h"

#include <chrono>

#include "core/error.h"
#include "data/array_source.h"

namespace mr {

namespace {

using Clock = std::chrono::steady_clock;

// Throttles progress reports to hooks.progress_interval().
class Progress {
 public:
  explicit Progress(const LoopHooks& hooks)
      : interval_(hooks.progress_interval()), last_(Clock::now()) {}
  bool due(bool last_batch) {
    if (interval_ <= 0.0) return false;
    const auto now = Clock::now();
    if (!last_batch && std::chrono::duration<double>(now - last_).count() < interval_) return false;
    last_ = now;
    return true;
  }

 private:
  double interval_;
  Clock::time_point last_;
};

// One loop shape for training and evaluation: the next batch is drawn while
// the replicas work on the current one.
// Training steps are timed on the model's step clock (i14-monitor): the
// caller's draws from the source are its input intervals.
LoopResult run_staged_steps(Model& model, BatchSource& source, int64_t max_batches,
                            LoopHooks& hooks, bool train);
LoopResult run_resident_steps(Model& model, ArraySource& source, int64_t max_batches,
                              LoopHooks& hooks, bool train);

LoopResult run_steps(Model& model, BatchSource& source, int64_t max_batches, LoopHooks& hooks,
                     bool train) {
  // i14-devinput: in-memory arrays resident on the device, else batches
  // staged ahead on the copy lane, else uploads from the host.
  if (auto* arrays = dynamic_cast<ArraySource*>(&source);
      arrays != nullptr && model.resident_input_for(arrays->data())) {
    model.set_last_input_path(Model::InputPath::resident);
    return run_resident_steps(model, *arrays, max_batches, hooks, train);
  }
  if (model.device_input_active()) {
    model.set_last_input_path(Model::InputPath::copy_lane);
    return run_staged_steps(model, source, max_batches, hooks, train);
  }
  model.set_last_input_path(Model::InputPath::host);
  LoopResult res;
  model.reset_metrics();
  Progress progress(hooks);
  HostBatch cur, next;
  StepClock* clock = train ? &model.step_clock() : nullptr;
  auto draw = [&source, clock](HostBatch& b) {
    if (clock != nullptr) clock->begin_input();
    const bool got = source.next(b);
    if (clock != nullptr) clock->end_input();
    return got;
  };
  bool have = max_batches != 0 && draw(cur);
  const bool per_batch = hooks.batch_events();
  while (have) {
    if (clock != nullptr) clock->begin_step();
    if (per_batch) hooks.on_batch_begin(res.batches);
    if (train)
      model.start_train_step(cur);
    else
      model.start_eval_step(cur);
    bool have_next = false;
    try {
      have_next = (max_batches < 0 || res.batches + 1 < max_batches) && draw(next);
    } catch (...) {
      model.finish_step();  // never leave a step in flight
      throw;
    }
    // R's interrupts are polled while the replicas work, so a step stuck in
    // a collective or on a device stops at once instead of at its deadline.
    const bool stop = model.finish_step([&hooks] { return hooks.interrupted(); });
    ++res.batches;
    const bool last = !have_next;
    if (per_batch) hooks.on_batch_end(res.batches - 1, model.read_metrics());
    // The first batch always reports: Keras times steps from the end of step 1.
    if (progress.due(last || res.batches == 1))
      hooks.on_progress(res.batches, model.read_metrics());
    if (!last && train && hooks.stop_requested()) break;
    if (!last && (stop || hooks.interrupted())) {
      res.interrupted = true;
      break;
    }
    std::swap(cur, next);
    have = have_next;
  }
  res.logs = model.read_metrics();
  if (clock != nullptr) clock->end_epoch();
  return res;
}

// ---- i14-devinput: the same loop with batches staged ahead in device slots ----
// Step i reads device slot i % 2; it copies the slot out, then stages batch
// i + 2 into it on the copy lane, so that while step i computes, batch i + 1
// is staged and batch i + 2 is on its way. Meanwhile the caller draws batch
// i + 3. Host validity (data/batch.h: a batch stays valid until the source
// has produced two more): batch i + 3 invalidates batch i + 1, which step
// i - 1 (or the pass's start) staged already; batch i + 2, read by step i,
// stays valid until batch i + 4 is drawn during step i + 1. What a step
// still needs of its batch on the host (rows, the loss's per-batch
// arguments) is kept with the slot when it is staged (Step::prepare_slot).
LoopResult run_staged_steps(Model& model, BatchSource& source, int64_t max_batches,
                            LoopHooks& hooks, bool train) {
  LoopResult res;
  model.reset_metrics();
  Progress progress(hooks);
  StepClock* clock = train ? &model.step_clock() : nullptr;
  auto draw = [&source, clock](HostBatch& b) {
    if (clock != nullptr) clock->begin_input();
    const bool got = source.next(b);
    if (clock != nullptr) clock->end_input();
    return got;
  };
  auto wanted = [max_batches](int64_t k) { return max_batches < 0 || k < max_batches; };
  // Batch k's host batch lives in host[k % 2] until it is staged.
  HostBatch host[2];
  bool have = wanted(0) && draw(host[0]);
  bool have_next = have && wanted(1) && draw(host[1]);
  if (have) {
    // The pass's first two batches, staged before its first step: the
    // replicas' input time (the caller waits for them).
    if (clock != nullptr) clock->begin_input();
    model.stage_inputs(host[0], have_next ? &host[1] : nullptr);
    if (clock != nullptr) clock->end_input();
  }
  bool have_ahead = have_next && wanted(2) && draw(host[0]);  // batch 0 is staged
  const bool per_batch = hooks.batch_events();
  for (int64_t i = 0; have; ++i) {
    if (clock != nullptr) clock->begin_step();
    if (per_batch) hooks.on_batch_begin(res.batches);
    model.start_staged_step(train, static_cast<int>(i % 2), have_ahead ? &host[i % 2] : nullptr);
    bool have_after = false;  // batch i + 3, into batch i + 1's host batch (staged)
    try {
      have_after = have_ahead && wanted(i + 3) && draw(host[(i + 1) % 2]);
    } catch (...) {
      model.finish_step();  // never leave a step in flight
      throw;
    }
    const bool stop = model.finish_step([&hooks] { return hooks.interrupted(); });
    ++res.batches;
    const bool last = !have_next;
    if (per_batch) hooks.on_batch_end(res.batches - 1, model.read_metrics());
    if (progress.due(last || res.batches == 1))
      hooks.on_progress(res.batches, model.read_metrics());
    if (!last && train && hooks.stop_requested()) break;
    if (!last && (stop || hooks.interrupted())) {
      res.interrupted = true;
      break;
    }
    have = have_next;
    have_next = have_ahead;
    have_ahead = have_after;
  }
  res.logs = model.read_metrics();
  if (clock != nullptr) clock->end_epoch();
  return res;
}

// ---- i14-devinput: the same loop over arrays resident on the device ----
// A batch is its row numbers (ArraySource::next_rows, valid until the next
// reset): the next one is drawn while the replicas gather and run this one.
LoopResult run_resident_steps(Model& model, ArraySource& source, int64_t max_batches,
                              LoopHooks& hooks, bool train) {
  LoopResult res;
  model.reset_metrics();
  Progress progress(hooks);
  StepClock* clock = train ? &model.step_clock() : nullptr;
  auto draw = [&source, clock](const int64_t*& order, int64_t& rows) {
    if (clock != nullptr) clock->begin_input();
    const bool got = source.next_rows(order, rows);
    if (clock != nullptr) clock->end_input();
    return got;
  };
  const ArrayData& data = *source.data();
  const int64_t* cur = nullptr;
  const int64_t* next = nullptr;
  int64_t cur_rows = 0, next_rows = 0;
  bool have = max_batches != 0 && draw(cur, cur_rows);
  const bool per_batch = hooks.batch_events();
  while (have) {
    if (clock != nullptr) clock->begin_step();
    if (per_batch) hooks.on_batch_begin(res.batches);
    model.start_resident_step(train, data, cur, cur_rows);
    bool have_next = false;
    try {
      have_next = (max_batches < 0 || res.batches + 1 < max_batches) && draw(next, next_rows);
    } catch (...) {
      model.finish_step();  // never leave a step in flight
      throw;
    }
    const bool stop = model.finish_step([&hooks] { return hooks.interrupted(); });
    ++res.batches;
    const bool last = !have_next;
    if (per_batch) hooks.on_batch_end(res.batches - 1, model.read_metrics());
    if (progress.due(last || res.batches == 1))
      hooks.on_progress(res.batches, model.read_metrics());
    if (!last && train && hooks.stop_requested()) break;
    if (!last && (stop || hooks.interrupted())) {
      res.interrupted = true;
      break;
    }
    cur = next;
    cur_rows = next_rows;
    have = have_next;
  }
  res.logs = model.read_metrics();
  if (clock != nullptr) clock->end_epoch();
  return res;
}

}  // namespace

LoopResult train_epoch(Model& model, BatchSource& source, int64_t epoch, int64_t max_batches,
                       LoopHooks& hooks) {
  // The epoch's clock opens before the pass starts: a source's reset
  // (a shuffle) is input time of the first step.
  model.begin_monitored_epoch();
  model.step_clock().begin_input();
  source.reset(epoch);
  model.step_clock().end_input();
  return run_steps(model, source, max_batches, hooks, true);
}

LoopResult evaluate(Model& model, BatchSource& source, int64_t max_batches, LoopHooks& hooks) {
  source.reset(0);
  return run_steps(model, source, max_batches, hooks, false);
}

LoopResult predict(Model& model, BatchSource& source, int64_t max_batches, LoopHooks& hooks,
                   std::vector<std::vector<float>>& outs) {
  LoopResult res;
  source.reset(0);
  Progress progress(hooks);
  const int n_out = model.outputs();
  outs.resize(static_cast<size_t>(n_out));
  std::vector<float*> dst(static_cast<size_t>(n_out));
  HostBatch batch;
  while ((max_batches < 0 || res.batches < max_batches) && source.next(batch)) {
    for (int k = 0; k < n_out; ++k) {
      std::vector<float>& o = outs[static_cast<size_t>(k)];
      const size_t at = o.size();
      o.resize(at + static_cast<size_t>(batch.rows * model.output_width(k)));
      dst[static_cast<size_t>(k)] = o.data() + at;
    }
    model.predict_step(batch, dst);
    ++res.batches;
    if (progress.due(res.batches == 1)) hooks.on_progress(res.batches, {});
    if (hooks.interrupted()) {
      res.interrupted = true;
      break;
    }
  }
  return res;
}

}  // namespace mr
