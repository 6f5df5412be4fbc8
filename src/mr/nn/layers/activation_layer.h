// The class behind the parametrised activation layers (ReLU, LeakyReLU, ELU,
// Softmax; their files read and write their Keras configs): an activation op
// with its parameters over the last axis, input and output of one shape.
#pragma once

#include <string>
#include <vector>

#include "nn/layers/layer_util.h"

namespace mr {

class ActivationOp {
 public:
  ActivationOp(std::string who, Activation act, ActivationParams p)
      : who_(std::move(who)), act_(act), p_(p) {}
  Shape output_shape(const std::vector<Shape>& in) const {
    expect_inputs(who_, in, 1);
    return in[0];
  }
  void forward(const ForwardArgs& a) const {
    const int64_t cols = a.in_shapes[0].last(), rows = a.rows * (a.in_shapes[0].numel() / cols);
    if (rows == 0) return;
    a.be.activation_forward(act_, rows, cols, a.in[0], a.out, p_);
  }
  void backward(const BackwardArgs& a) const {
    if (a.d_in[0] == nullptr) return;
    const int64_t cols = a.in_shapes[0].last(), rows = a.rows * (a.in_shapes[0].numel() / cols);
    if (rows == 0) return;
    if (a.d_out_is_logits_grad)  // the logits are the input (logits_activation())
      copy_floats(a.be, rows * cols, a.d_out, a.d_in[0]);
    else
      a.be.activation_backward(act_, rows, cols, a.in[0], a.out, a.d_out, a.d_in[0], p_);
  }
  // The parametrised forms (ActivationParams) are not the activations Keras
  // keeps logits for; a Softmax layer's is (over the last axis, its only one).
  Activation logits_activation() const { return logits_activation_of(act_); }

 private:
  std::string who_;
  Activation act_;
  ActivationParams p_;
};

}  // namespace mr
