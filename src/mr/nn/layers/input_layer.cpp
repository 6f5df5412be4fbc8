// InputLayer: the model's entry point. The step writes the batch into the
// node's buffer directly, so forward and backward do nothing.
#include "nn/layers/layer_util.h"

namespace mr {

namespace {

class InputLayer final : public Layer {
 public:
  explicit InputLayer(ConfigReader& r) : name_(r.name()) {
    const Json& cfg = r.raw();
    const char* key = cfg.contains("batch_shape") ? "batch_shape" : "batch_input_shape";
    const Json* bs = r.take(key);
    if (bs == nullptr || !bs->is_array() || bs->size() < 2)
      r.bad(key, "a batch shape [null, d1, ...] of rank >= 2");
    // null: a variable-length axis (-1 here; nn/graph.h binds it per batch).
    std::vector<int64_t> dims;
    for (size_t i = 1; i < bs->size(); ++i) {
      const Json& d = (*bs)[i];
      if (d.is_null()) {
        dims.push_back(-1);
        continue;
      }
      if (!d.is_number_integer() || d.get<int64_t>() < 1)
        r.bad(key, "positive dimensions (or null) after the batch dimension");
      dims.push_back(d.get<int64_t>());
    }
    shape_ = Shape(dims);
    // The input's dtype, as Keras: floats, or integers and booleans (ids for
    // Embedding and lookups). Batches arrive as float32 either way; integer
    // inputs hold whole numbers, exact in float32 up to 2^24 (the R side
    // checks the values it is given).
    if (const Json* d = r.take("dtype"); d != nullptr && !d->is_null()) {
      if (!d->is_string() || !is_input_dtype(d->get<std::string>()))
        r.bad("dtype", "\"float32\", \"int32\", \"int64\" or \"bool\"");
      dtype_ = d->get<std::string>();
    }
    r.must_equal("sparse", false);
    r.must_equal("ragged", false);
    r.must_equal("optional", false);
  }
  const char* class_name() const override { return "InputLayer"; }
  Shape output_shape(const std::vector<Shape>& in) const override {
    MR_CHECK(in.empty(), shape, "InputLayer '", name_, "' has no inputs");
    return shape_;
  }
  void forward(const ForwardArgs&) const override {}
  void backward(const BackwardArgs&) const override {}
  Json config() const override {
    Json bs = Json::array({nullptr});
    for (int64_t d : shape_.dims()) {
      if (d < 0)
        bs.push_back(nullptr);
      else
        bs.push_back(d);
    }
    return Json{{"batch_shape", bs}, {"dtype", dtype_}, {"sparse", false},
                {"ragged", false},   {"name", name_},   {"optional", false}};
  }

 private:
  static bool is_input_dtype(const std::string& d) {
    return d == "float32" || d == "int32" || d == "int64" || d == "bool";
  }
  std::string name_;
  Shape shape_;
  std::string dtype_ = "float32";
};

}  // namespace

MR_REGISTER_LAYER(InputLayer, InputLayer)

}  // namespace mr
