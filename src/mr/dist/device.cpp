#include "dist/device.h"

#include <algorithm>
#include <cctype>

#include "core/device_info.h"
#include "core/error.h"

namespace mr {

std::string DeviceSpec::name() const {
  return std::string(kind == DeviceKind::cpu ? "cpu:" : "gpu:") + std::to_string(index);
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

}  // namespace mr
