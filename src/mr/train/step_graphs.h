// CUDA graphs of the training step: which steps replay a captured graph
// instead of issuing their ops one by one.
//
// The captured region is the part of a training step that runs on the
// device with fixed addresses and shapes: forward, losses, backward, the
// all-reduce and the update (Step::post_train). What changes every step stays
// outside it: the per-step device block (StepScalars) and the batch are
// uploaded eagerly, on the same stream, before the launch, into the same
// device buffers every step, and every captured op reads them there.
//
// The policy, decided once per step on the posting thread so that every
// replica runs the same mode:
// - a step whose key (global batch rows, batch layout, per-batch loss
//   arguments, frozen flags, buffer generation) was never seen runs eagerly:
//   the warm-up, where lazy allocations (cuDNN plans, reduction scratch,
//   cuBLAS workspace) happen outside any capture;
// - the second step with the same key is captured, then launched;
// - later steps with the captured key replay the graph; any other key (the
//   last short batch of an epoch) runs eagerly and leaves the graph in place;
// - invalidate() (reserve growth, compile) forgets the key: new addresses
//   need a new capture; a failed capture disables graphs until then.
// Backends without graphs (CPU) are never eligible: their steps stay eager.
//
// Invariant: nothing allocates inside a step: the key is a fixed-size value
// plus the loss arguments, whose vector keeps its capacity across steps.
#pragma once

#include <cstdint>
#include <exception>
#include <vector>

#include "core/backend.h"

namespace mr {

struct StepGraphKey {
  int64_t global_rows = -1;
  size_t parts = 0;               // batch parts (which sample-weight form)
  const char* frozen = nullptr;   // the compile config's frozen flags
  const void* variant = nullptr;  // the graph of the batch's lengths (Step::select)
  std::vector<LossParams> loss;   // each output's per-batch loss arguments
};
bool same_key(const StepGraphKey& a, const StepGraphKey& b);

enum class StepMode { eager, capture, replay };

struct StepGraphStats {
  int64_t replays = 0;      // steps that launched an already captured graph
  int64_t captures = 0;     // steps captured (then launched once)
  int64_t eager_steps = 0;  // steps run op by op
  bool failed = false;      // a capture failed: graphs are off until invalidate()
};

class StepGraphs {
 public:
  explicit StepGraphs(int replicas);

  // options(mirrored.cuda_graphs): on by default.
  void set_enabled(bool on);
  bool enabled() const { return enabled_; }
  // What a captured graph recorded changed (buffer addresses, the compiled
  // configuration): the next steps warm up and capture again.
  void invalidate();

  // Posting thread, once per training step, after the previous step was
  // waited for: the mode of every replica. `eligible`: the backend can
  // capture and the step's host decisions do not vary (step.cpp).
  StepMode decide(const StepGraphKey& key, bool eligible);

  // Replica thread: runs `body` (the step's device work) in `mode` on `be`.
  // A capture that fails (or throws) runs `body` eagerly instead, since
  // nothing captured ran, and turns graphs off; the backend's graphs are
  // reset then, so that no partial capture stays behind. A replay whose
  // graph the backend lost (set_tf32, or a communicator's aborting reset,
  // reset it) runs eagerly and captures again later.
  template <class F>
  void run(int rank, Backend& be, StepMode mode, F&& body) {
    if (mode == StepMode::replay) {
      if (be.graph_launch(0)) return;
      lost_[static_cast<size_t>(rank)] = 1;
      body();
      return;
    }
    if (mode == StepMode::capture) {
      if (!be.graph_capture_begin()) {
        failed_[static_cast<size_t>(rank)] = 1;
        body();
        return;
      }
      bool threw = false;
      try {
        body();
      } catch (...) {
        threw = true;
      }
      // The capture must end whatever happened (the stream stays in capture
      // mode otherwise); a body that threw leaves a partial graph in the slot.
      const bool captured = be.graph_capture_end(0);
      if (captured && !threw && be.graph_launch(0)) return;
      be.graph_reset();
      failed_[static_cast<size_t>(rank)] = 1;
    }
    body();
  }

  // Sums since construction; read between steps.
  const StepGraphStats& stats() const { return stats_; }

 private:
  bool enabled_ = true;
  bool have_graph_ = false;
  bool have_warm_ = false;
  StepGraphKey warm_, captured_;
  StepGraphStats stats_;
  // Per replica, written by its thread during a step and read by decide()
  // after the step was waited for (ReplicaSet::wait orders them).
  std::vector<char> failed_, lost_;
};

}  // namespace mr
