// Gradient buckets (train/grad_buckets.h): the plan follows reverse layer
// order (a shared layer's variables with its first call, a dead node's with
// its own), DDP's default sizes, and on 1, 2 and 4 CPU replicas the weights
// after several Adam steps are bit-identical whether the gradients are
// all-reduced in one bucket per variable, in one bucket, or in one fused
// pass after backward with bucketing off (the pre-bucket path), with gradient
// accumulation, a frozen layer, a shared layer, a dead node and a short last
// batch that leaves a replica empty; every replica launches the same buckets
// in plan order on every applying step, each as soon as backward finished it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/graphs.h"
#include "train/grad_buckets.h"
#include "train/model.h"

namespace mr {
namespace {

Initializer normal(uint64_t seed, double sd) {
  Initializer i;
  i.kind = Initializer::Kind::random_normal;
  i.b = sd;
  i.seed = seed;
  return i;
}

constexpr int64_t kIn = 6, kOut = 4;

// 0 input -> 1 dense -> 3 shared -> 4 shared (second call) -> 5 dense (output);
// 2 is a dense on the input that nothing consumes (dead: zero gradients).
std::shared_ptr<const Graph> bucket_graph() {
  std::vector<GraphNode> nodes(6);
  nodes[0].name = "input_layer";
  nodes[0].layer = make_input_layer(Shape{kIn});
  nodes[1].name = "dense";
  nodes[1].layer = make_dense(16, Activation::relu, true, normal(1, 0.4), normal(2, 0.1));
  nodes[1].inputs = {0};
  nodes[2].name = "dead";
  nodes[2].layer = make_dense(3, Activation::linear, true, normal(3, 0.4), normal(4, 0.1));
  nodes[2].inputs = {0};
  nodes[3].name = "shared";
  nodes[3].layer = make_dense(16, Activation::tanh, true, normal(5, 0.3), normal(6, 0.1));
  nodes[3].inputs = {1};
  nodes[4].name = "shared";
  nodes[4].shares = 3;
  nodes[4].inputs = {3};
  nodes[5].name = "out";
  nodes[5].layer = make_dense(kOut, Activation::linear, true, normal(7, 0.4), normal(8, 0.1));
  nodes[5].inputs = {4};
  return std::make_shared<const Graph>(std::move(nodes), std::vector<int>{0}, std::vector<int>{5});
}

std::vector<DeviceSpec> cpus(int n) {
  std::vector<DeviceSpec> d;
  for (int i = 0; i < n; ++i) d.push_back(DeviceSpec{DeviceKind::cpu, i});
  return d;
}

struct Data {
  int64_t rows = 0;
  std::vector<float> x, y;
  HostBatch batch() {
    HostBatch b;
    b.rows = rows;
    b.parts = {{x.data(), kIn}, {y.data(), kOut}};
    return b;
  }
};

Data data(int64_t rows, int shift) {
  Data d;
  d.rows = rows;
  for (int64_t i = 0; i < rows * kIn; ++i)
    d.x.push_back(static_cast<float>(std::sin(1.3 * i + shift)));
  for (int64_t i = 0; i < rows * kOut; ++i)
    d.y.push_back(static_cast<float>(std::cos(0.7 * i - 2 * shift)));
  return d;
}

CompileConfig adam(int accumulate, std::vector<char> trainable) {
  CompileConfig c;
  c.optimizer.kind = OptimizerConfig::Kind::adam;
  c.optimizer.learning_rate = 0.01;
  c.optimizer.gradient_accumulation_steps = accumulate;
  c.loss.kind = LossKind::mean_squared_error;
  c.loss.name = "mse";
  c.trainable = std::move(trainable);
  return c;
}

// Every replica's weights after `steps` steps (the last batch has 3 rows,
// so 4 replicas leave one empty), checking the launch log of each applying
// step against the plan: ids 0..n-1 in order, each at its ready node.
// bytes_per_pack < 0: bucketing off (one fused all-reduce after backward).
std::vector<std::vector<float>> train(int replicas, int64_t bytes_per_pack, const CompileConfig& c,
                                      int steps, size_t* buckets) {
  Model m(bucket_graph(), cpus(replicas), 1);
  m.set_overlap(bytes_per_pack >= 0);
  m.set_bytes_per_pack(std::max<int64_t>(bytes_per_pack, 0));
  m.compile(c);
  const std::vector<GradBucket>& plan = m.grad_buckets().plan();
  *buckets = plan.size();
  std::vector<int> want_order, want_nodes;
  for (size_t b = 0; b < plan.size(); ++b) {
    want_order.push_back(static_cast<int>(b));
    want_nodes.push_back(plan[b].ready_node);
  }
  for (int s = 0; s < steps; ++s) {
    Data d = data(s + 1 == steps ? 3 : 10, s);
    m.train_step(d.batch());
    const bool applied = c.optimizer.gradient_accumulation_steps <= 1 ||
                         (s + 1) % c.optimizer.gradient_accumulation_steps == 0;
    if (!applied || replicas == 1 || bytes_per_pack < 0) continue;
    for (int r = 0; r < replicas; ++r) {
      EXPECT_EQ(m.grad_buckets().last_order(r), want_order) << "replica " << r << ", step " << s;
      EXPECT_EQ(m.grad_buckets().last_launch_nodes(r), want_nodes)
          << "replica " << r << ", step " << s;
    }
  }
  std::vector<std::vector<float>> out;
  for (int r = 0; r < replicas; ++r) out.push_back(m.get_params(r));
  return out;
}

TEST(GradBuckets, PlanIsReverseLayerOrderWithSharedAndDeadLayers) {
  auto g = bucket_graph();
  // Variables: dense 0, 1; dead 2, 3; shared 4, 5; out 6, 7 (kernel, bias).
  const auto all = trainable_ranges(*g, {});
  const std::vector<GradBucket> plan = plan_grad_buckets(*g, all, 4);  // one per variable
  ASSERT_EQ(plan.size(), 8u);
  const std::vector<int> want_params = {7, 6, 5, 4, 3, 2, 1, 0};
  const std::vector<int> want_ready = {5, 5, 3, 3, 2, 2, 1, 1};  // shared: its first call, 3
  for (size_t b = 0; b < plan.size(); ++b) {
    ASSERT_EQ(plan[b].params.size(), 1u);
    EXPECT_EQ(plan[b].params[0], want_params[b]) << "bucket " << b;
    EXPECT_EQ(plan[b].ready_node, want_ready[b]) << "bucket " << b;
    const Graph::Param& p = g->params()[static_cast<size_t>(want_params[b])];
    ASSERT_EQ(plan[b].ranges.size(), 1u);
    EXPECT_EQ(plan[b].ranges[0].offset, p.offset);
    EXPECT_EQ(plan[b].ranges[0].size, p.size);
    EXPECT_EQ(plan[b].floats, p.size);
  }
  // One bucket holding everything: exactly the trainable ranges, also with
  // a frozen layer in the middle (its variables are in no bucket).
  const std::vector<char> frozen_shared = {1, 1, 1, 1, 0, 0, 1, 1};
  for (const auto& flags : {std::vector<char>{}, frozen_shared}) {
    const auto ranges = trainable_ranges(*g, flags);
    const std::vector<GradBucket> one = plan_grad_buckets(*g, ranges, int64_t{1} << 40);
    ASSERT_EQ(one.size(), 1u);
    ASSERT_EQ(one[0].ranges.size(), ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
      EXPECT_EQ(one[0].ranges[i].offset, ranges[i].offset);
      EXPECT_EQ(one[0].ranges[i].size, ranges[i].size);
    }
    EXPECT_EQ(one[0].ready_node, 1);
    EXPECT_EQ(one[0].floats, range_floats(ranges));
  }
  EXPECT_THROW(plan_grad_buckets(*g, all, -1), Error);
}

TEST(GradBuckets, DefaultSizesAreDdpsSmallFirstBucketThenLargerOnes) {
  // 512 x 512 kernels: 1 MiB each. The first bucket closes at 1 MiB (the
  // last layer's bias and kernel), the second holds the rest (< 25 MiB).
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(make_input_layer(Shape{512}));
  for (int k = 0; k < 3; ++k)
    l.push_back(make_dense(512, Activation::relu, true, normal(10 + k, 0.1), Initializer{}));
  auto g = chain(std::move(l));
  const auto ranges = trainable_ranges(*g, {});
  const std::vector<GradBucket> plan = plan_grad_buckets(*g, ranges, 0);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].params, (std::vector<int>{5, 4}));
  EXPECT_EQ(plan[0].ready_node, 3);
  EXPECT_EQ(plan[1].params, (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(plan[1].ready_node, 1);
  ASSERT_EQ(plan[1].ranges.size(), 1u);  // neighbours: one all-reduce call
  EXPECT_EQ(plan[0].floats + plan[1].floats, range_floats(ranges));
  // An explicit size applies to every bucket: 1 MiB + 4 bytes closes a
  // bucket after two variables whatever their order.
  const std::vector<GradBucket> packed = plan_grad_buckets(*g, ranges, (int64_t{1} << 20) + 4);
  ASSERT_EQ(packed.size(), 3u);
  for (const GradBucket& b : packed) EXPECT_EQ(b.params.size(), 2u);
}

TEST(GradBuckets, BucketedWeightsAreBitIdenticalToOneFusedAllReduce) {
  struct Case {
    const char* what;
    CompileConfig c;
  };
  const std::vector<Case> cases = {
      {"all trainable", adam(0, {})},
      {"accumulation 2, first layer frozen", adam(2, {0, 0, 1, 1, 1, 1, 1, 1})},
      {"accumulation 3, shared layer frozen", adam(3, {1, 1, 1, 1, 0, 0, 1, 1})},
  };
  for (const Case& k : cases) {
    for (int replicas : {1, 2, 4}) {
      size_t n_small = 0, n_one = 0, n_off = 0;
      const auto small = train(replicas, 4, k.c, 6, &n_small);
      const auto one = train(replicas, int64_t{1} << 40, k.c, 6, &n_one);
      const auto fused = train(replicas, -1, k.c, 6, &n_off);
      if (replicas > 1) {
        EXPECT_GT(n_small, 4u) << k.what;
        EXPECT_EQ(n_one, 1u) << k.what;
      } else {
        EXPECT_EQ(n_small, 0u) << "one replica has nothing to reduce";
      }
      for (int r = 0; r < replicas; ++r) {
        EXPECT_EQ(small[static_cast<size_t>(r)], fused[static_cast<size_t>(r)])
            << k.what << ", " << replicas << " replicas, replica " << r;
        EXPECT_EQ(one[static_cast<size_t>(r)], fused[static_cast<size_t>(r)])
            << k.what << ", " << replicas << " replicas, replica " << r;
        EXPECT_EQ(small[static_cast<size_t>(r)], small[0]) << "replicas disagree";
      }
      // Training moved the weights (the comparison is not of two no-ops),
      // frozen variables excepted.
      Model fresh(bucket_graph(), cpus(1), 1);
      EXPECT_NE(small[0], fresh.get_params()) << k.what;
    }
  }
}

}  // namespace
}  // namespace mr
