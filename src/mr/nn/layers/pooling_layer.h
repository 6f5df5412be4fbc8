// MaxPooling1D/2D, AveragePooling1D/2D (Keras 3's BasePooling) and the global
// poolings (BaseGlobalPooling), channels_last. A global pooling is a pooling
// whose window is the whole input (one output position); keepdims only
// changes the output's shape, not its values. Each Keras class is one file
// (max_pooling2d.cpp, ...) that instantiates these at its rank and mode.
//
// Max pooling's backward recomputes the argmax from the input and the output
// (the first maximum in window order gets the gradient), so no aux is kept.
#pragma once

#include "nn/layers/layer_util.h"
#include "nn/layers/spatial_config.h"

namespace mr {

enum class PoolMode { max, average };

namespace pooling_detail {

inline void pool_forward(PoolMode mode, const ConvGeometry& g, const ForwardArgs& a) {
  if (a.rows == 0) return;
  if (mode == PoolMode::max)
    a.be.max_pool_forward(g, a.rows, a.in[0], a.out);
  else
    a.be.avg_pool_forward(g, a.rows, a.in[0], a.out);
}

inline void pool_backward(PoolMode mode, const ConvGeometry& g, const BackwardArgs& a) {
  if (a.rows == 0 || a.d_in[0] == nullptr) return;
  if (mode == PoolMode::max)
    a.be.max_pool_backward(g, a.rows, a.in[0], a.out, a.d_out, a.d_in[0]);
  else
    a.be.avg_pool_backward(g, a.rows, a.d_out, a.d_in[0]);
}

}  // namespace pooling_detail

class PoolingLayer : public Layer {
 public:
  PoolingLayer(ConfigReader& r, int rank, PoolMode mode)
      : rank_(rank), mode_(mode), name_(r.name()), who_(r.who()) {
    pool_size_ =
        read_tuple(r, "pool_size", rank, std::vector<int64_t>(static_cast<size_t>(rank), 2));
    strides_ = read_tuple(r, "strides", rank, pool_size_);  // null: the pool size
    padding_ = read_padding(r);
    read_data_format(r);
  }
  Shape output_shape(const std::vector<Shape>& in) const override {
    const ConvGeometry g = geometry(in);
    return rank_ == 2 ? Shape{g.out_h, g.out_w, g.in_c} : Shape{g.out_w, g.in_c};
  }
  void forward(const ForwardArgs& a) const override {
    pooling_detail::pool_forward(mode_, geometry(a.in_shapes), a);
  }
  void backward(const BackwardArgs& a) const override {
    pooling_detail::pool_backward(mode_, geometry(a.in_shapes), a);
  }
  Json config() const override {
    Json c = base_config(name_);
    c["pool_size"] = tuple_json(pool_size_);
    c["padding"] = padding_;
    c["strides"] = tuple_json(strides_);
    c["data_format"] = "channels_last";
    return c;
  }

 private:
  ConvGeometry geometry(const std::vector<Shape>& in) const {
    expect_inputs(who_, in, 1);
    ConvGeometry g;
    spatial_input(who_, in[0], rank_, &g);
    const std::vector<int64_t> ones(static_cast<size_t>(rank_), 1);
    spatial_output(who_, rank_, pool_size_, strides_, ones, padding_ == "same", "pool_size", &g);
    g.out_c = g.in_c;
    return g;
  }

  int rank_;
  PoolMode mode_;
  std::string name_, who_;
  std::vector<int64_t> pool_size_, strides_;
  std::string padding_;
};

class GlobalPoolingLayer : public Layer {
 public:
  GlobalPoolingLayer(ConfigReader& r, int rank, PoolMode mode)
      : rank_(rank), mode_(mode), name_(r.name()), who_(r.who()) {
    read_data_format(r);
    keepdims_ = r.boolean("keepdims", false);
  }
  Shape output_shape(const std::vector<Shape>& in) const override {
    const ConvGeometry g = geometry(in);
    if (!keepdims_) return Shape{g.in_c};
    return rank_ == 2 ? Shape{1, 1, g.in_c} : Shape{1, g.in_c};
  }
  void forward(const ForwardArgs& a) const override {
    pooling_detail::pool_forward(mode_, geometry(a.in_shapes), a);
  }
  void backward(const BackwardArgs& a) const override {
    pooling_detail::pool_backward(mode_, geometry(a.in_shapes), a);
  }
  Json config() const override {
    Json c = base_config(name_);
    c["data_format"] = "channels_last";
    c["keepdims"] = keepdims_;
    return c;
  }

 private:
  ConvGeometry geometry(const std::vector<Shape>& in) const {
    expect_inputs(who_, in, 1);
    ConvGeometry g;
    spatial_input(who_, in[0], rank_, &g);
    MR_CHECK(g.in_h >= 1 && g.in_w >= 1, shape, who_, " needs a non-empty input, got ",
             in[0].str_with_batch());
    g.k_h = g.in_h;
    g.k_w = g.in_w;
    g.out_c = g.in_c;
    return g;  // out 1x1, stride 1, no padding
  }

  int rank_;
  PoolMode mode_;
  std::string name_, who_;
  bool keepdims_ = false;
};

}  // namespace mr
