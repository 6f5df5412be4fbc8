#include "train/step_clock.h"

#include <algorithm>

#include "core/error.h"

namespace mr {

namespace {
double seconds(StepClock::Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

StepClock::StepClock(int replicas)
    : reps_(static_cast<size_t>(replicas)), sums_(static_cast<size_t>(replicas)) {
  MR_CHECK(replicas >= 1, internal, "a step clock needs at least one replica, got ", replicas);
}

void StepClock::begin_epoch(Clock::time_point now) {
  std::fill(sums_.begin(), sums_.end(), StepBreakdown{});
  for (Rep& rep : reps_) rep = Rep{};
  in_epoch_ = true;
  in_step_ = false;
  in_input_ = false;
  n_inputs_ = 0;
  // The first step's interval starts here: drawing its batch is part of it.
  step_begin_ = now;
}

void StepClock::begin_step(Clock::time_point now) {
  MR_CHECK(in_epoch_, internal, "StepClock::begin_step outside an epoch");
  if (in_step_) {
    close_step(now);
    step_begin_ = now;
  }
  // The first step keeps the epoch's open as its start (and its input
  // intervals so far: the first batch).
  in_step_ = true;
}

void StepClock::begin_input(Clock::time_point now) {
  MR_CHECK(in_epoch_ && !in_input_, internal, "StepClock::begin_input out of order");
  in_input_ = true;
  if (n_inputs_ < kMaxInputs) {
    inputs_[static_cast<size_t>(n_inputs_)].begin = now;
    inputs_[static_cast<size_t>(n_inputs_)].end = now;
  }
}

void StepClock::end_input(Clock::time_point now) {
  MR_CHECK(in_input_, internal, "StepClock::end_input without begin_input");
  in_input_ = false;
  if (n_inputs_ < kMaxInputs) {
    inputs_[static_cast<size_t>(n_inputs_)].end = now;
    ++n_inputs_;
  } else {
    // More intervals than slots (never in the fit loop: at most two per
    // step): widen the last one, which keeps every input instant covered.
    inputs_[kMaxInputs - 1].end = now;
  }
}

void StepClock::end_epoch(Clock::time_point now) {
  if (!in_epoch_) return;
  if (in_input_) end_input(now);
  if (in_step_) close_step(now);
  in_epoch_ = false;
  in_step_ = false;
  done_ = sums_;  // sized at construction: no allocation after the first epoch
}

void StepClock::begin_replica(int r, Clock::time_point now) {
  Rep& rep = reps_[static_cast<size_t>(r)];
  rep.busy = true;
  rep.run.begin = now;
  rep.run.end = now;
  rep.phase.fill(0.0);
  rep.depth = 0;
}

void StepClock::end_replica(int r, Clock::time_point now) {
  Rep& rep = reps_[static_cast<size_t>(r)];
  // Phases still open (a replica that failed mid-phase) end with the run.
  while (rep.depth > 0) end_phase(r, rep.open[static_cast<size_t>(rep.depth - 1)], now);
  rep.run.end = now;
}

void StepClock::begin_phase(int r, StepPhase p, Clock::time_point now) {
  Rep& rep = reps_[static_cast<size_t>(r)];
  MR_CHECK(rep.depth < kMaxDepth, internal, "more than ", kMaxDepth,
           " nested step phases on replica ", r);
  // The outer phase pauses: the time up to now is its own.
  if (rep.depth > 0)
    rep.phase[static_cast<size_t>(rep.open[static_cast<size_t>(rep.depth - 1)])] +=
        seconds(now - rep.mark);
  rep.open[static_cast<size_t>(rep.depth++)] = p;
  rep.mark = now;
}

void StepClock::end_phase(int r, StepPhase p, Clock::time_point now) {
  Rep& rep = reps_[static_cast<size_t>(r)];
  MR_CHECK(rep.depth > 0 && rep.open[static_cast<size_t>(rep.depth - 1)] == p, internal,
           "step phase ", static_cast<int>(p), " ended on replica ", r,
           " but it is not the innermost open phase");
  rep.phase[static_cast<size_t>(p)] += seconds(now - rep.mark);
  --rep.depth;
  rep.mark = now;  // the outer phase, if any, resumes
}

double StepClock::input_overlap(Clock::time_point a, Clock::time_point b) const {
  // The caller's input intervals never overlap one another (one thread).
  double s = 0.0;
  for (int k = 0; k < n_inputs_; ++k) {
    const Span& in = inputs_[static_cast<size_t>(k)];
    const auto lo = std::max(a, in.begin);
    const auto hi = std::min(b, in.end);
    if (hi > lo) s += seconds(hi - lo);
  }
  return s;
}

void StepClock::close_step(Clock::time_point now) {
  const double wall = seconds(now - step_begin_);
  for (size_t r = 0; r < reps_.size(); ++r) {
    Rep& rep = reps_[r];
    StepBreakdown& s = sums_[r];
    ++s.steps;
    s.wall += wall;
    double busy = 0.0, staged = 0.0, reduced = 0.0, idle_input = 0.0;
    if (rep.busy) {
      // The busy interval lies inside the step's (the caller posts after
      // opening the step and waits for the replicas before the next open);
      // clamped all the same so that the partition holds exactly.
      const auto b = std::clamp(rep.run.begin, step_begin_, now);
      const auto e = std::clamp(rep.run.end, b, now);
      busy = seconds(e - b);
      staged = std::min(rep.phase[static_cast<size_t>(StepPhase::input)], busy);
      reduced = std::min(rep.phase[static_cast<size_t>(StepPhase::allreduce)], busy - staged);
      idle_input = input_overlap(step_begin_, b) + input_overlap(e, now);
    } else {
      idle_input = input_overlap(step_begin_, now);
    }
    const double idle = wall - busy;
    idle_input = std::min(idle_input, idle);
    s.compute += busy - staged - reduced;
    s.allreduce += reduced;
    s.input += staged + idle_input;
    s.host += idle - idle_input;
    rep.busy = false;
  }
  n_inputs_ = 0;
}

}  // namespace mr
