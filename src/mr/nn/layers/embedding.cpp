// Embedding, as Keras 3's layer: each input value is an index into the
// input_dim x output_dim table `embeddings`, and the output appends an axis
// of output_dim: per-sample shape (d1, ..., dk) -> (d1, ..., dk, output_dim).
//
// Model inputs are float buffers, so indices arrive as floats: a value that
// is not an integer in 0..input_dim-1 is an error (value) naming it and its
// position, never an out-of-bounds read (core/backend.h, embedding_forward).
// The table's gradient is a scatter-add summed in index order on every
// backend (no float atomics), so replicas and runs are bit-identical.
// mask_zero = TRUE needs masking, which mirrored does not have yet: only
// FALSE is accepted. No workspace: backward reads the indices from the input.
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class Embedding final : public Layer {
 public:
  explicit Embedding(ConfigReader& r) : name_(r.name()), who_(r.who()) {
    input_dim_ = r.integer("input_dim", -1, 1);
    if (input_dim_ < 1) r.bad("input_dim", "a positive integer");
    MR_CHECK(input_dim_ < (int64_t{1} << 24), value, who_,
             ": input_dim must be below 2^24 (indices are stored as float32), got ", input_dim_);
    output_dim_ = r.integer("output_dim", -1, 1);
    if (output_dim_ < 1) r.bad("output_dim", "a positive integer");
    init_ = r.initializer("embeddings_initializer", "uniform", 0);
    opt_ = r.weight_options("embeddings");
    activity_ = r.activity_regularizer();
    r.must_equal("mask_zero", false);
    for (const char* k : {"lora_rank", "lora_alpha", "quantization_config", "weights"})
      r.must_be_null(k);
    r.take("input_length");  // Keras 3 drops it (deprecated, ignored)
  }
  const char* class_name() const override { return "Embedding"; }
  Json activity_regularizer() const override { return activity_; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    expect_inputs(who_, in, 1);
    std::vector<int64_t> d = in[0].dims();
    d.push_back(output_dim_);
    return Shape(d);
  }
  std::vector<WeightSpec> weights(const std::vector<Shape>& /*in*/) const override {
    return {{"embeddings", Shape{input_dim_, output_dim_}, init_, true, opt_}};
  }
  void forward(const ForwardArgs& a) const override {
    const int64_t n = a.rows * a.in_shapes[0].numel();
    try {
      a.be.embedding_forward(n, input_dim_, output_dim_, a.in[0], a.params[0], a.out);
    } catch (const Error& e) {
      // A synchronous backend throws here: name the layer (a GPU reports the
      // index at the step's next synchronization, without it).
      fail(e.kind(), who_, ": ", e.what());
    }
  }
  void backward(const BackwardArgs& a) const override {
    // Indices have no gradient: d_in (if asked for) is zero.
    const int64_t n = a.rows * a.in_shapes[0].numel();
    a.be.embedding_backward(n, input_dim_, output_dim_, a.in[0], a.d_out, a.grads[0]);
    if (a.d_in[0] != nullptr && n > 0) a.be.fill(n, a.d_in[0], 0.0f);
  }
  Json config() const override {
    Json c = base_config(name_);
    c["input_dim"] = input_dim_;
    c["output_dim"] = output_dim_;
    c["embeddings_initializer"] = initializer_to_keras(init_);
    c["embeddings_regularizer"] = opt_.regularizer;
    c["activity_regularizer"] = activity_;
    c["embeddings_constraint"] = opt_.constraint;
    c["mask_zero"] = false;
    c["quantization_config"] = nullptr;
    return c;
  }

 private:
  std::string name_, who_;
  int64_t input_dim_ = 0, output_dim_ = 0;
  Initializer init_;
  WeightOptions opt_;
  Json activity_;
};

}  // namespace

MR_REGISTER_LAYER(Embedding, Embedding)

}  // namespace mr
