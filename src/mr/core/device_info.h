// What this build of mirrored was compiled with, and which CUDA devices the
// process can see. Two implementations, one linked per build:
// backends/cuda/cuda_info.cu (CUDA builds) and core/device_info_none.cpp
// (CPU-only builds). A machine without a driver or without a GPU is not an
// error: it has 0 devices.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"

namespace mr {

struct GpuInfo {
  int index;             // CUDA device ordinal
  std::string name;      // e.g. "NVIDIA H100 80GB HBM3"
  int64_t total_memory;  // bytes
  int cc_major, cc_minor;
};

bool built_with_cuda();
bool built_with_nccl();
// "13.0" for a CUDA build (the runtime linked in), "" otherwise.
std::string cuda_runtime_version();
// "2.28.9" for an NCCL build (the library loaded), "" otherwise.
std::string nccl_version();
// Whether GPU convolutions can run through cuDNN (a CUDA build that found
// it), and its version ("9.19.0", the library loaded; "" without it).
bool built_with_cudnn();
std::string cudnn_version();
// 0 without CUDA, without a driver or without a device; throws
// Error(device) for any other CUDA failure.
int cuda_device_count();
std::vector<GpuInfo> cuda_devices();
// Free and total bytes of CUDA device `ordinal` now (Error(device) if it does not exist).
void cuda_memory(int ordinal, int64_t* free_bytes, int64_t* total_bytes);
// i14-monitor: the PCI bus id of CUDA device `ordinal` ("0000:3B:00.0", the
// key NVML finds it by), "" without CUDA or when CUDA cannot say.
std::string cuda_pci_bus_id(int ordinal);
// How devices a and b exchange data now: "NVLink" (peer access with native
// atomics, which CUDA reports only over NVLink) or "PCIe P2P" when peer access
// is enabled (in both directions), "... (peer access not enabled)" when the
// topology allows it but no communicator enabled it (or enabling failed),
// "PCIe via host" when peer access is impossible; "same device" when a == b.
std::string cuda_link(int a, int b);
// Enables access from device `from` to device `to`'s memory where the
// topology allows (idempotent); true when it is enabled. Never throws for a
// pair without peer support.
bool cuda_enable_peer_access(int from, int to);

// The backend of logical GPU "gpu:<index>" on CUDA device `ordinal`.
// Error(device) in a CPU-only build.
std::unique_ptr<Backend> make_cuda_backend(int index, int ordinal);

}  // namespace mr
