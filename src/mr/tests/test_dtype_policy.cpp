// Layers' dtype policies (nn/dtype_policy.h): the forms Keras 3 writes, the
// policies mirrored refuses, and the policy written back by layer_config()
// exactly as Keras' get_config() writes it.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/json.h"
#include "nn/dtype_policy.h"
#include "nn/layers/registry.h"

namespace mr {
namespace {

Json dense_config(const Json& dtype) {
  Json c{{"name", "d"}, {"units", 3}};
  if (!dtype.is_null()) c["dtype"] = dtype;
  return c;
}

Json keras_policy(const std::string& name) {
  return Json{{"module", "keras"},
              {"class_name", "DTypePolicy"},
              {"config", {{"name", name}}},
              {"registered_name", nullptr}};
}

TEST(DTypePolicy, ParsesEveryFormKerasWrites) {
  EXPECT_EQ(parse_dtype_policy(Json(nullptr), "x").compute, ComputeDtype::f32);
  EXPECT_EQ(parse_dtype_policy(Json("float32"), "x").compute, ComputeDtype::f32);
  EXPECT_EQ(parse_dtype_policy(Json("mixed_bfloat16"), "x").compute, ComputeDtype::bf16);
  EXPECT_EQ(parse_dtype_policy(Json("mixed_float16"), "x").compute, ComputeDtype::f16);
  const DTypePolicy p = parse_dtype_policy(keras_policy("mixed_bfloat16"), "x");
  EXPECT_EQ(p.name, "mixed_bfloat16");
  EXPECT_TRUE(p.mixed());
  EXPECT_FALSE(parse_dtype_policy(keras_policy("float32"), "x").mixed());
}

TEST(DTypePolicy, RefusesPoliciesWithSixteenBitVariables) {
  for (const char* name : {"bfloat16", "float16", "int8_from_float32", "float64"}) {
    try {
      parse_dtype_policy(keras_policy(name), "Dense 'd'");
      FAIL() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::value);
      const std::string msg = e.what();
      EXPECT_NE(msg.find("Dense 'd'"), std::string::npos) << msg;
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(parse_dtype_policy(Json(3), "x"), Error);
  EXPECT_THROW(make_layer("Dense", dense_config(Json("bfloat16")), 1), Error);
}

TEST(DTypePolicy, LayerKeepsItsPolicyAndWritesItBack) {
  for (const char* name : {"float32", "mixed_bfloat16", "mixed_float16"}) {
    const auto layer = make_layer("Dense", dense_config(keras_policy(name)), 1);
    EXPECT_EQ(layer->dtype_policy().name, name);
    const Json c = layer_config(*layer);
    EXPECT_EQ(c["dtype"], keras_policy(name)) << c.dump();
    // Keras' key order: name, trainable, dtype, then the layer's own.
    auto it = c.begin();
    EXPECT_EQ(it.key(), "name");
    ++it;
    EXPECT_EQ(it.key(), "trainable");
    ++it;
    EXPECT_EQ(it.key(), "dtype");
  }
  // A plain name is written back in Keras' DTypePolicy form.
  const auto s = make_layer("Dense", dense_config(Json("mixed_float16")), 1);
  EXPECT_EQ(layer_config(*s)["dtype"], keras_policy("mixed_float16"));
  // No "dtype": float32.
  const auto d = make_layer("Dense", dense_config(Json(nullptr)), 1);
  EXPECT_EQ(layer_config(*d)["dtype"], keras_policy("float32"));
}

TEST(DTypePolicy, InputLayerKeepsItsTensorDtype) {
  const Json in{{"name", "x"}, {"batch_shape", Json::array({nullptr, 4})}, {"dtype", "float32"}};
  const auto layer = make_layer("InputLayer", in, 1);
  EXPECT_EQ(layer_config(*layer)["dtype"], "float32");
}

}  // namespace
}  // namespace mr
