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

// What every loop shape does around its steps (one per input path): opens
// each step on the clock (training steps are timed on the model's step
// clock, i14-monitor; the caller's draws from the source are its input
// intervals), tells the hooks, and after the step's wait reports it and says
// whether the loop goes on.
class StepCycle {
 public:
  StepCycle(Model& model, LoopHooks& hooks, bool train)
      : model_(model),
        hooks_(hooks),
        train_(train),
        progress_(hooks),
        clock_(train ? &model.step_clock() : nullptr),
        per_batch_(hooks.batch_events()) {
    model.reset_metrics();
  }
  // Draws with f(), timed as input.
  template <class F>
  bool draw(F&& f) {
    if (clock_ != nullptr) clock_->begin_input();
    const bool got = f();
    if (clock_ != nullptr) clock_->end_input();
    return got;
  }
  void begin() {
    if (clock_ != nullptr) clock_->begin_step();
    if (per_batch_) hooks_.on_batch_begin(res_.batches);
  }
  // Draws the next batch with f() while the step posted since begin() runs
  // (which is finished before an error in f() propagates), then waits for the
  // step and reports it. Returns whether a next batch was drawn and the loop
  // goes on.
  template <class F>
  bool end(F&& draw_next) {
    bool have_next = false;
    try {
      have_next = draw(draw_next);
    } catch (...) {
      model_.finish_step();  // never leave a step in flight
      throw;
    }
    // R's interrupts are polled while the replicas work, so a step stuck in
    // a collective or on a device stops at once instead of at its deadline.
    const bool stop = model_.finish_step([this] { return hooks_.interrupted(); });
    ++res_.batches;
    const bool last = !have_next;
    // The epoch's last logs are the job's (i16: summed over the workers, at
    // the same batch on every worker); earlier ones are this worker's rows.
    if (last) {
      final_logs_ = model_.read_metrics(true);
      have_final_ = true;
    }
    auto logs = [&] { return last ? final_logs_ : model_.read_metrics(); };
    if (per_batch_) hooks_.on_batch_end(res_.batches - 1, logs());
    // The first batch always reports: Keras times steps from the end of step 1.
    if (progress_.due(last || res_.batches == 1)) hooks_.on_progress(res_.batches, logs());
    if (last) return false;
    if (train_ && hooks_.stop_requested()) return false;
    if (stop || hooks_.interrupted()) {
      res_.interrupted = true;
      return false;
    }
    return true;
  }
  int64_t batches() const { return res_.batches; }
  LoopResult finish() {
    // An interrupted worker stops alone: its own rows only (a collective
    // here would wait for workers that go on).
    res_.logs = have_final_ ? final_logs_ : model_.read_metrics(!res_.interrupted);
    if (clock_ != nullptr) clock_->end_epoch();
    return res_;
  }

 private:
  Model& model_;
  LoopHooks& hooks_;
  bool train_;
  std::vector<double> final_logs_;
  bool have_final_ = false;
  Progress progress_;
  StepClock* clock_;
  bool per_batch_;
  LoopResult res_;
};

// From the host: the next batch is drawn while the replicas work on the
// current one, which each step uploads.
LoopResult run_host_steps(Model& model, BatchSource& source, int64_t max_batches, LoopHooks& hooks,
                          bool train) {
  StepCycle cycle(model, hooks, train);
  HostBatch cur, next;
  bool have = max_batches != 0 && cycle.draw([&] { return source.next(cur); });
  while (have) {
    cycle.begin();
    if (train)
      model.start_train_step(cur);
    else
      model.start_eval_step(cur);
    have = cycle.end([&] {
      return (max_batches < 0 || cycle.batches() + 1 < max_batches) && source.next(next);
    });
    std::swap(cur, next);
  }
  return cycle.finish();
}

// ---- i14-devinput: batches staged ahead in device slots ----
// Step i copies device slot i % 2 into its buffers, queues its work, then
// stages batch i + 2 into the slot on the copy lane: while step i computes, batch i + 1
// is staged and batch i + 2 is on its way. Meanwhile the caller draws batch
// i + 3. Host validity (data/batch.h: a batch stays valid until the source
// has produced two more): batch i + 3 invalidates batch i + 1, which step
// i - 1 (or the pass's start) staged already; batch i + 2, read by step i,
// stays valid until batch i + 4 is drawn during step i + 1. What a step
// still needs of its batch on the host (rows, the loss's per-batch
// arguments) is kept with the slot when it is staged (Step::prepare_slot).
LoopResult run_staged_steps(Model& model, BatchSource& source, int64_t max_batches,
                            LoopHooks& hooks, bool train) {
  StepCycle cycle(model, hooks, train);
  auto wanted = [max_batches](int64_t k) { return max_batches < 0 || k < max_batches; };
  // Batch k's host batch lives in host[k % 2] until it is staged. The pass's
  // first two batches are staged before its first step, batch 2 drawn where
  // batch 0 was: one input interval.
  HostBatch host[2];
  bool have = false, have_next = false, have_ahead = false;
  cycle.draw([&] {
    have = wanted(0) && source.next(host[0]);
    have_next = have && wanted(1) && source.next(host[1]);
    if (have) model.stage_inputs(host[0], have_next ? &host[1] : nullptr, train);
    have_ahead = have_next && wanted(2) && source.next(host[0]);
    return have;
  });
  for (int64_t i = 0; have; ++i) {
    cycle.begin();
    model.start_staged_step(train, static_cast<int>(i % 2), have_ahead ? &host[i % 2] : nullptr);
    // Batch i + 3, into batch i + 1's host batch (staged).
    bool have_after = false;
    const bool go_on = cycle.end([&] {
      have_after = have_ahead && wanted(i + 3) && source.next(host[(i + 1) % 2]);
      return have_next;
    });
    // A batch i + 2 larger than its slot is staged now, after step i's
    // bookkeeping (Model::stage_late_input); still valid: batch i + 3 went
    // into the other host batch.
    if (model.late_input_pending()) {
      if (!go_on) {
        model.stage_late_input(false);
      } else {
        cycle.draw([&] {
          model.stage_late_input(true);
          return true;
        });
      }
    }
    if (!go_on) break;
    have = have_next;
    have_next = have_ahead;
    have_ahead = have_after;
  }
  return cycle.finish();
}

// ---- i14-devinput: arrays resident on the device ----
// A batch is its row numbers (ArraySource::next_rows, valid until the next
// reset): the next one is drawn while the replicas gather and run this one.
LoopResult run_resident_steps(Model& model, ArraySource& source, int64_t max_batches,
                              LoopHooks& hooks, bool train) {
  StepCycle cycle(model, hooks, train);
  const ArrayData& data = *source.data();
  const int64_t* cur = nullptr;
  const int64_t* next = nullptr;
  int64_t cur_rows = 0, next_rows = 0;
  bool have = max_batches != 0 && cycle.draw([&] { return source.next_rows(cur, cur_rows); });
  while (have) {
    cycle.begin();
    model.start_resident_step(train, data, cur, cur_rows);
    have = cycle.end([&] {
      return (max_batches < 0 || cycle.batches() + 1 < max_batches) &&
             source.next_rows(next, next_rows);
    });
    cur = next;
    cur_rows = next_rows;
  }
  return cycle.finish();
}

// ---- i16: each worker batches its own shard of the data ----
// Every step the workers exchange their batch sizes (between steps): the
// global batch is their sum, each worker's rows start after the previous
// workers' (so dropout keys and the loss's global mean are those of one
// device on the concatenated batch), and a worker whose shard ended joins
// with no rows until every shard has ended: shards of different lengths end
// the epoch together instead of hanging.
LoopResult run_sharded_steps(Model& model, BatchSource& source, int64_t max_batches,
                             LoopHooks& hooks, bool train) {
  struct EndShard {
    Model& m;
    ~EndShard() { m.end_shard(); }
  } end_shard{model};
  StepCycle cycle(model, hooks, train);
  HostBatch cur, next;
  bool mine = max_batches != 0 && cycle.draw([&] { return source.next(cur); });
  // A worker's batches come from its shard until it ends: only a worker with
  // a first batch ever has one (its parts' widths serve the empty steps).
  const bool have_shape = mine;
  HostBatch shape;
  if (mine) shape = cur;
  int64_t total = max_batches != 0 ? model.share_rows(mine ? cur.rows : 0) : 0;
  while (total > 0) {
    if (!mine) {
      // The parts' widths of an earlier batch, with no rows.
      MR_CHECK(have_shape, value,
               "this worker's shard of the dataset is empty while the others' are not; give "
               "every worker at least one batch");
      cur = shape;
      cur.rows = 0;
    }
    cycle.begin();
    if (train)
      model.start_train_step(cur);
    else
      model.start_eval_step(cur);
    bool next_mine = false;
    const bool go_on = cycle.end([&] {
      next_mine =
          mine && (max_batches < 0 || cycle.batches() + 1 < max_batches) && source.next(next);
      return true;
    });
    if (!go_on) break;
    if (max_batches >= 0 && cycle.batches() >= max_batches) break;
    if (next_mine) std::swap(cur, next);
    mine = next_mine;
    total = model.share_rows(mine ? cur.rows : 0);
  }
  return cycle.finish();
}

// i14-devinput: in-memory arrays resident on the device, else batches staged
// ahead on the copy lane, else uploads from the host.
LoopResult run_steps(Model& model, BatchSource& source, int64_t max_batches, LoopHooks& hooks,
                     bool train) {
  // i16: a multi-worker job's shards go through the host.
  if (model.workers() && source.sharded())
    return run_sharded_steps(model, source, max_batches, hooks, train);
  auto* arrays = dynamic_cast<ArraySource*>(&source);
  bool resident = false;
  if (arrays != nullptr) {
    // Making the arrays resident (their upload, at the first epoch) is input
    // time of the epoch's first step on the step clock.
    StepClock* clock = train ? &model.step_clock() : nullptr;
    if (clock != nullptr) clock->begin_input();
    try {
      resident = model.resident_input_for(arrays->data());
    } catch (...) {
      if (clock != nullptr) clock->end_input();
      throw;
    }
    if (clock != nullptr) clock->end_input();
  }
  if (resident) {
    model.set_last_input_path(Model::InputPath::resident);
    return run_resident_steps(model, *arrays, max_batches, hooks, train);
  }
  if (model.device_input_active()) {
    model.set_last_input_path(Model::InputPath::copy_lane);
    return run_staged_steps(model, source, max_batches, hooks, train);
  }
  model.set_last_input_path(Model::InputPath::host);
  return run_host_steps(model, source, max_batches, hooks, train);
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
  const bool per_batch = hooks.batch_events();
  std::vector<Shape> shapes;  // each output's per-sample shape, from the first batch
  while ((max_batches < 0 || res.batches < max_batches) && source.next(batch)) {
    if (per_batch) hooks.on_batch_begin(res.batches);
    if (batch.rows > 0) {
      // A variable-length model's outputs follow each batch's lengths: the
      // batches stack into one array only when they agree.
      model.select_graph(batch);
      for (int k = 0; k < n_out; ++k) {
        if (static_cast<int>(shapes.size()) == k) shapes.push_back(model.output_shape(k));
        const Shape now = model.output_shape(k);
        MR_CHECK(now == shapes[static_cast<size_t>(k)], shape, "predict(): batch ", res.batches + 1,
                 " gives output ", k + 1, " of shape ", now.str_with_batch(),
                 ", the batches before ", shapes[static_cast<size_t>(k)].str_with_batch(),
                 ": outputs of different lengths do not stack into one array; predict each "
                 "batch with predict_on_batch(), or pad the inputs to one length");
      }
    }
    for (int k = 0; k < n_out; ++k) {
      std::vector<float>& o = outs[static_cast<size_t>(k)];
      const size_t at = o.size();
      o.resize(at + static_cast<size_t>(batch.rows * model.output_width(k)));
      dst[static_cast<size_t>(k)] = o.data() + at;
    }
    model.predict_step(batch, dst);
    ++res.batches;
    // The batch's outputs are the last batch.rows rows of each outs[k] here.
    if (per_batch) hooks.on_batch_end(res.batches - 1, {});
    if (progress.due(res.batches == 1)) hooks.on_progress(res.batches, {});
    if (hooks.interrupted()) {
      res.interrupted = true;
      break;
    }
  }
  return res;
}

}  // namespace mr
