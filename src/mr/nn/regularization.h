// Keras 3's weight regularizers, activity regularizers and weight
// constraints (keras/src/regularizers, keras/src/constraints): their configs,
// read and written as Keras serializes them, and what the step does with
// them.
//
// Semantics (Keras 3's trainer.compute_loss and optimizer.apply):
// - the total loss is the data loss (sum of per-sample losses / global rows)
//   plus every weight regularizer's penalty of the trainable weights plus
//   every activity regularizer's penalty of its layer's output divided by
//   the batch's rows. Weight penalties do not depend on the batch: their
//   gradient is added once, after the gradient all-reduce, by every replica
//   to its (identical) reduced gradient, so the update does not depend on the
//   replica count. Activity penalties are per sample: each replica adds its
//   slice's gradient (scaled by 1 / global rows) before the all-reduce.
// - the logged loss is Keras' loss tracker, a mean of batch totals weighted
//   by the batch's rows: the regularization sum gets penalty * rows for the
//   weight penalties (added by replica 0) and each slice's activity sum.
// - constraints are applied to their variables after every update.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/json.h"
#include "core/shape.h"
#include "nn/graph.h"

namespace mr {

// A regularizer config as Keras writes it ({"module": "keras.regularizers",
// "class_name": "L2", "config": {"l2": 0.01}, "registered_name": null}),
// from that form or a name Keras' regularizers.get() accepts ("l1", "l2",
// "orthogonal_regularizer", a class name); null stays null. Throws mr::Error
// (value) naming `who` for anything else.
Json keras_regularizer(const Json& v, const std::string& who);
// The same for constraints ("max_norm", "non_neg", "unit_norm",
// "min_max_norm", or the class names).
Json keras_constraint(const Json& v, const std::string& who);

struct RegularizerSpec {
  enum class Kind { none, l1_l2, orthogonal };
  Kind kind = Kind::none;
  float l1 = 0.0f, l2 = 0.0f;  // L1, L2, L1L2
  float factor = 0.0f;         // OrthogonalRegularizer
  bool rows = true;            // its mode: "rows" (true) or "columns"
};
// From a config keras_regularizer() returned.
RegularizerSpec regularizer_spec(const Json& keras);

struct ConstraintSpec {
  enum class Kind { none, norm, non_neg };
  Kind kind = Kind::none;
  float min_value = 0.0f, max_value = 0.0f, rate = 1.0f;
  // The weight viewed as outer x reduce x inner: the norm runs over `reduce`.
  int64_t outer = 1, reduce = 1, inner = 1;
};
// From a config keras_constraint() returned, for a weight of `shape`. The
// constraint's axes must be consecutive (Keras allows any; mirrored's op
// needs a box): other sets throw mr::Error (value) naming `who`.
ConstraintSpec constraint_spec(const Json& keras, const Shape& shape, const std::string& who);

// The weight regularizers and constraints of a graph on one replica, with
// the workspace orthogonal regularizers need (sized here, outside any step).
class Regularization {
 public:
  Regularization(const Graph& graph, Backend& be);

  // Adds every weight regularizer's gradient to `grads` (the all-reduced
  // gradient: every replica adds the same) and, when `acc` is not null,
  // penalty * loss_scale to *acc. Reads the weights before the update.
  void add_weight_penalties(const float* params, float* grads, double* acc, double loss_scale);
  // The penalty alone (evaluation).
  void weight_penalty(const float* params, double* acc, double loss_scale) {
    add_weight_penalties(params, nullptr, acc, loss_scale);
  }
  // Applies every constraint to its variable (after the update).
  void apply_constraints(float* params);
  // Keras regularizes and constrains trainable variables only: `trainable`
  // has one flag per Graph::params() index (empty: all trainable), set at
  // compile(); frozen variables are skipped from then on.
  void set_trainable(const std::vector<char>& trainable);

  bool empty() const { return regs_.empty() && cons_.empty(); }

 private:
  struct Reg {
    int64_t offset, rows, cols;  // a rank-2 view for orthogonal ones
    RegularizerSpec spec;
    int param;           // its index in Graph::params()
    bool active = true;  // false while the variable is frozen
  };
  struct Con {
    int64_t offset;
    ConstraintSpec spec;
    int param;
    bool active = true;
  };
  void orthogonal(const Reg& r, const float* w, float* grad, double* acc, double loss_scale);

  Backend& be_;
  std::vector<Reg> regs_;
  std::vector<Con> cons_;
  DeviceBuffer work_;
  float* t_ = nullptr;   // the transposed weight (columns mode)
  float* n_ = nullptr;   // the normalized rows
  float* p_ = nullptr;   // their products, then the product's gradient
  float* dn_ = nullptr;  // the gradient of the normalized rows
  float* dw_ = nullptr;  // the weight's gradient
};

// The activity regularizer of each node (RegularizerSpec::Kind::none where
// its layer has none), from Layer::activity_regularizer().
std::vector<RegularizerSpec> activity_specs(const Graph& graph);

}  // namespace mr
