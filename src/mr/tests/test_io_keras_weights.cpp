// The Keras 3 weights layout: a model's weights and optimizer state round
// trip through the HDF5 image, Keras' slot order, and hostile or mismatched
// files fail with io errors that name the file and the dataset.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/h5_file.h"
#include "io/keras_weights.h"
#include "tests/graphs.h"
#include "tests/test_util.h"
#include "train/model.h"
#include "train/model_weights.h"

namespace mr {
namespace {

Initializer normal(uint64_t seed) {
  Initializer i;
  i.kind = Initializer::Kind::random_normal;
  i.b = 0.5;
  i.seed = seed;
  return i;
}

std::shared_ptr<const Graph> mlp(int64_t in, int64_t hidden, int64_t out, uint64_t seed) {
  std::vector<GraphNode> nodes(3);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{in});
  nodes[1].name = "dense";
  nodes[1].layer = make_dense(hidden, Activation::relu, true, normal(seed), normal(seed + 1));
  nodes[1].inputs = {0};
  nodes[2].name = "dense_1";
  nodes[2].layer = make_dense(out, Activation::linear, true, normal(seed + 2), normal(seed + 3));
  nodes[2].inputs = {1};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{2});
}

CompileConfig config(OptimizerConfig::Kind kind, bool amsgrad = false) {
  CompileConfig c;
  c.optimizer.kind = kind;
  c.optimizer.learning_rate = 0.01;
  c.optimizer.amsgrad = amsgrad;
  c.optimizer.momentum = kind == OptimizerConfig::Kind::rmsprop ? 0.5 : 0.9;
  c.optimizer.centered = kind == OptimizerConfig::Kind::rmsprop;
  c.loss.kind = LossKind::sparse_categorical_crossentropy;
  c.loss.from_logits = true;
  return c;
}

KerasWeightsLayout layout() {
  KerasWeightsLayout l;
  l.model_name = "functional";
  l.layers = {{"layers/input_layer", "input_layer", -1},
              {"layers/dense", "dense", 1},
              {"layers/dense_1", "dense_1", 2}};
  l.optimizer_name = "adam";
  return l;
}

void train_steps(Model& m, int steps) {
  std::vector<float> x(8 * 3), y{0, 1, 2, 0, 1, 2, 0, 1};
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  HostBatch b;
  b.rows = 8;
  b.parts = {{x.data(), 3}, {y.data(), 1}};
  for (int s = 0; s < steps; ++s) m.train_step(b);
}

TEST(KerasWeights, SlotOrderFollowsKeras) {
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::adam;
  adam.amsgrad = true;
  const auto o = keras_slot_order(adam, 2);
  const std::vector<std::pair<int, int>> want{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 0}, {2, 1}};
  EXPECT_EQ(o, want);
  OptimizerConfig rms;
  rms.kind = OptimizerConfig::Kind::rmsprop;
  rms.momentum = 0.5;
  rms.centered = true;
  const std::vector<std::pair<int, int>> want_rms{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}};
  EXPECT_EQ(keras_slot_order(rms, 2), want_rms);
}

TEST(KerasWeights, RoundTripsWeightsSlotsAndIterations) {
  for (auto kind : {OptimizerConfig::Kind::adam, OptimizerConfig::Kind::sgd,
                    OptimizerConfig::Kind::rmsprop, OptimizerConfig::Kind::adamw}) {
    Model a(mlp(3, 5, 3, 1), {DeviceSpec{}}, 1);
    a.compile(config(kind, kind == OptimizerConfig::Kind::adam));
    train_steps(a, 3);
    const Bytes img =
        write_keras_weights(a, layout(), {{"mirrored_state", "{\"epoch\": 2}"}}, "a.weights.h5");
    Model b(mlp(3, 5, 3, 99), {DeviceSpec{}}, 1);
    b.compile(config(kind, kind == OptimizerConfig::Kind::adam));
    const KerasWeightsResult r = read_keras_weights(b, layout(), img, "a.weights.h5", true);
    EXPECT_EQ(r.optimizer, "loaded");
    EXPECT_EQ(b.iterations(), 3);
    EXPECT_FLOAT_EQ(static_cast<float>(r.learning_rate), 0.01f);
    EXPECT_EQ(a.get_params(), b.get_params());
    for (int k = 0; k < slot_count(a.config().optimizer); ++k)
      EXPECT_EQ(a.get_slot(k), b.get_slot(k));
    // Continuing gives identical models.
    train_steps(a, 2);
    train_steps(b, 2);
    EXPECT_EQ(a.get_params(), b.get_params());
    bool found = false;
    EXPECT_EQ(read_keras_root_attr(img, "a", "mirrored_state", &found), "{\"epoch\": 2}");
    EXPECT_TRUE(found);
  }
}

TEST(KerasWeights, LayoutMatchesKeras) {
  Model a(mlp(3, 5, 3, 1), {DeviceSpec{}}, 1);
  a.compile(config(OptimizerConfig::Kind::adam));
  const Bytes img = write_keras_weights(a, layout(), {}, "a");
  H5Reader r(img, "a");
  EXPECT_EQ(r.children("layers"), (std::vector<std::string>{"dense", "dense_1", "input_layer"}));
  EXPECT_TRUE(r.children("layers/input_layer/vars").empty());
  EXPECT_EQ(r.dims("layers/dense/vars/0"), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(r.dims("layers/dense/vars/1"), (std::vector<int64_t>{5}));
  EXPECT_EQ(r.dims("optimizer/vars/0"), std::vector<int64_t>{});
  EXPECT_EQ(r.children("optimizer/vars").size(), 2u + 2u * 4u);
  bool found = false;
  EXPECT_EQ(r.attr_string("layers/dense_1/vars", "name", &found), "dense_1");
  EXPECT_EQ(r.attr_string("optimizer/vars", "name", &found), "adam");
  EXPECT_EQ(r.attr_string("vars", "name", &found), "functional");
  EXPECT_TRUE(found);
  r.attr_string("vars", "nope", &found);
  EXPECT_FALSE(found);
}

TEST(KerasWeights, AnotherArchitectureIsRejectedAndTheModelUntouched) {
  Model a(mlp(3, 5, 3, 1), {DeviceSpec{}}, 1);
  const Bytes img = write_keras_weights(a, layout(), {}, "a.weights.h5");
  Model b(mlp(3, 6, 3, 2), {DeviceSpec{}}, 1);
  const auto before = b.get_params();
  const std::string msg =
      io_error([&] { read_keras_weights(b, layout(), img, "a.weights.h5", true); });
  EXPECT_NE(msg.find("a.weights.h5"), std::string::npos);
  EXPECT_NE(msg.find("layers/dense/vars/0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3, 5)"), std::string::npos) << msg;
  EXPECT_EQ(b.get_params(), before);
  KerasWeightsLayout fewer = layout();
  fewer.layers.pop_back();
  const std::string msg2 =
      io_error([&] { read_keras_weights(a, fewer, img, "a.weights.h5", true); });
  EXPECT_NE(msg2.find("layers/dense_1"), std::string::npos) << msg2;
}

// A raw HDF5 file with a dataset of absurd declared dimensions (never
// written, so the file itself is small).
Bytes absurd_file() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_core(fapl, 1 << 16, 0);
  hid_t f = H5Fcreate("absurd-test.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  hid_t g = H5Gcreate2(f, "layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(g);
  g = H5Gcreate2(f, "layers/dense", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(g);
  g = H5Gcreate2(f, "layers/dense/vars", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(g);
  hsize_t dims[2] = {hsize_t{1} << 31, hsize_t{1} << 31};
  hid_t s = H5Screate_simple(2, dims, nullptr);
  // Chunked with late allocation: the declared size costs no space.
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hsize_t chunk[2] = {64, 64};
  H5Pset_chunk(dcpl, 2, chunk);
  hid_t d = H5Dcreate2(f, "layers/dense/vars/0", H5T_IEEE_F32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  EXPECT_GE(d, 0);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(s);
  H5Fflush(f, H5F_SCOPE_GLOBAL);
  const ssize_t n = H5Fget_file_image(f, nullptr, 0);
  Bytes out(static_cast<size_t>(n));
  H5Fget_file_image(f, out.data(), out.size());
  H5Fclose(f);
  H5Pclose(fapl);
  return out;
}

TEST(KerasWeights, AbsurdDimensionsAreRejectedBeforeAllocating) {
  const Bytes img = absurd_file();
  H5Reader r(img, "absurd.h5");
  const std::string msg = io_error([&] { r.dims("layers/dense/vars/0"); });
  EXPECT_NE(msg.find("absurd dimensions"), std::string::npos) << msg;
  EXPECT_NE(msg.find("absurd.h5"), std::string::npos) << msg;
  Model m(mlp(3, 5, 3, 1), {DeviceSpec{}}, 1);
  KerasWeightsLayout l = layout();
  l.layers = {{"layers/dense", "dense", 1}};
  EXPECT_NE(io_error([&] { read_keras_weights(m, l, img, "absurd.h5", false); }).find("absurd"),
            std::string::npos);
}

TEST(KerasWeights, TruncatedAndGarbageFilesAreIoErrors) {
  Model a(mlp(3, 5, 3, 1), {DeviceSpec{}}, 1);
  const Bytes img = write_keras_weights(a, layout(), {}, "a");
  const Bytes cut(img.begin(), img.begin() + static_cast<long>(img.size() / 2));
  EXPECT_NE(io_error([&] { read_keras_weights(a, layout(), cut, "cut.h5", true); }).find("cut.h5"),
            std::string::npos);
  const Bytes junk(100, 'j');
  EXPECT_NE(io_error([&] { H5Reader r(junk, "junk.h5"); }).find("not an HDF5 file"),
            std::string::npos);
}

// A model nested in a model: its layers' groups nest under the model's group
// (layers/functional/layers/dense/vars/0), as Keras 3 writes them. They round
// trip, and an unexpected group holding variables is an error at any depth.
TEST(KerasWeights, NestedModelGroupsRoundTripAndAreCheckedAtEachLevel) {
  Model a(mlp(3, 5, 3, 1), {DeviceSpec{}}, 1);
  KerasWeightsLayout l;
  l.model_name = "outer";
  l.layers = {{"layers/input_layer", "x", -1},
              {"layers/functional", "inner", -1},
              {"layers/functional/layers/input_layer", "in_i", -1},
              {"layers/functional/layers/dense", "dense", 1},
              {"layers/functional/layers/dense_1", "dense_1", 2}};
  const Bytes img = write_keras_weights(a, l, {}, "nested");
  H5Reader r(img, "nested");
  EXPECT_TRUE(r.is_group("layers/functional/vars"));
  EXPECT_EQ(r.children("layers/functional/vars").size(), 0u);
  EXPECT_EQ(r.dims("layers/functional/layers/dense/vars/0"), (std::vector<int64_t>{3, 5}));
  Model b(mlp(3, 5, 3, 9), {DeviceSpec{}}, 1);
  read_keras_weights(b, l, img, "nested", false);
  EXPECT_EQ(a.get_params(0), b.get_params(0));

  // The same file read by a model whose nested model lacks dense_1: the
  // file's extra nested group has variables.
  KerasWeightsLayout fewer = l;
  fewer.layers.pop_back();
  const std::string msg =
      io_error([&] { read_keras_weights(b, fewer, img, "n.weights.h5", false); });
  EXPECT_NE(msg.find("layers/functional/layers/dense_1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("n.weights.h5"), std::string::npos) << msg;

  // A flat model reading the nested file: the nested model's group holds
  // variables (under layers/), so it is not skipped as an empty group.
  const std::string msg2 =
      io_error([&] { read_keras_weights(b, layout(), img, "flat.h5", false); });
  EXPECT_NE(msg2.find("layers/"), std::string::npos) << msg2;
}

// ---- i14-mpapi ----
// A LossScaleOptimizer's variables in Keras 3's layout: its own iteration and
// learning rate (both 0), step_counter and dynamic_scale, then the inner
// optimizer's, which Keras also reads from optimizer/inner_optimizer/vars.
TEST(KerasWeights, LossScaleOptimizerLayoutMatchesKerasAndRoundTrips) {
  CompileConfig c = config(OptimizerConfig::Kind::adam);
  c.loss_scale.dynamic = true;
  c.loss_scale.initial_scale = 1024;
  c.loss_scale.dynamic_growth_steps = 7;
  KerasWeightsLayout l = layout();
  l.optimizer_name = "loss_scale_optimizer";
  l.inner_optimizer_name = "adam";
  Model a(mlp(3, 5, 3, 1), {DeviceSpec{}}, 1);
  a.compile(c);
  a.set_loss_scale_state(256.0f, 3);
  const Bytes img = write_keras_weights(a, l, {}, "a");
  H5Reader r(img, "a");
  EXPECT_EQ(r.children("optimizer/vars").size(), 4u + 2u + 2u * 4u);
  EXPECT_EQ(r.read_scalar_i64("optimizer/vars/0"), 0);
  EXPECT_EQ(r.read_scalar("optimizer/vars/1"), 0.0);
  EXPECT_EQ(r.read_scalar_i64("optimizer/vars/2"), 3);
  EXPECT_EQ(r.read_scalar("optimizer/vars/3"), 256.0);
  EXPECT_EQ(r.read_scalar("optimizer/vars/5"), static_cast<double>(0.01f));
  EXPECT_EQ(r.children("optimizer/inner_optimizer/vars").size(), 2u + 2u * 4u);
  EXPECT_EQ(r.dims("optimizer/inner_optimizer/vars/2"), (std::vector<int64_t>{3, 5}));
  bool found = false;
  EXPECT_EQ(r.attr_string("optimizer/vars", "name", &found), "loss_scale_optimizer");
  EXPECT_EQ(r.attr_string("optimizer/inner_optimizer/vars", "name", &found), "adam");
  EXPECT_TRUE(found);

  Model b(mlp(3, 5, 3, 99), {DeviceSpec{}}, 1);
  b.compile(c);
  EXPECT_EQ(read_keras_weights(b, l, img, "a", true).optimizer, "loaded");
  EXPECT_EQ(b.loss_scale_state().scale, 256.0f);
  EXPECT_EQ(b.loss_scale_state().step_counter, 3);
  EXPECT_EQ(a.get_params(), b.get_params());
  for (int k = 0; k < slot_count(a.config().optimizer); ++k)
    EXPECT_EQ(a.get_slot(k), b.get_slot(k));

  // Without a loss scale optimizer the file's optimizer does not fit.
  Model p(mlp(3, 5, 3, 99), {DeviceSpec{}}, 1);
  p.compile(config(OptimizerConfig::Kind::adam));
  EXPECT_EQ(read_keras_weights(p, layout(), img, "a", true).optimizer, "mismatch");
  EXPECT_EQ(a.get_params(), p.get_params());
}

}  // namespace
}  // namespace mr
