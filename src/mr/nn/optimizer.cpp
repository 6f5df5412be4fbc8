#include "nn/optimizer.h"

#include <cmath>

#include "core/error.h"

namespace mr {

OptimizerConfig::Kind optimizer_kind(const std::string& name) {
  if (name == "sgd" || name == "SGD") return OptimizerConfig::Kind::sgd;
  if (name == "adam" || name == "Adam") return OptimizerConfig::Kind::adam;
  if (name == "adamw" || name == "AdamW" || name == "adam_w") return OptimizerConfig::Kind::adamw;
  if (name == "rmsprop" || name == "RMSprop") return OptimizerConfig::Kind::rmsprop;
  fail(ErrorKind::value, "unknown optimizer '", name, "' (expected sgd, adam, adamw or rmsprop)");
}

const char* optimizer_class_name(OptimizerConfig::Kind kind) {
  switch (kind) {
    case OptimizerConfig::Kind::sgd:
      return "SGD";
    case OptimizerConfig::Kind::adam:
      return "Adam";
    case OptimizerConfig::Kind::adamw:
      return "AdamW";
    case OptimizerConfig::Kind::rmsprop:
      return "RMSprop";
  }
  return "Adam";
}

int slot_count(const OptimizerConfig& c) { return static_cast<int>(slot_names(c).size()); }

std::vector<std::string> slot_names(const OptimizerConfig& c) {
  switch (c.kind) {
    case OptimizerConfig::Kind::sgd:
      return c.momentum != 0.0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{};
    case OptimizerConfig::Kind::adam:
    case OptimizerConfig::Kind::adamw:
      return c.amsgrad ? std::vector<std::string>{"momentum", "velocity", "velocity_hat"}
                       : std::vector<std::string>{"momentum", "velocity"};
    case OptimizerConfig::Kind::rmsprop: {
      std::vector<std::string> s{"velocity"};
      if (c.momentum > 0.0) s.push_back("momentum");
      if (c.centered) s.push_back("average_gradient");
      return s;
    }
  }
  return {};
}

void validate(const OptimizerConfig& c) {
  MR_CHECK(std::isfinite(c.learning_rate) && c.learning_rate >= 0, value,
           "learning_rate must be a finite number >= 0, got ", c.learning_rate);
  MR_CHECK(c.weight_decay >= 0, value, "weight_decay must be >= 0, got ", c.weight_decay);
  MR_CHECK(c.epsilon >= 0, value, "epsilon must be >= 0, got ", c.epsilon);
  MR_CHECK(c.beta_1 >= 0 && c.beta_1 < 1, value, "beta_1 must be in [0, 1), got ", c.beta_1);
  MR_CHECK(c.beta_2 >= 0 && c.beta_2 < 1, value, "beta_2 must be in [0, 1), got ", c.beta_2);
  MR_CHECK(c.momentum >= 0 && c.momentum <= 1, value, "momentum must be in [0, 1], got ",
           c.momentum);
  MR_CHECK(c.rho >= 0 && c.rho <= 1, value, "rho must be in [0, 1], got ", c.rho);
}

StepScalars step_scalars(const OptimizerConfig& c, int64_t iteration) {
  StepScalars s;
  s.lr = static_cast<float>(c.learning_rate);
  s.wd_lr = static_cast<float>(c.weight_decay * c.learning_rate);
  s.step = static_cast<uint64_t>(iteration);
  // Keras folds both Adam bias corrections into the step size, in float32
  // arithmetic on the (iteration + 1)-th step.
  const double t = static_cast<double>(iteration + 1);
  const float b1p = static_cast<float>(std::pow(static_cast<float>(c.beta_1), t));
  const float b2p = static_cast<float>(std::pow(static_cast<float>(c.beta_2), t));
  s.alpha = s.lr * std::sqrt(1.0f - b2p) / (1.0f - b1p);
  return s;
}

void apply_update(Backend& be, const OptimizerConfig& c, const StepScalars* s, int64_t n,
                  float* params, const float* grads, const std::vector<float*>& slots) {
  switch (c.kind) {
    case OptimizerConfig::Kind::sgd:
      be.sgd_update(n, params, grads, slots.empty() ? nullptr : slots[0], s,
                    static_cast<float>(c.momentum), c.nesterov);
      return;
    case OptimizerConfig::Kind::adam:
    case OptimizerConfig::Kind::adamw:
      be.adam_update(n, params, grads, slots[0], slots[1], c.amsgrad ? slots[2] : nullptr, s,
                     static_cast<float>(c.beta_1), static_cast<float>(c.beta_2),
                     static_cast<float>(c.epsilon));
      return;
    case OptimizerConfig::Kind::rmsprop: {
      size_t k = 1;
      float* mom = c.momentum > 0.0 ? slots[k++] : nullptr;
      float* avg = c.centered ? slots[k++] : nullptr;
      be.rmsprop_update(n, params, grads, slots[0], avg, mom, s, static_cast<float>(c.rho),
                        static_cast<float>(c.momentum), static_cast<float>(c.epsilon));
      return;
    }
  }
}

void apply_update(Backend& be, const OptimizerConfig& c, int64_t iteration, int64_t n,
                  float* params, const float* grads, const std::vector<float*>& slots) {
  apply_update(be, c, be.stage_scalars(step_scalars(c, iteration)), n, params, grads, slots);
}

}  // namespace mr
