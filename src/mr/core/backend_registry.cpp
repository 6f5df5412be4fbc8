#include "core/backend_registry.h"

#include "backends/cpu/cpu_backend.h"
#include "core/device_info.h"
#include "core/error.h"

namespace mr {

std::unique_ptr<Backend> create_backend(DeviceKind kind, int index, int cuda_ordinal, int threads) {
  switch (kind) {
    case DeviceKind::cpu:
      return make_cpu_backend(index, threads);
    case DeviceKind::cuda:
      return make_cuda_backend(index, cuda_ordinal);
  }
  fail(ErrorKind::internal, "unknown device kind ", static_cast<int>(kind));
}

}  // namespace mr
