#include "core/backend.h"

namespace mr {

void DeviceFree::operator()(void* p) const noexcept {
  if (p != nullptr && owner != nullptr) owner->release(p);
}

}  // namespace mr
