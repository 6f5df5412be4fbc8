// All-reduce (sum of floats) against message size, 4 KB .. 64 MB in x4 steps,
// between worker PROCESSES over loopback (Gloo's TCP ring, the engine of
// multi-worker CPU training) and, beside it, between the replica THREADS of
// one process (the thread communicator, as bench_allreduce measures it).
//
//   bench_allreduce_multiworker [reps=20] [ranks=2,3]
//
// Prints "engine ranks bytes median_us algbw_GBps busbw_GBps" per (engine,
// ranks, size). Timing rule, the same for both engines (and for the PyTorch
// peer of bench/allreduce_multiworker): every rank runs 2 untimed calls, then
// `reps` timed ones (reps / 4, at least 3, from 16 MB on), each after a
// barrier; a call's time is that of its slowest rank (the all-reduce ends for
// the job when it ends on every rank), and the figure is the median of those.
// algbw = bytes / time; busbw = algbw * 2 (N-1) / N (NCCL's convention).
//
// Processes: the parent forks the N workers before it starts any thread (a
// forked child inherits only the forking thread, so forking later could leave
// a lock held by a thread that no longer exists). Worker 0 then runs the
// rendezvous store on 127.0.0.1, port 0, and hands the port it got to the
// others through a pipe made before the fork: no port is picked ahead and
// raced for. Every worker joins the Gloo group through that store; worker 0
// gathers every rank's times (all_gather) and prints the lines.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "dist/comm_threads.h"
#include "dist/process_group.h"
#include "dist/tcp_store.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMinBytes = 4096;
constexpr int64_t kMaxBytes = int64_t{64} << 20;
constexpr int kWarmup = 2;
constexpr double kTimeout = 120.0;  // seconds: store connection, rendezvous, each call

int iterations(int64_t bytes, int reps) {
  return bytes >= (int64_t{16} << 20) ? std::max(3, reps / 4) : reps;
}

// times[rank][it] -> the median over iterations of the slowest rank's time.
double median_of_slowest(const std::vector<std::vector<double>>& times) {
  const size_t iters = times.front().size();
  std::vector<double> worst(iters, 0.0);
  for (const auto& rank : times)
    for (size_t it = 0; it < iters; ++it) worst[it] = std::max(worst[it], rank[it]);
  std::sort(worst.begin(), worst.end());
  return worst[worst.size() / 2];
}

void print_line(const char* engine, int ranks, int64_t bytes, double seconds) {
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  std::printf("%-8s %5d %10lld %12.1f %10.3f %10.3f\n", engine, ranks,
              static_cast<long long>(bytes), seconds * 1e6, algbw,
              algbw * 2.0 * (ranks - 1) / ranks);
  std::fflush(stdout);
}

// ---- worker processes: Gloo over loopback ----------------------------------

void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) throw std::runtime_error("write to the port pipe failed");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

int read_port(int fd) {
  int port = 0;
  // 4 bytes written at once are below PIPE_BUF, so each read gets one whole
  // port (or 0 bytes if worker 0 died before writing: the pipe closed).
  const ssize_t r = ::read(fd, &port, sizeof port);
  if (r != static_cast<ssize_t>(sizeof port)) throw std::runtime_error("worker 0 sent no port");
  return port;
}

// One worker of a group of `ranks` processes; returns its exit status.
int gloo_worker(int rank, int ranks, int reps, int pipe_read, int pipe_write) {
  // Worker 0 serves the store for as long as the others use it: it is
  // declared first, so it is destroyed last.
  std::unique_ptr<mr::StoreServer> server;
  if (rank == 0) {
    server = std::make_unique<mr::StoreServer>("127.0.0.1", 0);
    const int port = server->port();
    for (int r = 1; r < ranks; ++r) write_all(pipe_write, &port, sizeof port);
  }
  ::close(pipe_write);
  const int port = rank == 0 ? server->port() : read_port(pipe_read);
  ::close(pipe_read);
  mr::StoreClient store("127.0.0.1", port, kTimeout, "bench worker " + std::to_string(rank));
  std::unique_ptr<mr::ProcessGroup> group =
      mr::make_gloo_group(store, "bench/", rank, ranks, "127.0.0.1", kTimeout);

  for (int64_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    const int iters = iterations(bytes, reps);
    std::vector<float> buf(static_cast<size_t>(n), 1.0f);
    std::vector<double> mine(static_cast<size_t>(iters));
    for (int it = -kWarmup; it < iters; ++it) {
      group->barrier();
      const Clock::time_point t0 = Clock::now();
      group->all_reduce_sum(buf.data(), n);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (it >= 0) mine[static_cast<size_t>(it)] = s;
    }
    std::vector<double> all(static_cast<size_t>(iters) * static_cast<size_t>(ranks));
    group->all_gather(mine.data(), mine.size() * sizeof(double), all.data());
    if (rank == 0) {
      std::vector<std::vector<double>> times(static_cast<size_t>(ranks));
      for (int r = 0; r < ranks; ++r)
        times[static_cast<size_t>(r)].assign(all.begin() + r * iters,
                                             all.begin() + (r + 1) * iters);
      print_line("gloo", ranks, bytes, median_of_slowest(times));
    }
  }
  // Nobody leaves (and worker 0 stops serving the store) before every worker
  // is done with the group.
  group->barrier();
  return 0;
}

// Forks the workers of one group size and waits for them; false if any failed.
bool run_gloo(int ranks, int reps) {
  int fds[2];
  if (::pipe(fds) != 0) {
    std::perror("pipe");
    return false;
  }
  std::fflush(stdout);  // the children must not inherit (and print) buffered output
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      break;
    }
    if (pid == 0) {
      int status = 1;
      try {
        status = gloo_worker(r, ranks, reps, fds[0], fds[1]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench worker %d of %d: %s\n", r, ranks, e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      // _exit: the child must not run the parent's exit handlers.
      ::_exit(status);
    }
    pids.push_back(pid);
  }
  ::close(fds[0]);
  ::close(fds[1]);
  bool ok = static_cast<int>(pids.size()) == ranks;
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    if (::waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "bench worker %zu of %d failed (status %d)\n", r, ranks, status);
      ok = false;
    }
  }
  return ok;
}

// ---- replica threads of one process: the thread communicator ---------------

void run_threads(int ranks, int reps) {
  mr::ThreadCommunicator comm(ranks, kTimeout);
  std::vector<std::unique_ptr<mr::Backend>> be;
  for (int r = 0; r < ranks; ++r) be.push_back(mr::make_cpu_backend(r, 1));
  for (int64_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    const int iters = iterations(bytes, reps);
    std::vector<std::vector<float>> bufs(static_cast<size_t>(ranks),
                                         std::vector<float>(static_cast<size_t>(n), 1.0f));
    std::vector<std::vector<double>> times(static_cast<size_t>(ranks),
                                           std::vector<double>(static_cast<size_t>(iters)));
    // Persistent rank threads, as replicas are.
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        const size_t ri = static_cast<size_t>(r);
        for (int it = -kWarmup; it < iters; ++it) {
          comm.barrier(r);
          const Clock::time_point t0 = Clock::now();
          comm.all_reduce_sum(r, *be[ri], bufs[ri].data(), n);
          const double s = std::chrono::duration<double>(Clock::now() - t0).count();
          if (it >= 0) times[ri][static_cast<size_t>(it)] = s;
        }
      });
    for (auto& th : threads) th.join();
    print_line("threads", ranks, bytes, median_of_slowest(times));
  }
}

std::vector<int> parse_ranks(const char* text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const int n = std::atoi(item.c_str());
    if (n < 2) {
      std::fprintf(stderr, "ranks: '%s' is not a number of ranks >= 2\n", item.c_str());
      std::exit(2);
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::vector<int> ranks = parse_ranks(argc > 2 ? argv[2] : "2,3");
  if (reps < 1) {
    std::fprintf(stderr, "reps must be >= 1\n");
    return 2;
  }
  if (!mr::built_with_gloo()) {
    std::fprintf(stderr, "this build has no Gloo: nothing to measure\n");
    return 1;
  }
  std::printf("%-8s %5s %10s %12s %10s %10s\n", "engine", "ranks", "bytes", "median_us",
              "algbw_GBps", "busbw_GBps");
  // Every fork first, while this process has no thread but its main one.
  for (int n : ranks)
    if (!run_gloo(n, reps)) return 1;
  for (int n : ranks) run_threads(n, reps);
  return 0;
}
