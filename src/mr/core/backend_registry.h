// The backend registry: the one place that names the backends. Everything
// else creates a backend through create_backend() and sees only the op set
// (core/backend.h).
#pragma once

#include <memory>

#include "core/backend.h"

namespace mr {

// The backend of device `index` of `kind`: the CPU backend with `threads`
// threads for its work, or the CUDA backend of logical GPU `index` on CUDA
// device `cuda_ordinal` (Error(device) in a build without CUDA).
std::unique_ptr<Backend> create_backend(DeviceKind kind, int index, int cuda_ordinal, int threads);

}  // namespace mr
