// Model's i14-monitor members: opening a monitored epoch and reading its
// report (train/device_report.h).
#include "core/device_info.h"
#include "core/thread_team.h"
#include "train/model.h"

namespace mr {

void Model::begin_monitored_epoch() {
  // NVML is opened once, by the first epoch of a model with a GPU replica
  // (a dlopen, outside any step).
  if (nvml_ == nullptr)
    for (const DeviceSpec& d : replicas_.devices())
      if (d.kind == DeviceKind::cuda) {
        nvml_ = std::make_unique<GpuUtilization>();
        break;
      }
  for (int r = 0; r < replicas_.size(); ++r) replicas_.backend(r).reset_peak_memory();
  step_.clock().begin_epoch();
}

std::vector<ReplicaReport> Model::device_report() const {
  const std::vector<StepBreakdown>& times = step_.clock().epoch();
  std::vector<ReplicaReport> out;
  for (int r = 0; r < replicas_.size(); ++r) {
    const DeviceSpec& d = replicas_.devices()[static_cast<size_t>(r)];
    ReplicaReport rep;
    rep.device = d.name();
    if (static_cast<size_t>(r) < times.size()) rep.time = times[static_cast<size_t>(r)];
    rep.memory = replicas_.backend(r).memory_use();
    if (d.kind == DeviceKind::cuda && nvml_ != nullptr)
      rep.gpu_util = nvml_->percent(cuda_pci_bus_id(d.cuda_ordinal()));
    const TeamStatus team = replicas_.backend(r).host_threads();
    rep.threads = team.size;
    rep.active_threads = team.active;
    rep.threads_why = team.why;
    out.push_back(rep);
  }
  return out;
}

}  // namespace mr
