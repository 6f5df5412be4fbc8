// Worker processes for the multi-worker GoogleTests (test_worker_group.cpp,
// test_gloo_group.cpp): the test process forks N children, each runs one
// worker's body and reports through a pipe; the parent collects every
// report, kills what outlives the test's limit, and reaps every child.
//
// Invariants: fork() happens only while the test process has one thread (a
// child inherits only the forking thread, so a lock held by another thread
// would stay locked in it forever): every test checks this first and skips
// otherwise (ctest runs each test in a process of its own; a whole mr_tests
// run may have thread pools left by earlier tests). Children never use
// GoogleTest's assertions (the parent asserts on what they report), never
// return into GoogleTest, and leave with _exit() so that no atexit handler
// or inherited stdio buffer runs twice.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "dist/cluster_spec.h"
#include "tests/test_util.h"

namespace mr {
namespace testing_workers {

using Clock = std::chrono::steady_clock;

// Nanoseconds on the monotonic clock, which every process of the machine
// shares: a child's timestamps compare with another child's.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// A loopback port that was free a moment ago: a plain socket binds port 0 and
// lets it go (no store server: that would start a thread before the fork).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The TF_CONFIG of worker `index` in a cluster of `n` workers on loopback;
// the chief (worker 0) serves the store on `port`, the other addresses only
// name their workers in messages.
inline std::string tf_config(int port, int n, int index) {
  std::string workers;
  for (int i = 0; i < n; ++i)
    workers += std::string(i ? ", " : "") + "\"127.0.0.1:" + std::to_string(port + i) + "\"";
  return "{\"cluster\": {\"worker\": [" + workers + "]}, \"task\": {\"type\": \"worker\", " +
         "\"index\": " + std::to_string(index) + "}}";
}

// The cluster as the core resolves it from that TF_CONFIG.
inline ClusterSpec loopback_cluster(int port, int n, int index) {
  const Environment env{{"TF_CONFIG", tf_config(port, n, index)}};
  return resolve_cluster("", env).value();
}

// How worker `i` of such a cluster is named in errors.
inline std::string worker_name(int port, int i) {
  return "worker " + std::to_string(i) + " (127.0.0.1:" + std::to_string(port + i) + ")";
}

// What a child reported: `tag` 'O' (its body returned `text`), 'E' (an
// mr::Error: `kind` and `text` its message), 'X' (another exception) or 0
// (nothing: it left without reporting, or was killed); `early` holds what it
// sent before (ChildPipe::send); `status` is waitpid's.
struct ChildReport {
  char tag = 0;
  std::string kind, text, early;
  int status = -1;
  bool killed = false;  // still running at the limit
  bool ok() const { return tag == 'O'; }
  std::string describe() const {
    std::string how;
    if (WIFSIGNALED(status)) how = " (ended by signal " + std::to_string(WTERMSIG(status)) + ")";
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      how = " (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    return std::string("tag ") + (tag ? std::string(1, tag) : "none") + " kind " + kind + ": " +
           text + how + (killed ? " (killed at the limit)" : "");
  }
};

// A child's end of its pipe: send() writes a line the parent receives in
// ChildReport::early, before the final report (e.g. just before _exit).
class ChildPipe {
 public:
  explicit ChildPipe(int fd) : fd_(fd) {}
  void send(const std::string& line) const { write_all('L' + line + '\n'); }
  void write_all(const std::string& s) const {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t w = ::write(fd_, s.data() + off, s.size() - off);
      if (w <= 0) return;
      off += static_cast<size_t>(w);
    }
  }

 private:
  int fd_;
};

// Forks `n` children running body(k, pipe) for k = 0..n-1 and returns their
// reports in k order. A child still running `limit_s` seconds after the fork
// is killed (SIGKILL) and reported as such: no test hangs.
inline std::vector<ChildReport> run_children(
    int n, const std::function<std::string(int, const ChildPipe&)>& body, double limit_s) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  std::vector<int> fds(static_cast<size_t>(n), -1);
  for (int k = 0; k < n; ++k) {
    int p[2];
    if (::pipe(p) != 0) break;
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Gloo's TCP transport writes to its peers without MSG_NOSIGNAL: a
      // write to a peer that just died raises SIGPIPE, whose default action
      // kills the writer. Hosts ignore or handle it (Python ignores it, R
      // installs a handler); a bare test process must too, or a survivor
      // dies with its peer (seen under load: signal 13).
      ::signal(SIGPIPE, SIG_IGN);
      ::close(p[0]);
      for (int j = 0; j < k; ++j) ::close(fds[static_cast<size_t>(j)]);
      const ChildPipe pipe(p[1]);
      std::string out;
      try {
        out = 'O' + body(k, pipe);
      } catch (const Error& e) {
        out = std::string("E") + kind_name(e.kind()) + '\n' + e.what();
      } catch (const std::exception& e) {
        out = std::string("X\n") + e.what();
      } catch (...) {
        out = "X\nunknown exception";
      }
      pipe.write_all('R' + out);
      ::close(p[1]);
      _exit(0);
    }
    ::close(p[1]);
    pids[static_cast<size_t>(k)] = pid;
    fds[static_cast<size_t>(k)] = p[0];
  }
  std::vector<std::string> raw(static_cast<size_t>(n));
  std::vector<bool> open(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) open[static_cast<size_t>(k)] = fds[static_cast<size_t>(k)] >= 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(limit_s);
  for (;;) {
    std::vector<pollfd> polls;
    std::vector<int> which;
    for (int k = 0; k < n; ++k)
      if (open[static_cast<size_t>(k)]) {
        polls.push_back(pollfd{fds[static_cast<size_t>(k)], POLLIN, 0});
        which.push_back(k);
      }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (polls.empty() || left <= 0) break;
    if (::poll(polls.data(), polls.size(), static_cast<int>(left)) < 0) continue;
    for (size_t i = 0; i < polls.size(); ++i) {
      if (polls[i].revents == 0) continue;
      const size_t k = static_cast<size_t>(which[i]);
      char buf[65536];
      const ssize_t r = ::read(fds[k], buf, sizeof buf);
      if (r > 0)
        raw[k].append(buf, static_cast<size_t>(r));
      else
        open[k] = false;
    }
  }
  std::vector<ChildReport> reports(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    const size_t i = static_cast<size_t>(k);
    ChildReport& rep = reports[i];
    if (pids[i] < 0) {
      rep.text = "could not fork";
      continue;
    }
    if (open[i]) {
      rep.killed = true;
      ::kill(pids[i], SIGKILL);
    }
    ::close(fds[i]);
    ::waitpid(pids[i], &rep.status, 0);
    // 'L' lines, then one 'R' record.
    size_t pos = 0;
    const std::string& s = raw[i];
    while (pos < s.size() && s[pos] == 'L') {
      const size_t nl = s.find('\n', pos);
      if (nl == std::string::npos) break;
      rep.early += s.substr(pos + 1, nl - pos);
      pos = nl + 1;
    }
    if (pos + 1 < s.size() && s[pos] == 'R') {
      rep.tag = s[pos + 1];
      std::string rest = s.substr(pos + 2);
      if (rep.tag == 'E' || rep.tag == 'X') {
        const size_t nl = rest.find('\n');
        rep.kind = rest.substr(0, nl);
        rep.text = nl == std::string::npos ? "" : rest.substr(nl + 1);
      } else {
        rep.text = std::move(rest);
      }
    }
  }
  return reports;
}

// Bytes of a float vector and back (parameters travel through the pipes).
inline std::string bytes_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}
inline std::vector<float> floats_of(const std::string& s) {
  std::vector<float> v(s.size() / sizeof(float));
  std::memcpy(v.data(), s.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace testing_workers
}  // namespace mr

// At the top of every multi-process test: Gloo is needed, and fork() is safe
// only while this process has a single thread.
#define MR_SKIP_UNLESS_WORKERS_CAN_RUN()                                                    \
  do {                                                                                      \
    if (!::mr::built_with_gloo()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";   \
    const int threads_ = ::mr::thread_count();                                              \
    if (threads_ != 1)                                                                      \
      GTEST_SKIP() << "this process has " << threads_                                       \
                   << " threads (left by earlier tests): forking worker processes is safe " \
                      "only single-threaded; run this test alone (ctest does) or with "     \
                      "--gtest_filter='WorkerGroup*'";                                      \
  } while (0)
