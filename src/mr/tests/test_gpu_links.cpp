// Peer access between GPUs: the peer-copy communicator enables it where the
// topology allows, and cuda_link() (print(strategy)'s link line) reports what
// is enabled, not only what the hardware could do. Needs 2 GPUs.
#include <gtest/gtest.h>

#include <string>

#include "core/device_info.h"
#include "dist/communicator.h"
#include "tests/test_util.h"

namespace mr {
namespace {

TEST(GpuLinks, PeerCommunicatorEnablesPeerAccessAndTheReportSaysSo) {
  MR_REQUIRE_GPUS(2);
  const std::string before = cuda_link(0, 1);
  auto comm = make_peer_communicator({0, 1}, 30.0);
  const std::string after = cuda_link(0, 1);
  if (before == "PCIe via host") {
    EXPECT_EQ(after, before);  // nothing to enable
  } else {
    EXPECT_TRUE(after == "NVLink" || after == "PCIe P2P") << before << " -> " << after;
  }
  EXPECT_EQ(cuda_link(0, 0), "same device");
}

}  // namespace
}  // namespace mr
