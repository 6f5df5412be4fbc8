// BatchNormalization over the last axis (channels_last), as Keras 3's layer:
// y = gamma * (x - mean) / sqrt(var + epsilon) + beta with the batch's
// (biased) statistics while training, the moving statistics at inference;
// moving = moving * momentum + batch_stat * (1 - momentum) after each
// training forward.
//
// Across replicas (the one place where the replica count changes the
// numbers, as in TensorFlow):
// - synchronized = TRUE: the statistics are those of the global batch (two
//   all-reduces in forward: the mean, then the squared deviations from it;
//   two in backward), so any replica count computes what one device computes;
// - synchronized = FALSE (Keras' default): each replica normalizes with its
//   own slice's statistics; the moving statistics are updated with the
//   replicas' statistics averaged weighted by their rows (a replica with 0
//   rows contributes nothing), so every replica keeps identical weights.
// Every replica enters every collective, also with 0 rows (ReplicaContext).
//
// Workspace (work_floats): mean, var, sum_dy, sum_dy_xhat, tmp (C each).
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class BatchNormalization final : public Layer {
 public:
  explicit BatchNormalization(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    axis_ = r.integer("axis", -1, -1000000);
    momentum_ = r.number("momentum", 0.99);
    if (!(momentum_ >= 0.0 && momentum_ <= 1.0)) r.bad("momentum", "a number in [0, 1]");
    epsilon_ = r.number("epsilon", 1e-3);
    if (!(epsilon_ > 0.0)) r.bad("epsilon", "a positive number");
    center_ = r.boolean("center", true);
    scale_ = r.boolean("scale", true);
    beta_init_ = r.initializer("beta_initializer", "zeros", 0);
    gamma_init_ = r.initializer("gamma_initializer", "ones", 1);
    mean_init_ = r.initializer("moving_mean_initializer", "zeros", 2);
    var_init_ = r.initializer("moving_variance_initializer", "ones", 3);
    beta_opt_ = r.weight_options("beta");
    gamma_opt_ = r.weight_options("gamma");
    synchronized_ = r.boolean("synchronized", false);
    r.must_equal("renorm", false);
    r.must_be_null("renorm_clipping");
    renorm_momentum_ = r.number("renorm_momentum", 0.99);  // read by renorm only
  }
  const char* class_name() const override { return "BatchNormalization"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    const int64_t rank = in[0].rank() + 1;  // with the batch axis
    MR_CHECK(in[0].rank() >= 1 && (axis_ == -1 || axis_ == rank - 1), shape, who_,
             " normalizes the last axis of an input of rank >= 1 per sample (axis = -1); got axis ",
             axis_, " for input ", in[0].str_with_batch());
    return in[0];
  }
  std::vector<WeightSpec> weights(const std::vector<Shape>& in) const override {
    const Shape c{in[0].last()};
    std::vector<WeightSpec> w;
    if (scale_) w.push_back({"gamma", c, gamma_init_, true, gamma_opt_});
    if (center_) w.push_back({"beta", c, beta_init_, true, beta_opt_});
    w.push_back({"moving_mean", c, mean_init_, false});
    w.push_back({"moving_variance", c, var_init_, false});
    return w;
  }
  int64_t work_floats(const std::vector<Shape>& in) const override { return 5 * in[0].last(); }
  bool frozen_runs_inference() const override { return true; }

  void forward(const ForwardArgs& a) const override {
    const int64_t c = a.in_shapes[0].last();
    const int64_t per_sample = a.in_shapes[0].numel() / c;
    const int64_t n = a.rows * per_sample;
    const float* gamma = scale_ ? a.params[0] : nullptr;
    const float* beta = center_ ? a.params[scale_ ? 1 : 0] : nullptr;
    float* moving_mean = a.state[0];
    float* moving_var = a.state[1];
    const auto eps = static_cast<float>(epsilon_);
    if (!a.training) {
      if (n > 0)
        a.be.batch_norm_forward(n, c, a.in[0], moving_mean, moving_var, gamma, beta, eps, a.out);
      return;
    }
    float* mean = a.work;
    float* var = a.work + c;
    float* tmp = a.work + 4 * c;
    const double global_n = static_cast<double>(a.global_rows * per_sample);
    if (synchronized_) {
      const auto inv = static_cast<float>(1.0 / global_n);
      a.be.column_moments(n, c, a.in[0], nullptr, inv, mean);
      a.ctx.all_reduce_sum(mean, c);
      a.be.column_moments(n, c, a.in[0], mean, inv, var);
      a.ctx.all_reduce_sum(var, c);
      update_moving(a.be, c, mean, moving_mean, tmp);
      update_moving(a.be, c, var, moving_var, tmp);
    } else {
      const auto inv = n > 0 ? static_cast<float>(1.0 / static_cast<double>(n)) : 0.0f;
      a.be.column_moments(n, c, a.in[0], nullptr, inv, mean);
      a.be.column_moments(n, c, a.in[0], mean, inv, var);
      // The row-weighted mean over replicas of each statistic, into tmp.
      const auto weight = static_cast<float>(static_cast<double>(n) / global_n);
      for (int k = 0; k < 2; ++k) {
        const float* stat = k == 0 ? mean : var;
        float* moving = k == 0 ? moving_mean : moving_var;
        if (a.ctx.replicas() == 1) {
          update_moving(a.be, c, stat, moving, tmp);
          continue;
        }
        float* avg = a.work + 2 * c;  // sum_dy's slot is free until backward
        a.be.fill(c, avg, 0.0f);
        a.be.axpy(c, weight, stat, avg);
        a.ctx.all_reduce_sum(avg, c);
        update_moving(a.be, c, avg, moving, tmp);
      }
    }
    if (n > 0) a.be.batch_norm_forward(n, c, a.in[0], mean, var, gamma, beta, eps, a.out);
  }

  void backward(const BackwardArgs& a) const override {
    const int64_t c = a.in_shapes[0].last();
    const int64_t per_sample = a.in_shapes[0].numel() / c;
    const int64_t n = a.rows * per_sample;
    const float* gamma = scale_ ? a.params[0] : nullptr;
    float* dgamma = scale_ ? a.grads[0] : nullptr;
    float* dbeta = center_ ? a.grads[scale_ ? 1 : 0] : nullptr;
    const auto eps = static_cast<float>(epsilon_);
    const float* mean = a.training ? a.work : a.state[0];
    const float* var = a.training ? a.work + c : a.state[1];
    float* sum_dy = a.work + 2 * c;
    float* sum_dy_xhat = a.work + 3 * c;
    // Local sums: they are this replica's gradients of beta and gamma (the
    // step's all-reduce sums them over replicas).
    a.be.batch_norm_backward_reduce(n, c, a.d_out, a.in[0], mean, var, eps, sum_dy, sum_dy_xhat);
    if (dgamma != nullptr) a.be.copy(dgamma, sum_dy_xhat, static_cast<size_t>(c) * sizeof(float));
    if (dbeta != nullptr) a.be.copy(dbeta, sum_dy, static_cast<size_t>(c) * sizeof(float));
    float inv_n = 0.0f;  // inference statistics are constants: no mean terms
    if (a.training && synchronized_) {
      a.ctx.all_reduce_sum(sum_dy, c);
      a.ctx.all_reduce_sum(sum_dy_xhat, c);
      inv_n = static_cast<float>(1.0 / static_cast<double>(a.global_rows * per_sample));
    } else if (a.training && n > 0) {
      inv_n = static_cast<float>(1.0 / static_cast<double>(n));
    }
    if (a.d_in[0] != nullptr && n > 0)
      a.be.batch_norm_backward(n, c, a.d_out, a.in[0], mean, var, gamma, eps, sum_dy, sum_dy_xhat,
                               inv_n, a.d_in[0]);
  }

  Json config() const override {
    Json c = base_config(name_);
    c["axis"] = axis_;
    c["momentum"] = momentum_;
    c["epsilon"] = epsilon_;
    c["center"] = center_;
    c["scale"] = scale_;
    c["beta_initializer"] = initializer_to_keras(beta_init_);
    c["gamma_initializer"] = initializer_to_keras(gamma_init_);
    c["moving_mean_initializer"] = initializer_to_keras(mean_init_);
    c["moving_variance_initializer"] = initializer_to_keras(var_init_);
    write_weight_options(c, {{"beta", &beta_opt_}, {"gamma", &gamma_opt_}});
    c["synchronized"] = synchronized_;
    c["renorm"] = false;
    c["renorm_clipping"] = nullptr;
    c["renorm_momentum"] = renorm_momentum_;
    return c;
  }

 private:
  // moving += (1 - momentum) * (stat - moving), i.e. Keras'
  // moving * momentum + stat * (1 - momentum); tmp holds c floats.
  void update_moving(Backend& be, int64_t c, const float* stat, float* moving, float* tmp) const {
    be.copy(tmp, stat, static_cast<size_t>(c) * sizeof(float));
    be.axpy(c, -1.0f, moving, tmp);
    be.axpy(c, static_cast<float>(1.0 - momentum_), tmp, moving);
  }

  std::string name_, who_;
  int64_t axis_ = -1;
  double momentum_ = 0.99, epsilon_ = 1e-3, renorm_momentum_ = 0.99;
  bool center_ = true, scale_ = true, synchronized_ = false;
  Initializer beta_init_, gamma_init_, mean_init_, var_init_;
  WeightOptions beta_opt_, gamma_opt_;
};

}  // namespace

MR_REGISTER_LAYER(BatchNormalization, BatchNormalization)

}  // namespace mr
