// Where each training step's time goes, per replica: compute (forward,
// loss, backward, update), waiting for the all-reduce, waiting for input,
// and host overhead (the rest: posting, hooks, R callbacks).
//
// Two threads write it and one reads it:
// - the caller's thread (the fit loop) opens the epoch, opens each step,
//   marks the intervals it spends drawing the next batch from the pipeline,
//   and closes the epoch;
// - each replica's thread marks its own busy interval in the step and, inside
//   it, the phases it spends staging its slice (input) and in collectives
//   (all-reduce). A replica writes only its own slot; the caller reads a
//   replica's slot only after ReplicaSet::wait() returned (which orders the
//   replica's writes before the read), when it folds a step into the epoch's
//   sums at the next step's open or at the epoch's close.
//
// The partition (exact, by construction): a step runs from the caller's open
// of it (the epoch's open for the first step) to the caller's open of the
// next (the epoch's close for the last). For replica r, within that interval,
//   input     = its staging phases + the time it was idle while the caller
//               was drawing a batch (the input intervals);
//   all-reduce= its all-reduce phases;
//   compute   = its busy interval minus those phases;
//   host      = the rest of the interval (idle while the caller posted the
//               step, ran hooks or R callbacks, or waited on the replicas).
// So compute + all-reduce + input + host = the step's wall time, for every
// replica. Nested phases are exclusive: a phase begun inside another pauses
// the outer one, so every instant counts once.
//
// Invariant: nothing here allocates after construction (fixed-size arrays
// per replica; kMaxDepth open phases, kMaxInputs input intervals per step).
// Host clocks only (steady_clock): on a GPU the replica's busy interval is its
// thread's, so device time the thread does not wait for shows up where the
// caller waits for it (host). GPU event timing is not measured here.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

namespace mr {

enum class StepPhase { input = 0, allreduce = 1 };

// One replica's sums over an epoch, in seconds.
struct StepBreakdown {
  int64_t steps = 0;
  double wall = 0.0;  // sum of the steps' intervals (= compute + allreduce + input + host)
  double compute = 0.0;
  double allreduce = 0.0;
  double input = 0.0;
  double host = 0.0;
};

class StepClock {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kMaxDepth = 4;
  static constexpr int kMaxInputs = 4;

  explicit StepClock(int replicas);

  // ---- the caller's thread ----
  // Opens an epoch: clears the sums. `now` defaults to the clock (tests pass
  // their own times).
  void begin_epoch(Clock::time_point now = Clock::now());
  // Opens a step (the caller is about to post it); closes the previous one.
  void begin_step(Clock::time_point now = Clock::now());
  // The caller draws a batch from the pipeline between these two.
  void begin_input(Clock::time_point now = Clock::now());
  void end_input(Clock::time_point now = Clock::now());
  // Closes the last step and the epoch; epoch() then holds its sums.
  void end_epoch(Clock::time_point now = Clock::now());
  // The sums of the epoch closed last (one per replica); empty before any.
  const std::vector<StepBreakdown>& epoch() const { return done_; }

  // ---- replica `r`'s thread, inside a step ----
  void begin_replica(int r, Clock::time_point now = Clock::now());
  void end_replica(int r, Clock::time_point now = Clock::now());
  void begin_phase(int r, StepPhase p, Clock::time_point now = Clock::now());
  void end_phase(int r, StepPhase p, Clock::time_point now = Clock::now());

  int replicas() const { return static_cast<int>(reps_.size()); }

 private:
  struct Span {
    Clock::time_point begin, end;
  };
  // Written by replica r's thread during a step.
  struct Rep {
    bool busy = false;
    Span run;                       // the busy interval of the step
    std::array<double, 2> phase{};  // seconds per StepPhase, exclusive
    std::array<StepPhase, kMaxDepth> open{};
    int depth = 0;
    Clock::time_point mark;  // when the innermost open phase last resumed
  };
  void close_step(Clock::time_point now);
  // Seconds of [a, b) covered by the step's input intervals.
  double input_overlap(Clock::time_point a, Clock::time_point b) const;

  std::vector<Rep> reps_;
  std::vector<StepBreakdown> sums_;  // the epoch in progress
  std::vector<StepBreakdown> done_;  // the epoch closed last
  bool in_epoch_ = false, in_step_ = false, in_input_ = false;
  Clock::time_point step_begin_;
  std::array<Span, kMaxInputs> inputs_{};
  int n_inputs_ = 0;
};

// Times a phase on replica `r` for the scope's lifetime; a null clock times
// nothing (one-line instrumentation in the step and the update pipeline).
class ScopedPhase {
 public:
  ScopedPhase(StepClock* clock, int r, StepPhase p) : clock_(clock), r_(r), p_(p) {
    if (clock_ != nullptr) clock_->begin_phase(r_, p_);
  }
  ~ScopedPhase() {
    if (clock_ != nullptr) clock_->end_phase(r_, p_);
  }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  StepClock* clock_;
  int r_;
  StepPhase p_;
};

// Marks replica `r`'s busy interval in a step for the scope's lifetime
// (also when the step throws); a null clock marks nothing.
class ScopedReplica {
 public:
  ScopedReplica(StepClock* clock, int r) : clock_(clock), r_(r) {
    if (clock_ != nullptr) clock_->begin_replica(r_);
  }
  ~ScopedReplica() {
    if (clock_ != nullptr) clock_->end_replica(r_);
  }
  ScopedReplica(const ScopedReplica&) = delete;
  ScopedReplica& operator=(const ScopedReplica&) = delete;

 private:
  StepClock* clock_;
  int r_;
};

}  // namespace mr
