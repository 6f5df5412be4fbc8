// A layer computes one node of the model graph on a replica's local batch.
// Shapes given to layers are per-sample (no batch dimension); every buffer is
// row-major with `rows` samples. Layers hold configuration only: parameters,
// gradients and activations live in the replica's flat buffers and are handed
// in as pointers, so one Layer object serves every replica concurrently (its
// methods are const).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/shape.h"
#include "nn/initializer.h"

namespace mr {

struct ParamSpec {
  std::string name;  // "kernel", "bias"
  Shape shape;
  Initializer init;
};

struct ForwardArgs {
  Backend& be;
  int64_t rows;        // local batch rows (may be 0)
  int64_t row_offset;  // global index of the first local row
  uint64_t step;       // global training step, keys dropout masks
  uint32_t stream;     // unique per node, keys its random numbers
  bool training;
  std::vector<const float*> in;
  std::vector<Shape> in_shapes;
  float* out;
  std::vector<float*> params;
  float* aux;  // aux_per_row() floats per row, kept from forward to backward
};

struct BackwardArgs {
  Backend& be;
  int64_t rows;
  bool training;
  std::vector<const float*> in;
  std::vector<Shape> in_shapes;
  const float* out;
  float* d_out;              // gradient of the output; the layer may overwrite it
  std::vector<float*> d_in;  // null where the input needs no gradient
  std::vector<const float*> params;
  std::vector<float*> grads;  // written (not accumulated)
  float* aux;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual const char* class_name() const = 0;
  // Checks the inputs and returns the per-sample output shape.
  virtual Shape output_shape(const std::vector<Shape>& in) const = 0;
  virtual std::vector<ParamSpec> params(const std::vector<Shape>& /*in*/) const { return {}; }
  virtual int64_t aux_per_row(const std::vector<Shape>& /*in*/) const { return 0; }
  virtual void forward(const ForwardArgs& a) const = 0;
  virtual void backward(const BackwardArgs& a) const = 0;
};

Activation activation_from_name(const std::string& name);
const char* activation_name(Activation act);

std::unique_ptr<Layer> make_input_layer(Shape shape);
std::unique_ptr<Layer> make_dense(int64_t units, Activation act, bool use_bias,
                                  Initializer kernel_init, Initializer bias_init);
std::unique_ptr<Layer> make_activation(Activation act);
std::unique_ptr<Layer> make_dropout(double rate, uint64_t seed);
std::unique_ptr<Layer> make_flatten();

}  // namespace mr
