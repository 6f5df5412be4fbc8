#include "dist/device.h"

#include <algorithm>
#include <cctype>

#include "core/device_info.h"
#include "core/error.h"

namespace mr {

std::string DeviceSpec::name() const {
  return std::string(kind == DeviceKind::cpu ? "cpu:" : "gpu:") + std::to_string(index);
}

std::string DeviceSpec::display_name() const {
  return std::string(kind == DeviceKind::cpu ? "/device:CPU:" : "/device:GPU:") +
         std::to_string(index);
}

DeviceSpec parse_device(const std::string& text) {
  std::string s;
  for (char ch : text) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  // Keep the part after the last "device:" or the last "/".
  const size_t dev = s.rfind("device:");
  if (dev != std::string::npos) s = s.substr(dev + 7);
  const size_t slash = s.rfind('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  const size_t colon = s.find(':');
  const std::string kind = s.substr(0, colon);
  const std::string idx = colon == std::string::npos ? "" : s.substr(colon + 1);
  const bool digits =
      !idx.empty() && idx.size() <= 6 && std::all_of(idx.begin(), idx.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      });
  if ((kind == "cpu" || kind == "gpu" || kind == "cuda") && digits) {
    DeviceSpec d;
    d.kind = kind == "cpu" ? DeviceKind::cpu : DeviceKind::cuda;
    d.index = std::stoi(idx);
    return d;
  }
  fail(ErrorKind::value, "'", text,
       "' is not a device name (expected \"/cpu:0\", \"gpu:1\", \"/device:GPU:0\", ...)");
}

void assign_gpu_ordinals(std::vector<DeviceSpec>& devices, int logical_per_gpu) {
  MR_CHECK(logical_per_gpu >= 1, value, "logical GPUs per GPU must be >= 1, got ", logical_per_gpu);
  for (DeviceSpec& d : devices)
    if (d.kind == DeviceKind::cuda && d.ordinal < 0) d.ordinal = d.index / logical_per_gpu;
}

namespace {
void check_exists(const DeviceSpec& d, const std::string& given, int logical_per_gpu) {
  if (d.kind == DeviceKind::cpu) return;
  const int physical = cuda_device_count();
  const int have = physical * logical_per_gpu;
  if (d.index < have) return;
  if (!built_with_cuda())
    fail(ErrorKind::device, "Device '", given,
         "' does not exist: this build of mirrored has no CUDA backend.");
  if (physical == 0)
    fail(ErrorKind::device, "Device '", given, "' does not exist: no GPU is available.");
  fail(ErrorKind::device, "Device '", given, "' does not exist: there are ", have,
       " (logical) GPUs.");
}
}  // namespace

std::vector<DeviceSpec> resolve_devices(const std::vector<std::string>& names,
                                        int logical_per_gpu) {
  MR_CHECK(logical_per_gpu >= 1, value, "logical GPUs per GPU must be >= 1, got ", logical_per_gpu);
  std::vector<DeviceSpec> out;
  for (const std::string& given : names) {
    const DeviceSpec d = parse_device(given);
    check_exists(d, given, logical_per_gpu);
    MR_CHECK(std::find(out.begin(), out.end(), d) == out.end(), value, "`devices` lists '",
             d.display_name(), "' more than once.");
    out.push_back(d);
  }
  assign_gpu_ordinals(out, logical_per_gpu);
  return out;
}

std::vector<DeviceSpec> visible_devices(int logical_per_gpu) {
  std::vector<DeviceSpec> out(1);  // cpu:0
  const int gpus = cuda_device_count() * logical_per_gpu;
  for (int k = 0; k < gpus; ++k) {
    DeviceSpec d;
    d.kind = DeviceKind::cuda;
    d.index = k;
    out.push_back(d);
  }
  assign_gpu_ordinals(out, logical_per_gpu);
  return out;
}

std::vector<DeviceSpec> default_devices(int logical_per_gpu) {
  std::vector<DeviceSpec> all = visible_devices(logical_per_gpu);
  if (all.size() == 1) return all;
  all.erase(all.begin());
  return all;
}

}  // namespace mr
