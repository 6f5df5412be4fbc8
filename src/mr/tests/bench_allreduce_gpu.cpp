// All-reduce time against message size on the GPU communicators: NCCL with one
// rank (one GPU: the launch and stream overhead, no link), and the fallbacks
// (peer copy, host staging) with 2 logical GPUs on GPU 0, each rank on its own
// thread as replicas are. Prints "bytes communicator us_per_call" lines.
//
//   bench_allreduce_gpu [reps=50]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/device_info.h"
#include "dist/communicator.h"

using namespace mr;

namespace {

double time_all_reduce(Communicator& comm, std::vector<std::unique_ptr<Backend>>& bes, int64_t n,
                       int reps) {
  const int ranks = static_cast<int>(bes.size());
  std::vector<DeviceBuffer> bufs;
  for (auto& be : bes) bufs.push_back(be->allocate(static_cast<size_t>(n) * sizeof(float)));
  auto run = [&](int count) {
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        for (int i = 0; i < count; ++i)
          comm.all_reduce_sum(r, *bes[r], static_cast<float*>(bufs[r].get()), n);
        bes[r]->synchronize();
      });
    for (auto& t : threads) t.join();
  };
  run(3);
  const auto t0 = std::chrono::steady_clock::now();
  run(reps);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s / reps * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 50;
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  std::printf("bytes communicator us_per_call\n");
  for (int64_t bytes = 4096; bytes <= (int64_t{256} << 20); bytes *= 4) {
    const int64_t n = bytes / 4;
    if (built_with_nccl()) {
      std::vector<std::unique_ptr<Backend>> one;
      one.push_back(make_cuda_backend(0, 0));
      auto nccl = make_nccl_communicator({0}, 60.0);
      std::printf("%lld nccl_1rank %.3f\n", static_cast<long long>(bytes),
                  time_all_reduce(*nccl, one, n, reps));
    }
    std::vector<std::unique_ptr<Backend>> two;
    two.push_back(make_cuda_backend(0, 0));
    two.push_back(make_cuda_backend(1, 0));
    auto peer = make_peer_communicator({0, 0}, 60.0);
    std::printf("%lld peer_2logical %.3f\n", static_cast<long long>(bytes),
                time_all_reduce(*peer, two, n, reps));
    auto staged = make_staged_communicator(2, 60.0);
    std::printf("%lld staged_2logical %.3f\n", static_cast<long long>(bytes),
                time_all_reduce(*staged, two, n, reps));
    std::fflush(stdout);
  }
  return 0;
}
