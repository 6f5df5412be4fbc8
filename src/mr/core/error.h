// mr::Error is the only exception type the core throws. Its kind decides the R
// condition class the glue raises (mirrored_<kind>_error), so the kinds are part
// of the R API and must stay stable.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace mr {

enum class ErrorKind {
  value,        // an argument has the wrong value (bad units, unknown name, ...)
  shape,        // tensor shapes do not fit together
  io,           // a file is missing, unreadable or malformed
  device,       // a device does not exist or failed (CUDA status, ...)
  interrupted,  // the user interrupted a long computation
  timeout,      // a collective or a worker did not answer before its deadline
  worker,       // another worker of a multi-worker job died, left or disagrees
  internal      // a broken invariant: a bug in mirrored
};

const char* kind_name(ErrorKind kind) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, T&& first, Rest&&... rest) {
  os << std::forward<T>(first);
  append(os, std::forward<Rest>(rest)...);
}
}  // namespace detail

// Builds the message from its parts with operator<< and throws.
template <typename... Parts>
[[noreturn]] void fail(ErrorKind kind, Parts&&... parts) {
  std::ostringstream os;
  detail::append(os, std::forward<Parts>(parts)...);
  throw Error(kind, os.str());
}

}  // namespace mr

// Invariant checks that stay on in release builds: they guard the core against
// inputs the R layer should already have rejected.
#define MR_CHECK(cond, kind, ...)                                \
  do {                                                           \
    if (!(cond)) ::mr::fail(::mr::ErrorKind::kind, __VA_ARGS__); \
  } while (0)
