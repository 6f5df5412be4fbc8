// InputLayer, Dense, Activation, Dropout and Flatten.
#include <cstring>

#include "core/error.h"
#include "nn/layer.h"

namespace mr {

namespace {

void copy_rows(Backend& be, int64_t count, const float* src, float* dst) {
  if (count > 0 && src != dst) be.copy(dst, src, static_cast<size_t>(count) * sizeof(float));
}

void expect_one_input(const char* who, const std::vector<Shape>& in) {
  MR_CHECK(in.size() == 1, shape, who, " takes exactly one input, got ", in.size());
}

class InputLayer final : public Layer {
 public:
  explicit InputLayer(Shape shape) : shape_(std::move(shape)) {}
  const char* class_name() const override { return "InputLayer"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    MR_CHECK(in.empty(), internal, "InputLayer has no inputs");
    return shape_;
  }
  // The graph writes the batch into the input node's buffer directly.
  void forward(const ForwardArgs&) const override {}
  void backward(const BackwardArgs&) const override {}

 private:
  Shape shape_;
};

// y = act(x W + b) over the last axis; inputs of rank > 1 are treated as rows
// of their last dimension, as Keras' Dense does.
class Dense final : public Layer {
 public:
  Dense(int64_t units, Activation act, bool use_bias, Initializer k, Initializer b)
      : units_(units), act_(act), use_bias_(use_bias), kinit_(k), binit_(b) {
    MR_CHECK(units > 0, value, "Dense units must be positive, got ", units);
  }
  const char* class_name() const override { return "Dense"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_one_input("Dense", in);
    MR_CHECK(in[0].rank() >= 1, shape, "Dense needs an input of rank >= 1 per sample, got ",
             in[0].str());
    std::vector<int64_t> d = in[0].dims();
    d.back() = units_;
    return Shape(d);
  }
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override {
    std::vector<ParamSpec> p{{"kernel", Shape{in[0].last(), units_}, kinit_}};
    if (use_bias_) p.push_back({"bias", Shape{units_}, binit_});
    return p;
  }
  // The pre-activation z is kept when the activation needs it for backward.
  int64_t aux_per_row(const std::vector<Shape>& in) const override {
    return act_ == Activation::linear ? 0 : in[0].numel() / in[0].last() * units_;
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t k = a.in_shapes[0].last();
    const int64_t m = a.rows * (a.in_shapes[0].numel() / k);
    if (m == 0) return;
    float* z = act_ == Activation::linear ? a.out : a.aux;
    a.be.gemm(false, false, m, units_, k, 1.0f, a.in[0], k, a.params[0], units_, 0.0f, z, units_);
    if (use_bias_) a.be.bias_add(m, units_, a.params[1], z);
    if (act_ != Activation::linear) a.be.activation_forward(act_, m, units_, z, a.out);
  }
  void backward(const BackwardArgs& a) const override {
    const int64_t k = a.in_shapes[0].last();
    const int64_t m = a.rows * (a.in_shapes[0].numel() / k);
    if (m == 0) {
      // A replica with no rows contributes zero gradients to the all-reduce.
      a.be.fill(k * units_, a.grads[0], 0.0f);
      if (use_bias_) a.be.fill(units_, a.grads[1], 0.0f);
      return;
    }
    float* dz = a.d_out;
    if (act_ != Activation::linear)
      a.be.activation_backward(act_, m, units_, a.aux, a.out, a.d_out, dz);
    a.be.gemm(true, false, k, units_, m, 1.0f, a.in[0], k, dz, units_, 0.0f, a.grads[0], units_);
    if (use_bias_) a.be.bias_grad(m, units_, dz, a.grads[1], false);
    if (a.d_in[0] != nullptr)
      a.be.gemm(false, true, m, k, units_, 1.0f, dz, units_, a.params[0], units_, 0.0f, a.d_in[0],
                k);
  }

 private:
  int64_t units_;
  Activation act_;
  bool use_bias_;
  Initializer kinit_, binit_;
};

class ActivationLayer final : public Layer {
 public:
  explicit ActivationLayer(Activation act) : act_(act) {}
  const char* class_name() const override { return "Activation"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_one_input("Activation", in);
    return in[0];
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t cols = a.in_shapes[0].last(), rows = a.rows * (a.in_shapes[0].numel() / cols);
    if (rows == 0) return;
    if (act_ == Activation::linear)
      copy_rows(a.be, rows * cols, a.in[0], a.out);
    else
      a.be.activation_forward(act_, rows, cols, a.in[0], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] == nullptr) return;
    const int64_t cols = a.in_shapes[0].last(), rows = a.rows * (a.in_shapes[0].numel() / cols);
    if (rows == 0) return;
    if (act_ == Activation::linear)
      copy_rows(a.be, rows * cols, a.d_out, a.d_in[0]);
    else
      a.be.activation_backward(act_, rows, cols, a.in[0], a.out, a.d_out, a.d_in[0]);
  }

 private:
  Activation act_;
};

// Inverted dropout: kept units are scaled by 1 / (1 - rate) while training,
// identity at inference. The mask of global row r depends only on (seed, step,
// node, r), so any split of the batch over replicas draws the same mask.
class Dropout final : public Layer {
 public:
  Dropout(double rate, uint64_t seed) : rate_(static_cast<float>(rate)), seed_(seed) {
    MR_CHECK(rate >= 0.0 && rate < 1.0, value, "Dropout rate must be in [0, 1), got ", rate);
  }
  const char* class_name() const override { return "Dropout"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_one_input("Dropout", in);
    return in[0];
  }
  int64_t aux_per_row(const std::vector<Shape>& in) const override { return in[0].numel(); }
  void forward(const ForwardArgs& a) const override {
    const int64_t cols = a.in_shapes[0].numel();
    if (a.rows == 0) return;
    if (!a.training || rate_ == 0.0f) {
      copy_rows(a.be, a.rows * cols, a.in[0], a.out);
      return;
    }
    a.be.dropout_forward(a.rows, cols, rate_, seed_, a.step, a.stream, a.row_offset, a.in[0], a.aux,
                         a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] == nullptr || a.rows == 0) return;
    const int64_t n = a.rows * a.in_shapes[0].numel();
    if (!a.training || rate_ == 0.0f)
      copy_rows(a.be, n, a.d_out, a.d_in[0]);
    else
      a.be.multiply(n, a.d_out, a.aux, a.d_in[0]);
  }

 private:
  float rate_;
  uint64_t seed_;
};

// Row-major flattening does not move data: each sample's values already lie
// contiguously, so forward and backward are plain copies.
class Flatten final : public Layer {
 public:
  const char* class_name() const override { return "Flatten"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_one_input("Flatten", in);
    return Shape{in[0].numel()};
  }
  void forward(const ForwardArgs& a) const override {
    copy_rows(a.be, a.rows * a.in_shapes[0].numel(), a.in[0], a.out);
  }
  void backward(const BackwardArgs& a) const override {
    if (a.d_in[0] != nullptr) copy_rows(a.be, a.rows * a.in_shapes[0].numel(), a.d_out, a.d_in[0]);
  }
};

}  // namespace

Activation activation_from_name(const std::string& name) {
  if (name == "linear" || name.empty()) return Activation::linear;
  if (name == "relu") return Activation::relu;
  if (name == "sigmoid") return Activation::sigmoid;
  if (name == "tanh") return Activation::tanh;
  if (name == "softmax") return Activation::softmax;
  if (name == "gelu") return Activation::gelu;
  fail(ErrorKind::value, "unknown activation '", name,
       "' (expected relu, sigmoid, tanh, softmax, gelu or linear)");
}

const char* activation_name(Activation act) {
  switch (act) {
    case Activation::linear:
      return "linear";
    case Activation::relu:
      return "relu";
    case Activation::sigmoid:
      return "sigmoid";
    case Activation::tanh:
      return "tanh";
    case Activation::softmax:
      return "softmax";
    case Activation::gelu:
      return "gelu";
  }
  return "linear";
}

std::unique_ptr<Layer> make_input_layer(Shape shape) {
  return std::make_unique<InputLayer>(std::move(shape));
}
std::unique_ptr<Layer> make_dense(int64_t units, Activation act, bool use_bias, Initializer k,
                                  Initializer b) {
  return std::make_unique<Dense>(units, act, use_bias, k, b);
}
std::unique_ptr<Layer> make_activation(Activation act) {
  return std::make_unique<ActivationLayer>(act);
}
std::unique_ptr<Layer> make_dropout(double rate, uint64_t seed) {
  return std::make_unique<Dropout>(rate, seed);
}
std::unique_ptr<Layer> make_flatten() { return std::make_unique<Flatten>(); }

}  // namespace mr
