#include "dist/communicator.h"

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
};
}  // namespace

std::unique_ptr<Communicator> make_solo_communicator() {
  return std::make_unique<SoloCommunicator>();
}

std::unique_ptr<Communicator> make_communicator(const std::vector<DeviceSpec>& devices,
                                                double timeout_seconds) {
  if (devices.size() <= 1) return make_solo_communicator();
  for (const DeviceSpec& d : devices)
    MR_CHECK(d.kind == DeviceKind::cpu, device, "replicas on ", d.name(),
             " need the CUDA communicator, which this build does not have yet");
  return std::make_unique<ThreadCommunicator>(static_cast<int>(devices.size()), timeout_seconds);
}

}  // namespace mr
