// How many CPU threads a CPU replica's team gets, decided once for the
// strategy's models: what print(strategy) shows and what the backends are
// made with.
#pragma once

#include <string>

namespace mr {

// The cores this process may run on: its CPU affinity mask (taskset, cgroup
// cpusets, Slurm's binding), else the machine's online CPUs; at least 1.
int usable_cores();

struct CpuThreadPlan {
  int threads = 1;  // per CPU replica
  std::string why;  // "2 cores usable / 1 CPU replica", "options(mirrored.cpu_threads)"
};

// `asked` > 0: that many (the user's option). Else the usable cores shared
// by the CPU replicas of every process of the job on this host
// (`replicas_on_host`), at least 1.
CpuThreadPlan plan_cpu_threads(int asked, int replicas_on_host);

}  // namespace mr
