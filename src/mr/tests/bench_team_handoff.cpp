// Thread-team hand-off benchmark (not a test): what one op's hand-off to a
// 2-member ThreadTeam costs on this machine, next to the hardware floor, so
// that the split thresholds of the CPU kernels (cpu_gemm_narrow.cpp's
// kSplitMinMacs, cpu_backend.h's grains) can be checked on any CPU:
//   - a cross-core round trip: one thread stores to a cache line, the other
//     spins until it sees it and answers on a second line (the least any
//     hand-off that waits for its member can cost);
//   - ThreadTeam::run_parts with an empty job of 2 parts (each bumps its line);
//   - ThreadTeam::parallel_for(2, 1) with an empty body, as the kernels call
//     it (for_range).
// Numbers are the mean over many back-to-back calls; on a machine whose
// other core is busy with another process they measure the scheduler
// instead (tens of microseconds).
//   bench_team_handoff [calls=200000]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/thread_team.h"

namespace {

using Clock = std::chrono::steady_clock;

struct alignas(64) Line {
  std::atomic<long> v{0};
};

// Mean ns of one round trip between two threads over two cache lines.
double round_trip_ns(long calls) {
  Line ping, pong;
  std::thread other([&] {
    for (long i = 1; i <= calls; ++i) {
      while (ping.v.load(std::memory_order_acquire) != i) {
      }
      pong.v.store(i, std::memory_order_release);
    }
  });
  const auto t0 = Clock::now();
  for (long i = 1; i <= calls; ++i) {
    ping.v.store(i, std::memory_order_release);
    while (pong.v.load(std::memory_order_acquire) != i) {
    }
  }
  const double ns = std::chrono::duration<double>(Clock::now() - t0).count() / calls * 1e9;
  other.join();
  return ns;
}

template <typename F>
double mean_ns(long calls, F&& f) {
  for (long i = 0; i < calls / 10; ++i) f();  // members awake and spinning
  const auto t0 = Clock::now();
  for (long i = 0; i < calls; ++i) f();
  return std::chrono::duration<double>(Clock::now() - t0).count() / calls * 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 200000;
  mr::ThreadTeam team(2);
  Line slot[2];
  const double rt = round_trip_ns(calls);
  const double run = mean_ns(calls, [&] {
    team.run_parts(
        2, [&](int64_t part, int) { slot[part].v.fetch_add(1, std::memory_order_relaxed); });
  });
  const double pf = mean_ns(calls, [&] {
    team.parallel_for(
        2, 1, [&](int64_t b, int64_t) { slot[b].v.fetch_add(1, std::memory_order_relaxed); });
  });
  std::printf("cross-core round trip (2 cache lines):  %8.0f ns\n", rt);
  std::printf("ThreadTeam::run_parts, 2 parts, empty:   %8.0f ns\n", run);
  std::printf("ThreadTeam::parallel_for(2, 1), empty:   %8.0f ns\n", pf);
  return 0;
}
