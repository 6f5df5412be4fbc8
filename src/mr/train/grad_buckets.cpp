#include "train/grad_buckets.h"

#include <algorithm>

#include "core/error.h"

namespace mr {

std::vector<GradBucket> plan_grad_buckets(const Graph& g, const std::vector<ParamRange>& trainable,
                                          int64_t bytes_per_pack) {
  MR_CHECK(bytes_per_pack >= 0, value, "bytes_per_pack must be >= 0 (0: automatic), got ",
           bytes_per_pack);
  const auto& params = g.params();
  // The trainable variables, in the order backward finishes them: owner
  // node descending; a node's own variables last-offset first (reverse of
  // the layer's order, as DDP's reverse parameter order).
  std::vector<int> order;
  for (size_t k = 0; k < params.size(); ++k) {
    const Graph::Param& p = params[k];
    if (p.size <= 0) continue;
    const bool inside = std::any_of(trainable.begin(), trainable.end(), [&](const ParamRange& r) {
      return p.offset >= r.offset && p.offset + p.size <= r.offset + r.size;
    });
    if (inside) order.push_back(static_cast<int>(k));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Graph::Param& pa = params[static_cast<size_t>(a)];
    const Graph::Param& pb = params[static_cast<size_t>(b)];
    const int na = g.owner(pa.node), nb = g.owner(pb.node);
    if (na != nb) return na > nb;
    return pa.offset > pb.offset;
  });

  std::vector<GradBucket> plan;
  int64_t bytes = 0;
  for (int k : order) {
    if (plan.empty() || bytes >= (plan.size() == 1 && bytes_per_pack == 0 ? kFirstBucketBytes
                                  : bytes_per_pack == 0                   ? kBucketBytes
                                                                          : bytes_per_pack)) {
      plan.emplace_back();
      bytes = 0;
    }
    GradBucket& b = plan.back();
    b.params.push_back(k);
    bytes += params[static_cast<size_t>(k)].size * static_cast<int64_t>(sizeof(float));
  }
  // Ranges: variables of consecutive indices are neighbours in the flat
  // buffer (Graph lays them out in index order, each at the aligned end of
  // the one before), so one range covers them and the zero padding between
  // (as trainable_ranges() does).
  for (GradBucket& b : plan) {
    std::vector<int> idx = b.params;
    std::sort(idx.begin(), idx.end());
    int prev = -2;
    b.ready_node = g.size();
    for (int k : idx) {
      const Graph::Param& p = params[static_cast<size_t>(k)];
      if (k == prev + 1)
        b.ranges.back().size = p.offset + p.size - b.ranges.back().offset;
      else
        b.ranges.push_back({p.offset, p.size});
      prev = k;
      b.ready_node = std::min(b.ready_node, g.owner(p.node));
    }
    b.floats = range_floats(b.ranges);
  }
  return plan;
}

// Replica `rank`'s listener: forwards the executor's progress.
class GradBuckets::Listener final : public GradReadyListener {
 public:
  Listener(GradBuckets* owner, int rank) : owner_(owner), rank_(rank) {}
  void nodes_done(int node) override { owner_->nodes_done(rank_, node); }

 private:
  GradBuckets* owner_;
  int rank_;
};

struct GradBuckets::Replica {
  std::unique_ptr<Listener> listener;
  bool armed = false;
  size_t next = 0;  // the next bucket to launch
  float* grads = nullptr;
  float* acc = nullptr;  // gradient accumulator on this step, or null
  float steps = 1.0f;
  // The last armed step's launches (capacity = the plan's size, set by
  // prepare(), so that recording never allocates).
  std::vector<int> order, nodes;
};

GradBuckets::GradBuckets(const Graph& graph, ReplicaSet& replicas)
    : graph_(graph), replicas_(replicas) {
  for (int r = 0; r < replicas.size(); ++r) {
    auto rep = std::make_unique<Replica>();
    rep->listener = std::make_unique<Listener>(this, r);
    reps_.push_back(std::move(rep));
  }
}

GradBuckets::~GradBuckets() = default;

void GradBuckets::prepare(const std::vector<ParamRange>& trainable, int64_t bytes_per_pack) {
  plan_ = replicas_.global_size() > 1 ? plan_grad_buckets(graph_, trainable, bytes_per_pack)
                                      : std::vector<GradBucket>{};
  for (auto& rep : reps_) {
    rep->armed = false;
    rep->order.clear();
    rep->nodes.clear();
    rep->order.reserve(plan_.size());
    rep->nodes.reserve(plan_.size());
  }
}

GradReadyListener* GradBuckets::arm(int rank, float* grads, float* acc, float steps) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  rep.armed = false;
  if (plan_.empty()) return nullptr;
  rep.armed = true;
  rep.next = 0;
  rep.grads = grads;
  rep.acc = acc;
  rep.steps = steps;
  rep.order.clear();
  rep.nodes.clear();
  return rep.listener.get();
}

void GradBuckets::nodes_done(int rank, int node) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  // Bucket b is ready once its lowest owner node is done; ready nodes are
  // non-increasing along the plan, so launching in plan order loses nothing.
  while (rep.next < plan_.size() && plan_[rep.next].ready_node >= node)
    launch(rank, rep.next++, node);
}

void GradBuckets::disarm(int rank) { reps_[static_cast<size_t>(rank)]->armed = false; }

bool GradBuckets::armed(int rank) const { return reps_[static_cast<size_t>(rank)]->armed; }

void GradBuckets::finish(int rank) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  MR_CHECK(rep.armed, internal, "gradient buckets of replica ", rank, " finished without arm()");
  while (rep.next < plan_.size()) launch(rank, rep.next++, 0);
  rep.armed = false;
  ScopedPhase wait(clock_, rank, StepPhase::allreduce);
  replicas_.comm().join(rank, replicas_.backend(rank));
}

void GradBuckets::launch(int rank, size_t b, int node) {
  Replica& rep = *reps_[static_cast<size_t>(rank)];
  Backend& be = replicas_.backend(rank);
  const GradBucket& bucket = plan_[b];
  // Keras' order on an applying step of gradient accumulation: the mean
  // (g + acc) / n, the accumulator zeroed, then the all-reduce.
  if (rep.acc != nullptr)
    for (const ParamRange& r : bucket.ranges)
      be.accumulate_apply(r.size, rep.grads + r.offset, rep.acc + r.offset, rep.steps);
  {
    ScopedPhase wait(clock_, rank, StepPhase::allreduce);
    for (const ParamRange& r : bucket.ranges)
      replicas_.comm().all_reduce_sum_async(rank, be, rep.grads + r.offset, r.size);
  }
  rep.order.push_back(static_cast<int>(b));
  rep.nodes.push_back(node);
}

std::vector<int> GradBuckets::last_order(int rank) const {
  return reps_.at(static_cast<size_t>(rank))->order;
}

std::vector<int> GradBuckets::last_launch_nodes(int rank) const {
  return reps_.at(static_cast<size_t>(rank))->nodes;
}

}  // namespace mr
