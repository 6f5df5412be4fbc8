// The fit / evaluate / predict loops. They run on the caller's (R's) thread
// but only orchestrate: the replicas compute on their own threads while the
// caller prepares the next batch. The caller is called back through LoopHooks
// between steps only — for per-batch callbacks when some exist, for progress
// at most every progress_interval() seconds, and to poll for interrupts — so a
// step never waits for R.
#pragma once

#include <cstdint>
#include <vector>

#include "data/batch.h"
#include "train/model.h"

namespace mr {

class LoopHooks {
 public:
  virtual ~LoopHooks() = default;
  // When true, on_batch_begin/end run for every batch.
  virtual bool batch_events() const { return false; }
  virtual void on_batch_begin(int64_t /*batch*/) {}
  virtual void on_batch_end(int64_t /*batch*/, const std::vector<double>& /*logs*/) {}
  // Seconds between on_progress calls (<= 0: never); the last batch always reports.
  virtual double progress_interval() const { return 0.0; }
  virtual void on_progress(int64_t /*batches_done*/, const std::vector<double>& /*logs*/) {}
  // Polled between steps; true stops the loop at the step boundary.
  virtual bool interrupted() { return false; }
  // Read after on_batch_end / on_progress: true when a callback asked
  // training to stop (Keras' model.stop_training, e.g. TerminateOnNaN), which
  // ends the epoch after this step (not an interrupt: the epoch's logs stand).
  virtual bool stop_requested() const { return false; }
};

struct LoopResult {
  int64_t batches = 0;
  bool interrupted = false;
  std::vector<double> logs;  // Model::metric_names() order
};

// Trains on up to max_batches batches of `source` (-1: until it ends), after
// source.reset(epoch). Metrics are reset first.
LoopResult train_epoch(Model& model, BatchSource& source, int64_t epoch, int64_t max_batches,
                       LoopHooks& hooks);
LoopResult evaluate(Model& model, BatchSource& source, int64_t max_batches, LoopHooks& hooks);
// Appends model output k (rows x width, row-major) to outs[k], for every
// output (`outs` is resized to the model's outputs). With batch events,
// on_batch_end runs after a batch's rows were appended (they end outs[k]).
LoopResult predict(Model& model, BatchSource& source, int64_t max_batches, LoopHooks& hooks,
                   std::vector<std::vector<float>>& outs);

}  // namespace mr
