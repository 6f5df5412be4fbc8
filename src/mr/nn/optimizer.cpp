#include "nn/optimizer.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace mr {

OptimizerConfig::Kind optimizer_kind(const std::string& name) {
  if (name == "sgd" || name == "SGD") return OptimizerConfig::Kind::sgd;
  if (name == "adam" || name == "Adam") return OptimizerConfig::Kind::adam;
  if (name == "adamw" || name == "AdamW" || name == "adam_w") return OptimizerConfig::Kind::adamw;
  if (name == "rmsprop" || name == "RMSprop") return OptimizerConfig::Kind::rmsprop;
  if (name == "adagrad" || name == "Adagrad") return OptimizerConfig::Kind::adagrad;
  if (name == "adadelta" || name == "Adadelta") return OptimizerConfig::Kind::adadelta;
  if (name == "adamax" || name == "Adamax") return OptimizerConfig::Kind::adamax;
  if (name == "nadam" || name == "Nadam") return OptimizerConfig::Kind::nadam;
  if (name == "ftrl" || name == "Ftrl") return OptimizerConfig::Kind::ftrl;
  if (name == "lion" || name == "Lion") return OptimizerConfig::Kind::lion;
  if (name == "lamb" || name == "Lamb") return OptimizerConfig::Kind::lamb;
  fail(ErrorKind::value, "unknown optimizer '", name,
       "' (expected sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, ftrl, lion or "
       "lamb)");
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
    case OptimizerConfig::Kind::adagrad:
      return "Adagrad";
    case OptimizerConfig::Kind::adadelta:
      return "Adadelta";
    case OptimizerConfig::Kind::adamax:
      return "Adamax";
    case OptimizerConfig::Kind::nadam:
      return "Nadam";
    case OptimizerConfig::Kind::ftrl:
      return "Ftrl";
    case OptimizerConfig::Kind::lion:
      return "Lion";
    case OptimizerConfig::Kind::lamb:
      return "Lamb";
  }
  return "Adam";
}

int slot_count(const OptimizerConfig& c) { return static_cast<int>(slot_names(c).size()); }

namespace {
std::vector<std::string> rule_slot_names(const OptimizerConfig& c) {
  using K = OptimizerConfig::Kind;
  switch (c.kind) {
    case K::adagrad:
      return {"accumulator"};
    case K::adadelta:
      return {"accumulated_grad", "accumulated_delta_var"};
    case K::adamax:
      return {"momentum", "norm"};
    case K::nadam:
    case K::lamb:
      return {"momentum", "velocity"};
    case K::ftrl:
      return {"accumulator", "linear"};
    case K::lion:
      return {"momentum"};
    default:
      break;
  }
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
    default:
      break;
  }
  return {};
}
}  // namespace

int rule_slot_count(const OptimizerConfig& c) {
  return static_cast<int>(rule_slot_names(c).size());
}

std::vector<std::string> slot_names(const OptimizerConfig& c) {
  std::vector<std::string> s = rule_slot_names(c);
  if (c.use_ema) s.push_back("average");
  if (c.gradient_accumulation_steps > 0) s.push_back("gradient_accumulator");
  return s;
}

float slot_initial_value(const OptimizerConfig& c, int k) {
  const bool accum =
      (c.kind == OptimizerConfig::Kind::adagrad || c.kind == OptimizerConfig::Kind::ftrl) && k == 0;
  return accum ? static_cast<float>(c.initial_accumulator_value) : 0.0f;
}

double current_learning_rate(const OptimizerConfig& c, int64_t iteration) {
  if (c.schedule.kind == LrSchedule::Kind::constant) return c.learning_rate;
  return lr_schedule_value(c.schedule, iteration);
}

int64_t keras_iterations(const OptimizerConfig& c, int64_t iteration) {
  return c.gradient_accumulation_steps > 0 ? iteration / c.gradient_accumulation_steps : iteration;
}

bool applies_update(const OptimizerConfig& c, int64_t iteration) {
  return c.gradient_accumulation_steps <= 0 || (iteration + 1) % c.gradient_accumulation_steps == 0;
}

float nadam_u_product(const OptimizerConfig& c, int64_t iteration) {
  // Keras multiplies u_product by beta_1 * (1 - 0.5 * 0.96^t) on each applied
  // update t = iterations + 1, in float32. Past t = 1000, 0.5 * 0.96^t is
  // below half an ulp of 1, so the factor is beta_1 exactly; the loop is one
  // multiply per update and stops when the product underflows to 0.
  const float b1 = static_cast<float>(c.beta_1);
  float u = 1.0f;
  for (int64_t i = 0; i <= iteration && u != 0.0f; ++i) {
    if (!applies_update(c, i)) continue;
    const int64_t k = keras_iterations(c, i);  // Keras' optimizer.iterations
    const float t = static_cast<float>(k + 1);
    u = k < 1000 ? u * b1 * (1.0f - 0.5f * std::pow(0.96f, t)) : u * b1;
  }
  return u;
}

UpdateHyper update_hyper(const OptimizerConfig& c) {
  UpdateHyper h;
  h.beta_1 = static_cast<float>(c.beta_1);
  h.beta_2 = static_cast<float>(c.beta_2);
  h.epsilon = static_cast<float>(c.epsilon);
  h.rho = static_cast<float>(c.rho_adadelta);
  h.lr_power = static_cast<float>(c.learning_rate_power);
  h.l1 = static_cast<float>(c.l1);
  h.l2 = static_cast<float>(c.l2);
  h.l2_shrinkage = static_cast<float>(c.l2_shrinkage);
  h.beta = static_cast<float>(c.beta);
  return h;
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
  MR_CHECK(c.rho_adadelta >= 0 && c.rho_adadelta <= 1, value, "rho must be in [0, 1], got ",
           c.rho_adadelta);
  MR_CHECK(c.initial_accumulator_value >= 0, value, "initial_accumulator_value must be >= 0, got ",
           c.initial_accumulator_value);
  MR_CHECK(c.learning_rate_power <= 0, value, "learning_rate_power must be <= 0, got ",
           c.learning_rate_power);
  MR_CHECK(c.l1 >= 0 && c.l2 >= 0 && c.l2_shrinkage >= 0 && c.beta >= 0, value,
           "the Ftrl regularization strengths and beta must be >= 0");
  const int clips = (c.clipnorm > 0) + (c.clipvalue > 0) + (c.global_clipnorm > 0);
  MR_CHECK(clips <= 1, value, "only one of clipnorm, clipvalue and global_clipnorm can be set");
  MR_CHECK(c.clipnorm >= 0 && c.clipvalue >= 0 && c.global_clipnorm >= 0, value,
           "clipnorm, clipvalue and global_clipnorm must be > 0");
  MR_CHECK(c.ema_momentum >= 0 && c.ema_momentum <= 1, value,
           "ema_momentum must be in [0, 1], got ", c.ema_momentum);
  MR_CHECK(c.ema_overwrite_frequency >= 0, value, "ema_overwrite_frequency must be >= 1, got ",
           c.ema_overwrite_frequency);
  MR_CHECK(c.gradient_accumulation_steps == 0 || c.gradient_accumulation_steps >= 2, value,
           "gradient_accumulation_steps must be an integer >= 2, got ",
           c.gradient_accumulation_steps);
  validate(c.schedule);
}

StepScalars step_scalars(const OptimizerConfig& c, int64_t iteration) {
  StepScalars s;
  const double lr = current_learning_rate(c, iteration);
  s.lr = static_cast<float>(lr);
  // Keras: variable - variable * wd * lr, with wd and lr cast to float32.
  s.wd_lr = static_cast<float>(c.weight_decay) * s.lr;
  s.step = static_cast<uint64_t>(iteration);
  // Keras folds both Adam bias corrections into the step size, in float32
  // arithmetic on the (iterations + 1)-th step, where Keras' iterations
  // counts applied updates under gradient accumulation (the schedule above
  // reads the raw count of steps).
  const int64_t it = keras_iterations(c, iteration);
  const double t = static_cast<double>(it + 1);
  const float b1p = static_cast<float>(std::pow(static_cast<float>(c.beta_1), t));
  const float b2p = static_cast<float>(std::pow(static_cast<float>(c.beta_2), t));
  s.alpha = s.lr * std::sqrt(1.0f - b2p) / (1.0f - b1p);
  // EMA: Keras' momentum is 0 while optimizer.iterations == 0.
  s.ema_momentum = it == 0 ? 0.0f : static_cast<float>(c.ema_momentum);
  switch (c.kind) {
    case OptimizerConfig::Kind::adamax:
      s.opt[0] = 1.0f - b1p;
      break;
    case OptimizerConfig::Kind::lamb:
      s.opt[0] = 1.0f - b1p;
      s.opt[1] = 1.0f - b2p;
      break;
    case OptimizerConfig::Kind::nadam: {
      const float b1 = static_cast<float>(c.beta_1);
      const float t = static_cast<float>(it + 1);
      const float u_t = b1 * (1.0f - 0.5f * std::pow(0.96f, t));
      const float u_t1 = b1 * (1.0f - 0.5f * std::pow(0.96f, t + 1.0f));
      const float up = nadam_u_product(c, iteration);
      s.opt[0] = u_t;
      s.opt[1] = u_t1;
      s.opt[2] = up;
      s.opt[3] = up * u_t1;
      s.opt[4] = 1.0f - b2p;
      break;
    }
    default:
      break;
  }
  return s;
}

namespace {
UpdateRule rule_of(OptimizerConfig::Kind k) {
  switch (k) {
    case OptimizerConfig::Kind::adagrad:
      return UpdateRule::adagrad;
    case OptimizerConfig::Kind::adadelta:
      return UpdateRule::adadelta;
    case OptimizerConfig::Kind::adamax:
      return UpdateRule::adamax;
    case OptimizerConfig::Kind::nadam:
      return UpdateRule::nadam;
    case OptimizerConfig::Kind::ftrl:
      return UpdateRule::ftrl;
    default:
      return UpdateRule::lion;
  }
}
}  // namespace

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
    case OptimizerConfig::Kind::lamb:
      fail(ErrorKind::internal, "Lamb updates per variable (train/update.cpp)");
    default: {
      const int k = rule_slot_count(c);
      be.optimizer_update(rule_of(c.kind), n, params, grads, slots[0], k > 1 ? slots[1] : nullptr,
                          s, update_hyper(c));
      return;
    }
  }
}

void apply_update(Backend& be, const OptimizerConfig& c, int64_t iteration, int64_t n,
                  float* params, const float* grads, const std::vector<float*>& slots) {
  apply_update(be, c, be.stage_scalars(step_scalars(c, iteration)), n, params, grads, slots);
}

}  // namespace mr
