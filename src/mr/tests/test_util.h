// Helpers shared by the GoogleTest files.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace mr {

// Runs `f`, expects it to throw mr::Error of kind io, and returns its message
// (empty, with a test failure, when nothing was thrown).
template <typename F>
std::string io_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace mr
