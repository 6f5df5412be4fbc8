#include "core/error.h"

namespace mr {

const char* kind_name(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::value:
      return "value";
    case ErrorKind::shape:
      return "shape";
    case ErrorKind::io:
      return "io";
    case ErrorKind::device:
      return "device";
    case ErrorKind::interrupted:
      return "interrupted";
    case ErrorKind::timeout:
      return "timeout";
    case ErrorKind::worker:
      return "worker";
    case ErrorKind::internal:
      return "internal";
  }
  return "internal";
}

}  // namespace mr
