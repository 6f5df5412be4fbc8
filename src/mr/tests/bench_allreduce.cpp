// All-reduce time of the thread communicator against message size, for a
// given number of ranks: one thread per rank, as replicas run. Prints
// "bytes ranks median_us algbw_GBps busbw_GBps" per size; algorithmic
// bandwidth = bytes / time, bus bandwidth = algbw * 2 (N-1) / N (NCCL's
// convention, comparable across rank counts).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "dist/comm_threads.h"

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  mr::ThreadCommunicator comm(ranks, 60.0);
  std::vector<std::unique_ptr<mr::Backend>> be;
  for (int r = 0; r < ranks; ++r) be.push_back(mr::make_cpu_backend(r, 1));
  std::printf("%10s %5s %12s %10s %10s\n", "bytes", "ranks", "median_us", "algbw_GBps",
              "busbw_GBps");
  for (int64_t bytes = 4096; bytes <= (int64_t{64} << 20); bytes *= 4) {
    const int64_t n = bytes / 4;
    std::vector<std::vector<float>> bufs(static_cast<size_t>(ranks),
                                         std::vector<float>(static_cast<size_t>(n), 1.0f));
    // Persistent rank threads, as replicas are: each times its own calls,
    // back to back after a barrier; a call ends with its slowest rank.
    const int iters = bytes >= (int64_t{16} << 20) ? std::max(3, reps / 4) : reps;
    std::vector<std::vector<double>> t(static_cast<size_t>(ranks),
                                       std::vector<double>(static_cast<size_t>(iters)));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        for (int it = -2; it < iters; ++it) {
          comm.barrier(r);
          const auto t0 = std::chrono::steady_clock::now();
          comm.all_reduce_sum(r, *be[static_cast<size_t>(r)], bufs[static_cast<size_t>(r)].data(),
                              n);
          if (it >= 0)
            t[static_cast<size_t>(r)][static_cast<size_t>(it)] =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
      });
    for (auto& th : threads) th.join();
    std::vector<double> times;
    for (int it = 0; it < iters; ++it) {
      double worst = 0;
      for (int r = 0; r < ranks; ++r)
        worst = std::max(worst, t[static_cast<size_t>(r)][static_cast<size_t>(it)]);
      times.push_back(worst);
    }
    std::sort(times.begin(), times.end());
    const double med = times[times.size() / 2];
    const double algbw = static_cast<double>(bytes) / med / 1e9;
    std::printf("%10lld %5d %12.1f %10.2f %10.2f\n", static_cast<long long>(bytes), ranks,
                med * 1e6, algbw, algbw * 2.0 * (ranks - 1) / ranks);
  }
}
