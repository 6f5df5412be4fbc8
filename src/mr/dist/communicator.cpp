#include "dist/communicator.h"

#include <algorithm>

#include "core/device_info.h"
#include "dist/comm_threads.h"
#include "dist/device.h"

namespace mr {

namespace {
class SoloCommunicator final : public Communicator {
 public:
  int size() const override { return 1; }
  void all_reduce_sum(int, Backend&, float*, int64_t) override {}
  void broadcast(int, int, Backend&, float*, int64_t) override {}
  void barrier(int) override {}
  std::string name() const override { return comm_kind_name(CommKind::solo); }
};

// See make_staged_communicator(). Staging buffers are per rank, so ranks never
// share host memory except inside the thread collectives.
class StagedCommunicator final : public Communicator {
 public:
  StagedCommunicator(int size, double timeout)
      : host_(static_cast<size_t>(size)), inner_(size, timeout) {}
  int size() const override { return inner_.size(); }
  void all_reduce_sum(int rank, Backend& be, float* buf, int64_t n) override {
    std::vector<float>& h = stage(rank, be, buf, n);
    inner_.all_reduce_host(rank, h.data(), n);
    be.upload(buf, h.data(), static_cast<size_t>(n) * sizeof(float));
  }
  void broadcast(int rank, int root, Backend& be, float* buf, int64_t n) override {
    std::vector<float>& h = stage(rank, be, buf, n);
    inner_.broadcast_host(rank, root, h.data(), n);
    if (rank != root) be.upload(buf, h.data(), static_cast<size_t>(n) * sizeof(float));
  }
  void barrier(int rank) override { inner_.barrier(rank); }
  std::string name() const override { return comm_kind_name(CommKind::staged); }

 protected:
  void request_abort(const std::string& why) override { inner_.abort(why); }
  void finish_abort(bool) override { inner_.reset(); }

 private:
  std::vector<float>& stage(int rank, Backend& be, const float* buf, int64_t n) {
    std::vector<float>& h = host_.at(static_cast<size_t>(rank));
    h.resize(static_cast<size_t>(n));
    be.download(h.data(), buf, static_cast<size_t>(n) * sizeof(float));
    return h;
  }
  std::vector<std::vector<float>> host_;
  ThreadCommunicator inner_;
};

std::string nccl_unused(const std::string& why) {
  return "NCCL all-reduce is not used (" + why + "); gradients are reduced by peer copies";
}
}  // namespace

std::unique_ptr<Communicator> make_solo_communicator() {
  return std::make_unique<SoloCommunicator>();
}

std::unique_ptr<Communicator> make_staged_communicator(int size, double timeout_seconds) {
  return std::make_unique<StagedCommunicator>(size, timeout_seconds);
}

const char* comm_kind_name(CommKind kind) {
  switch (kind) {
    case CommKind::solo:
      return "none (one replica)";
    case CommKind::threads:
      return "thread all-reduce";
    case CommKind::staged:
      return "host-staged reduction";
    case CommKind::peer:
      return "peer-copy all-reduce";
    case CommKind::nccl:
      return "NCCL";
  }
  return "unknown";
}

CommPlan plan_communicator(const std::vector<DeviceSpec>& devices, const std::string& ops) {
  MR_CHECK(
      ops.empty() || ops == "nccl" || ops == "hierarchical_copy" || ops == "reduce_to_one_device",
      value, "unknown cross_device_ops '", ops,
      "' (expected nccl, hierarchical_copy or reduce_to_one_device)");
  const bool all_cpu = std::all_of(devices.begin(), devices.end(),
                                   [](const DeviceSpec& d) { return d.kind == DeviceKind::cpu; });
  const bool all_gpu = std::none_of(devices.begin(), devices.end(),
                                    [](const DeviceSpec& d) { return d.kind == DeviceKind::cpu; });
  if (ops == "nccl" && !all_gpu) {
    std::string names;
    for (const DeviceSpec& d : devices) names += (names.empty() ? "" : ", ") + d.display_name();
    fail(ErrorKind::value, "NCCL all-reduce needs GPU devices; these are ", names);
  }
  if (devices.size() <= 1) return {CommKind::solo, ""};
  MR_CHECK(all_cpu || all_gpu, value,
           "a strategy's replicas must all be CPUs or all be GPUs, not a mix");
  if (ops == "reduce_to_one_device") return {CommKind::staged, ""};
  if (all_cpu) return {CommKind::threads, ""};
  if (ops == "hierarchical_copy") return {CommKind::peer, ""};
  std::vector<int> ordinals;
  for (const DeviceSpec& d : devices) ordinals.push_back(d.cuda_ordinal());
  std::sort(ordinals.begin(), ordinals.end());
  if (std::adjacent_find(ordinals.begin(), ordinals.end()) != ordinals.end())
    return {CommKind::peer,
            nccl_unused("several replicas share one physical GPU, which NCCL cannot reduce "
                        "across")};
  if (!built_with_nccl())
    return {CommKind::peer,
            nccl_unused("this build of mirrored was compiled without NCCL (see NCCL_HOME)")};
  return {CommKind::nccl, ""};
}

std::unique_ptr<Communicator> make_communicator(const std::vector<DeviceSpec>& devices,
                                                double timeout_seconds, const std::string& ops,
                                                std::string* note) {
  CommPlan plan = plan_communicator(devices, ops);
  const int n = static_cast<int>(devices.size());
  std::vector<int> ordinals;
  for (const DeviceSpec& d : devices) ordinals.push_back(d.cuda_ordinal());
  std::unique_ptr<Communicator> comm;
  switch (plan.kind) {
    case CommKind::solo:
      comm = make_solo_communicator();
      break;
    case CommKind::threads:
      comm = std::make_unique<ThreadCommunicator>(n, timeout_seconds);
      break;
    case CommKind::staged:
      comm = make_staged_communicator(n, timeout_seconds);
      break;
    case CommKind::peer:
      comm = make_peer_communicator(ordinals, timeout_seconds);
      break;
    case CommKind::nccl:
      try {
        comm = make_nccl_communicator(ordinals, timeout_seconds);
      } catch (const Error& e) {
        plan.note = nccl_unused(e.what());
        comm = make_peer_communicator(ordinals, timeout_seconds);
      }
      break;
  }
  if (note != nullptr) *note = plan.note;
  return comm;
}

}  // namespace mr
