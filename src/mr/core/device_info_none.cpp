// CPU-only build: no CUDA runtime is linked, so there are no devices to ask.
#include "core/device_info.h"
#include "core/error.h"

namespace mr {

bool built_with_cuda() { return false; }
bool built_with_nccl() { return false; }
std::string cuda_runtime_version() { return ""; }
std::string nccl_version() { return ""; }
bool built_with_cudnn() { return false; }
std::string cudnn_version() { return ""; }
int cuda_device_count() { return 0; }
std::vector<GpuInfo> cuda_devices() { return {}; }

void cuda_memory(int ordinal, int64_t*, int64_t*) {
  fail(ErrorKind::device, "there is no CUDA device ", ordinal,
       ": this build of mirrored has no CUDA");
}

std::string cuda_link(int, int) { return "none"; }

std::string cuda_pci_bus_id(int) { return ""; }
bool cuda_enable_peer_access(int, int) { return false; }

std::unique_ptr<Backend> make_cuda_backend(int index, int) {
  fail(ErrorKind::device, "gpu:", index,
       " needs the CUDA backend, which this build of mirrored does not have (it was built "
       "without a CUDA toolkit)");
}

}  // namespace mr
