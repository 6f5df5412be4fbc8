#include "core/host_cores.h"

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace mr {

int usable_cores() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

CpuThreadPlan plan_cpu_threads(int asked, int replicas_on_host) {
  CpuThreadPlan p;
  if (asked > 0) {
    p.threads = asked;
    p.why = "options(mirrored.cpu_threads)";
    return p;
  }
  const int cores = usable_cores();
  const int sharing = std::max(1, replicas_on_host);
  p.threads = std::max(1, cores / sharing);
  p.why = std::to_string(cores) + (cores == 1 ? " core" : " cores") + " usable / " +
          std::to_string(sharing) + (sharing == 1 ? " replica" : " replicas") + " on this host";
  return p;
}

}  // namespace mr
