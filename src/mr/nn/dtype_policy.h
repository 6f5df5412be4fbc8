// A layer's dtype policy (Keras 3's DTypePolicy), as its config carries it
// under "dtype": null, a policy name, or {"module": "keras", "class_name":
// "DTypePolicy", "config": {"name": ...}}. mirrored implements the policies
// whose variables are float32 (DESIGN §8):
//   "float32"         every op in f32;
//   "mixed_bfloat16"  matrix products (Dense) read bf16-rounded inputs and
//                     weights and accumulate in f32;
//   "mixed_float16"   likewise in f16 (use dynamic loss scaling:
//                     train/loss_scale.h).
// "bfloat16" / "float16" (variables in 16 bits) and quantized policies are
// refused with a value error naming the layer.
//
// How it differs from Keras: Keras stores a mixed layer's outputs in the
// compute dtype; mirrored keeps activations in f32 in the workspace and
// rounds them to the compute dtype where a product reads them (a cast into a
// buffer sized at reserve()). Element-wise layers, losses and every reduction
// run in f32, so a mixed model matches Keras in accuracy, not in bits.
#pragma once

#include <string>

#include "core/json.h"

namespace mr {

enum class ComputeDtype { f32, bf16, f16 };

struct DTypePolicy {
  std::string name = "float32";  // Keras' policy name
  ComputeDtype compute = ComputeDtype::f32;
  bool mixed() const { return compute != ComputeDtype::f32; }
};

// Parses a config's "dtype" value; `who` ("<Class> '<name>'") prefixes the
// error for a policy mirrored does not implement.
DTypePolicy parse_dtype_policy(const Json& dtype, const std::string& who);

// The "dtype" value Keras' get_config() writes for `p`.
Json dtype_policy_json(const DTypePolicy& p);

// "float32", "bfloat16", "float16".
const char* compute_dtype_name(ComputeDtype d);

}  // namespace mr
