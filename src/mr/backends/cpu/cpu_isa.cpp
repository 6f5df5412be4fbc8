// Which CPU kernel paths this build has and this CPU runs (cpu_isa.h).
// Compiled without the ISA flags of the kernels, so that it runs on any x86-64
// CPU and can refuse cleanly where the kernels would die of SIGILL.
#include "backends/cpu/cpu_isa.h"

#include <cstdlib>

#include "backends/cpu/cpu_gemm_blocked.h"
#include "core/error.h"

namespace mr {

namespace {

bool cpu_has(const char* feature) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports takes a string literal only: the features asked for.
  const std::string f = feature;
  if (f == "avx512") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  }
  if (f == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  (void)feature;
  return false;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx512:
      return "avx512";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::portable:
      break;
  }
  return "portable";
}

const char* cpu_isa_label(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx512:
      return "AVX-512";
    case CpuIsa::avx2:
      return "AVX2+FMA";
    case CpuIsa::portable:
      break;
  }
  return "portable (no FMA)";
}

std::vector<CpuIsa> cpu_isas_available() {
  std::vector<CpuIsa> out;
#if defined(MR_KERNELS_AVX512)
  if (cpu_has("avx512")) out.push_back(CpuIsa::avx512);
#endif
  if (cpu::blocked_avx2::compiled() && cpu_has("avx2")) out.push_back(CpuIsa::avx2);
  out.push_back(CpuIsa::portable);
  return out;
}

CpuIsa parse_cpu_isa(const std::string& name, const char* what) {
  const std::vector<CpuIsa> ok = cpu_isas_available();
  std::string list;
  for (CpuIsa i : ok) list += std::string(list.empty() ? "" : ", ") + "\"" + cpu_isa_name(i) + "\"";
  for (CpuIsa i : {CpuIsa::avx512, CpuIsa::avx2, CpuIsa::portable}) {
    if (name != cpu_isa_name(i)) continue;
    for (CpuIsa a : ok)
      if (a == i) return i;
    fail(ErrorKind::value, what, " asks for the ", cpu_isa_label(i),
         " CPU kernels, which this build or CPU cannot run; it can run ", list);
  }
  fail(ErrorKind::value, what, " must be one of ", list, ", got \"", name, "\"");
}

CpuIsa default_cpu_isa() {
  const char* env = std::getenv("MIRRORED_CPU_ISA");
  if (env != nullptr && env[0] != '\0') return parse_cpu_isa(env, "MIRRORED_CPU_ISA");
  return cpu_isas_available().front();
}

void require_cpu_isa() {
#if defined(MR_KERNELS_AVX512)
  if (!cpu_has("avx512"))
    fail(ErrorKind::device,
         "this build of mirrored uses AVX-512 CPU kernels but the CPU lacks AVX-512; "
         "rebuild with MR_NATIVE off (CMake) or on this machine");
#endif
#if defined(MR_KERNELS_AVX2)
  if (!cpu_has("avx2"))
    fail(ErrorKind::device,
         "this build of mirrored uses AVX2/FMA CPU kernels but the CPU lacks them; "
         "rebuild with MR_NATIVE off (CMake) or on this machine");
#endif
}

}  // namespace mr
