// Device names, their placement and the cross_device_ops check: the rules R
// asks the core for (R/strategy.R displays them).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/device_info.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "dist/device.h"

namespace mr {
namespace {

std::vector<std::string> names(const std::vector<DeviceSpec>& ds) {
  std::vector<std::string> out;
  for (const DeviceSpec& d : ds) out.push_back(d.name());
  return out;
}

TEST(Devices, NamesAreNormalizedAndDisplayedAsTensorFlowDoes) {
  const auto ds = resolve_devices({"/cpu:1", "CPU:0", "/device:CPU:2"}, 1);
  EXPECT_EQ(names(ds), (std::vector<std::string>{"cpu:1", "cpu:0", "cpu:2"}));
  EXPECT_EQ(ds[0].display_name(), "/device:CPU:1");
  DeviceSpec g;
  g.kind = DeviceKind::cuda;
  g.index = 3;
  EXPECT_EQ(g.display_name(), "/device:GPU:3");
}

TEST(Devices, BadNamesDuplicatesAndMissingGpusAreClassedErrors) {
  auto kind_of = [](const std::vector<std::string>& n) {
    try {
      resolve_devices(n, 1);
    } catch (const Error& e) {
      return std::string(kind_name(e.kind())) + ": " + e.what();
    }
    return std::string("no error");
  };
  EXPECT_EQ(kind_of({"tpu:0"}).rfind("value: ", 0), 0u);
  EXPECT_NE(kind_of({"tpu:0"}).find("not a device name"), std::string::npos);
  EXPECT_NE(kind_of({"/cpu:0", "cpu:0"}).find("more than once"), std::string::npos);
  const std::string gpu = kind_of({"/gpu:" + std::to_string(cuda_device_count())});
  EXPECT_EQ(gpu.rfind("device: ", 0), 0u) << gpu;
  EXPECT_NE(gpu.find("does not exist"), std::string::npos);
  EXPECT_THROW(resolve_devices({"cpu:0"}, 0), Error);
}

TEST(Devices, VisibleAndDefaultDevicesArePlacedOnPhysicalGpus) {
  const int gpus = cuda_device_count();
  const auto all = visible_devices(2);
  ASSERT_EQ(all.size(), static_cast<size_t>(1 + 2 * gpus));
  EXPECT_EQ(all[0].name(), "cpu:0");
  for (size_t k = 1; k < all.size(); ++k) EXPECT_EQ(all[k].cuda_ordinal(), (k - 1) / 2);
  const auto def = default_devices(1);
  if (gpus == 0) {
    EXPECT_EQ(names(def), std::vector<std::string>{"cpu:0"});
  } else {
    EXPECT_EQ(def.size(), static_cast<size_t>(gpus));
    EXPECT_EQ(def[0].name(), "gpu:0");
  }
}

TEST(Devices, CrossDeviceOpsAreCheckedByThePlan) {
  const auto one = resolve_devices({"cpu:0"}, 1);
  const auto two = resolve_devices({"cpu:0", "cpu:1"}, 1);
  EXPECT_THROW(plan_communicator(two, "magic"), Error);
  EXPECT_THROW(plan_communicator(one, "nccl"), Error);
  EXPECT_THROW(plan_communicator(two, "nccl"), Error);
  EXPECT_EQ(plan_communicator(one, "").kind, CommKind::solo);
  EXPECT_EQ(plan_communicator(two, "hierarchical_copy").kind, CommKind::threads);
  EXPECT_EQ(plan_communicator(two, "reduce_to_one_device").kind, CommKind::staged);
}

}  // namespace
}  // namespace mr
