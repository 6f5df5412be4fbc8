// Conv1D and Conv2D (Keras 3's BaseConv, channels_last): y = activation(
// conv(x, kernel) + bias), the kernel in Keras' (k_h, k_w, in/groups, filters)
// layout (Conv1D: (k, in/groups, filters)) so that .keras files carry it
// unchanged. conv1d.cpp and conv2d.cpp are this class at rank 1 and 2.
//
// aux per row: the convolution's columns (conv_columns_per_row), kept from
// forward to backward-filter, then the pre-activation when the activation
// needs it for backward.
#pragma once

#include "nn/layers/layer_util.h"
#include "nn/layers/spatial_config.h"

namespace mr {

class ConvLayer : public Layer {
 public:
  ConvLayer(ConfigReader& r, int rank) : rank_(rank), name_(r.name()), who_(r.who()) {
    filters_ = r.integer("filters", -1, 1);
    if (filters_ < 1) r.bad("filters", "a positive integer");
    const std::vector<int64_t> ones(static_cast<size_t>(rank), 1);
    kernel_size_ = read_tuple(r, "kernel_size", rank, {});
    if (kernel_size_.empty()) r.bad("kernel_size", "a positive integer or a list of them");
    strides_ = read_tuple(r, "strides", rank, ones);
    padding_ = read_padding(r);
    read_data_format(r);
    dilation_ = read_tuple(r, "dilation_rate", rank, ones);
    groups_ = r.integer("groups", 1, 1);
    if (filters_ % groups_ != 0)
      r.bad("groups", "a divisor of filters (" + std::to_string(filters_) + ")");
    if (*std::max_element(strides_.begin(), strides_.end()) > 1 &&
        *std::max_element(dilation_.begin(), dilation_.end()) > 1)
      r.bad("dilation_rate", "1 when strides > 1 (Keras does not support both)");
    act_ = r.activation("activation");
    use_bias_ = r.boolean("use_bias", true);
    kinit_ = r.initializer("kernel_initializer", "glorot_uniform", 0);
    binit_ = r.initializer("bias_initializer", "zeros", 1);
    kopt_ = r.weight_options("kernel");
    bopt_ = r.weight_options("bias");
    activity_ = r.activity_regularizer();
    for (const char* k : {"lora_rank", "lora_alpha"}) r.must_be_null(k);
  }
  Json activity_regularizer() const override { return activity_; }

  Shape output_shape(const std::vector<Shape>& in) const override {
    const ConvGeometry g = geometry(in);
    return rank_ == 2 ? Shape{g.out_h, g.out_w, filters_} : Shape{g.out_w, filters_};
  }
  std::vector<WeightSpec> weights(const std::vector<Shape>& in) const override {
    const ConvGeometry g = geometry(in);
    std::vector<int64_t> k = kernel_size_;
    k.push_back(g.in_c / groups_);
    k.push_back(filters_);
    std::vector<WeightSpec> w{{"kernel", Shape(k), kinit_, true, kopt_}};
    if (use_bias_) w.push_back({"bias", Shape{filters_}, binit_, true, bopt_});
    return w;
  }
  int64_t aux_per_row(const std::vector<Shape>& in) const override {
    const ConvGeometry g = geometry(in);
    return conv_columns_per_row(g) + pre_activation_floats(g);
  }

  void forward(const ForwardArgs& a) const override {
    const ConvGeometry g = geometry(a.in_shapes);
    if (a.rows == 0) return;
    float* col = a.aux;
    float* z = act_ == Activation::linear ? a.out : a.aux + conv_columns_per_row(g) * a.rows;
    a.be.conv_forward(g, a.rows, a.in[0], a.params[0], z, col);
    const int64_t m = a.rows * g.out_h * g.out_w;
    if (use_bias_) a.be.bias_add(m, filters_, a.params[1], z);
    if (act_ != Activation::linear) a.be.activation_forward(act_, m, filters_, z, a.out);
  }
  // z follows the im2col columns in aux (forward).
  Activation logits_activation() const override { return logits_activation_of(act_); }
  LogitsAt logits_at(const std::vector<Shape>& in) const override {
    return {false, conv_columns_per_row(geometry(in))};
  }
  void backward(const BackwardArgs& a) const override {
    const ConvGeometry g = geometry(a.in_shapes);
    const int64_t m = a.rows * g.out_h * g.out_w;
    float* col = a.aux;
    float* dz = a.d_out;
    if (a.rows > 0 && act_ != Activation::linear && !a.d_out_is_logits_grad)
      a.be.activation_backward(act_, m, filters_, a.aux + conv_columns_per_row(g) * a.rows, a.out,
                               a.d_out, dz);
    // rows == 0 writes zero gradients (a replica with an empty slice).
    a.be.conv_backward_filter(g, a.rows, a.in[0], dz, a.grads[0], col);
    if (use_bias_) {
      if (m == 0)
        a.be.fill(filters_, a.grads[1], 0.0f);
      else
        a.be.bias_grad(m, filters_, dz, a.grads[1], false);
    }
    if (a.d_in[0] != nullptr) a.be.conv_backward_data(g, a.rows, dz, a.params[0], a.d_in[0], col);
  }

  void prepare(Backend& be, const std::vector<Shape>& in, int64_t max_rows) const override {
    be.prepare_conv(geometry(in), max_rows);
  }

  Json config() const override {
    Json c = base_config(name_);
    c["filters"] = filters_;
    c["kernel_size"] = tuple_json(kernel_size_);
    c["strides"] = tuple_json(strides_);
    c["padding"] = padding_;
    c["data_format"] = "channels_last";
    c["dilation_rate"] = tuple_json(dilation_);
    c["groups"] = groups_;
    c["activation"] = activation_name(act_);
    c["use_bias"] = use_bias_;
    c["kernel_initializer"] = initializer_to_keras(kinit_);
    c["bias_initializer"] = initializer_to_keras(binit_);
    // Keras' order: the regularizers, activity_regularizer, the constraints.
    c["kernel_regularizer"] = kopt_.regularizer;
    c["bias_regularizer"] = bopt_.regularizer;
    c["activity_regularizer"] = activity_;
    c["kernel_constraint"] = kopt_.constraint;
    c["bias_constraint"] = bopt_.constraint;
    return c;
  }

 private:
  ConvGeometry geometry(const std::vector<Shape>& in) const {
    expect_inputs(who_, in, 1);
    ConvGeometry g;
    spatial_input(who_, in[0], rank_, &g);
    MR_CHECK(g.in_c % groups_ == 0, shape, who_, ": groups (", groups_,
             ") must divide the input's channels, got ", g.in_c, " channels");
    spatial_output(who_, rank_, kernel_size_, strides_, dilation_, padding_ == "same",
                   "kernel_size", &g);
    g.out_c = filters_;
    g.groups = groups_;
    return g;
  }
  int64_t pre_activation_floats(const ConvGeometry& g) const {
    return act_ == Activation::linear ? 0 : g.out_h * g.out_w * filters_;
  }

  int rank_;
  std::string name_, who_;
  int64_t filters_ = 0, groups_ = 1;
  std::vector<int64_t> kernel_size_, strides_, dilation_;
  std::string padding_;
  Activation act_ = Activation::linear;
  bool use_bias_ = true;
  Initializer kinit_, binit_;
  WeightOptions kopt_, bopt_;
  Json activity_;
};

}  // namespace mr
