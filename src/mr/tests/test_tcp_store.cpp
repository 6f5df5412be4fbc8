// The chief's rendezvous store (dist/tcp_store.h) on loopback: values, waits
// and their deadlines, atomic counters, connecting before the server exists,
// lost and idle clients, a server that dies or hangs, and garbage on the port.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "dist/tcp_store.h"

namespace mr {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

const char* kHost = "127.0.0.1";

std::vector<char> bytes(const std::string& s) { return std::vector<char>(s.begin(), s.end()); }

// The kind and message of the mr::Error that f throws (fails the test when f
// throws nothing).
template <typename F>
std::pair<ErrorKind, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  ADD_FAILURE() << "no mr::Error thrown";
  return {ErrorKind::internal, ""};
}

// A port that was free a moment ago (a server bound it, then let it go).
int free_port() {
  StoreServer s(kHost, 0);
  return s.port();
}

// Whether `lost` of the store lists `who` within `seconds` (the server notices
// a closed connection asynchronously).
bool becomes_lost(StoreClient& c, const std::string& who, double seconds) {
  const auto t0 = Clock::now();
  while (since(t0) < seconds) {
    const auto l = c.lost();
    if (std::find(l.begin(), l.end(), who) != l.end()) return true;
    sleep_ms(10);
  }
  return false;
}

// A raw TCP connection to 127.0.0.1:port (no store protocol).
int raw_connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed the raw connection within `seconds` (EOF or reset).
bool closed_by_peer(int fd, double seconds) {
  const auto t0 = Clock::now();
  char buf[256];
  while (since(t0) < seconds) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }
  return false;
}

TEST(TcpStore, SetGetRoundTripsBinaryEmptyAndLargeValues) {
  StoreServer server(kHost, 0);
  ASSERT_GT(server.port(), 0);
  StoreClient a(kHost, server.port(), 5.0, "a");
  StoreClient b(kHost, server.port(), 5.0, "b");

  std::vector<char> binary(256);
  std::iota(binary.begin(), binary.end(), 0);  // every byte value, '\0' included
  std::vector<char> big(1 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  const std::string binary_key("k\0ey", 4);

  a.set(binary_key, binary);
  a.set("empty", {});
  a.set("big", big);
  EXPECT_EQ(b.get(binary_key, 1.0), binary);
  EXPECT_EQ(b.get("empty", 1.0), std::vector<char>{});
  EXPECT_EQ(b.get("big", 1.0), big);
  EXPECT_TRUE(b.check({binary_key, "empty", "big"}));
  EXPECT_FALSE(b.check({"empty", "k"}));  // "k" is a prefix of the binary key, not a key
  EXPECT_TRUE(b.check({}));

  b.set("empty", bytes("now set"));  // set overwrites
  EXPECT_EQ(a.get("empty", 1.0), bytes("now set"));

  // erase() removes a key for every client; erasing an absent key is no error.
  a.erase("big");
  EXPECT_FALSE(b.check({"big"}));
  EXPECT_TRUE(b.check({"empty", binary_key}));
  EXPECT_NO_THROW(b.erase("big"));
  EXPECT_THROW(b.get("big", 0.05), Error);
}

TEST(TcpStore, GetWaitsForAValueSetLaterByAnotherThread) {
  StoreServer server(kHost, 0);
  StoreClient reader(kHost, server.port(), 5.0, "reader");
  const auto t0 = Clock::now();
  std::thread writer([&] {
    StoreClient w(kHost, server.port(), 5.0, "writer");
    sleep_ms(150);
    w.set("nccl/unique_id", bytes("id-bytes"));
  });
  const std::vector<char> v = reader.get("nccl/unique_id", 5.0);
  const double waited = since(t0);
  writer.join();
  EXPECT_EQ(v, bytes("id-bytes"));
  EXPECT_GE(waited, 0.14);
  EXPECT_LT(waited, 2.0);
}

TEST(TcpStore, GetTimeoutIsATimeoutErrorNamingTheKey) {
  StoreServer server(kHost, 0);
  StoreClient c(kHost, server.port(), 5.0, "c");
  const auto t0 = Clock::now();
  const auto [kind, msg] = error_of([&] { c.get("gloo/address/3", 0.2); });
  const double waited = since(t0);
  EXPECT_EQ(kind, ErrorKind::timeout);
  EXPECT_NE(msg.find("'gloo/address/3'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0.2 s"), std::string::npos) << msg;
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 1.0);
  c.set("after", bytes("x"));  // the client still works after a timeout
  EXPECT_EQ(c.get("after", 0.0), bytes("x"));
}

TEST(TcpStore, WaitListsExactlyTheMissingKeysThroughDescribe) {
  StoreServer server(kHost, 0);
  StoreClient c(kHost, server.port(), 5.0, "chief");
  c.set("worker/0", bytes("10.0.0.1:2222"));
  c.set("worker/2", bytes("10.0.0.3:2222"));
  const std::vector<std::string> keys = {"worker/0", "worker/1", "worker/2", "worker/3"};
  auto describe = [](const std::string& k) { return "worker " + k.substr(7) + " (a host)"; };
  const auto t0 = Clock::now();
  const auto [kind, msg] = error_of([&] { c.wait(keys, 0.25, "the rendezvous", describe); });
  EXPECT_EQ(kind, ErrorKind::timeout);
  EXPECT_EQ(msg,
            "the rendezvous timed out after 0.25 s waiting for worker 1 (a host), worker 3 (a "
            "host)");
  EXPECT_GE(since(t0), 0.25);
  // Without describe, the keys themselves.
  const auto [kind2, msg2] = error_of([&] { c.wait({"worker/0", "x"}, 0.0, "start"); });
  EXPECT_EQ(kind2, ErrorKind::timeout);
  EXPECT_EQ(msg2, "start timed out after 0 s waiting for x");

  // Keys that appear while waiting end the wait.
  std::thread late([&] {
    StoreClient w(kHost, server.port(), 5.0, "late");
    sleep_ms(100);
    w.set("worker/1", {});
    w.set("worker/3", {});
  });
  c.wait(keys, 5.0, "the rendezvous", describe);
  late.join();
  EXPECT_TRUE(c.check(keys));
}

TEST(TcpStore, OnPollIsCalledAboutEvery100msAndItsExceptionStopsTheWait) {
  StoreServer server(kHost, 0);
  StoreClient c(kHost, server.port(), 5.0, "c");
  int polls = 0;
  const auto t0 = Clock::now();
  EXPECT_THROW(c.wait({"never"}, 10.0, "the rendezvous", nullptr,
                      [&] {
                        if (++polls == 3) throw std::runtime_error("worker 2 died");
                      }),
               std::runtime_error);
  const double waited = since(t0);
  EXPECT_EQ(polls, 3);
  EXPECT_GE(waited, 0.29);  // three calls, >= 100 ms apart
  EXPECT_LT(waited, 1.5);   // far from the 10 s deadline
  // A wait that ends at once calls nothing.
  c.set("k", {});
  c.wait({"k"}, 1.0, "w", nullptr, [] { FAIL() << "on_poll called"; });
}

TEST(TcpStore, AddIsAtomicAcrossFourClientsInFourThreads) {
  StoreServer server(kHost, 0);
  constexpr int kThreads = 4, kEach = 1000;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      StoreClient c(kHost, server.port(), 5.0, "adder " + std::to_string(t));
      for (int i = 0; i < kEach; ++i) seen[t].push_back(c.add("count", 1));
    });
  }
  for (auto& th : threads) th.join();
  StoreClient c(kHost, server.port(), 5.0, "reader");
  EXPECT_EQ(c.add("count", 0), kThreads * kEach);
  EXPECT_EQ(c.get("count", 0.0), bytes("4000"));  // counters are decimal text
  // Every increment returned a distinct value: 1..4000, each exactly once.
  std::vector<int64_t> all;
  for (const auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(kThreads * kEach);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(all, expected);

  EXPECT_EQ(c.add("neg", -5), -5);
  EXPECT_EQ(c.add("neg", 2), -3);
  c.set("text", bytes("12x"));
  const auto [kind, msg] = error_of([&] { c.add("text", 1); });
  EXPECT_EQ(kind, ErrorKind::value);
  EXPECT_NE(msg.find("not an integer"), std::string::npos) << msg;
  c.set("max", bytes("9223372036854775807"));
  EXPECT_EQ(error_of([&] { c.add("max", 1); }).first, ErrorKind::value);
  EXPECT_EQ(c.get("max", 0.0), bytes("9223372036854775807"));  // unchanged
}

TEST(TcpStore, ClientStartedBeforeTheServerConnectsWhenItAppears) {
  const int port = free_port();
  std::unique_ptr<StoreServer> server;
  std::thread chief([&] {
    sleep_ms(300);
    server = std::make_unique<StoreServer>(kHost, port);
  });
  const auto t0 = Clock::now();
  StoreClient early(kHost, port, 5.0, "worker 1");
  const double waited = since(t0);
  chief.join();  // the client's greeting was answered: the server exists
  ASSERT_TRUE(server);
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 2.0);
  early.set("k", bytes("v"));
  StoreClient other(kHost, port, 1.0, "chief");
  EXPECT_EQ(other.get("k", 1.0), bytes("v"));
}

TEST(TcpStore, ConnectTimeoutNamesHostPortAndTheSecondsWaited) {
  const int port = free_port();
  const auto t0 = Clock::now();
  const auto [kind, msg] = error_of([&] { StoreClient c(kHost, port, 0.3, "worker 1"); });
  const double waited = since(t0);
  EXPECT_EQ(kind, ErrorKind::timeout);
  const std::string where = std::string(kHost) + ":" + std::to_string(port);
  EXPECT_NE(msg.find("could not reach the chief's store at " + where + " within 0.3"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("refused"), std::string::npos) << msg;  // the last system error
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 1.5);
}

TEST(TcpStore, ListeningOnATakenPortIsAnIoErrorNamingIt) {
  StoreServer first(kHost, 0);
  const auto [kind, msg] = error_of([&] { StoreServer second(kHost, first.port()); });
  EXPECT_EQ(kind, ErrorKind::io);
  EXPECT_NE(msg.find(std::string(kHost) + ":" + std::to_string(first.port())), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("in use"), std::string::npos) << msg;
}

TEST(TcpStore, EveryInterfaceServesLoopbackClients) {
  StoreServer server("", 0);
  StoreClient v4(kHost, server.port(), 2.0, "v4");
  v4.set("k", bytes("v"));
  StoreClient by_name("localhost", server.port(), 2.0, "by name");
  EXPECT_EQ(by_name.get("k", 1.0), bytes("v"));
}

TEST(TcpStore, ServesIpv6LoopbackAndWritesItsAddressInBrackets) {
  std::unique_ptr<StoreServer> server;
  try {
    server = std::make_unique<StoreServer>("::1", 0);
  } catch (const Error& e) {
    GTEST_SKIP() << "no IPv6 loopback on this machine: " << e.what();
  }
  StoreClient c("::1", server->port(), 2.0, "v6");
  c.set("k", bytes("v"));
  EXPECT_EQ(c.get("k", 1.0), bytes("v"));
  const auto [kind, msg] = error_of([&] { c.get("absent", 0.0); });
  EXPECT_EQ(kind, ErrorKind::timeout);
  EXPECT_NE(msg.find("[::1]:" + std::to_string(server->port())), std::string::npos) << msg;
}

TEST(TcpStore, AValueOverTheFrameLimitIsRefusedBeforeItIsSent) {
  StoreServer server(kHost, 0);
  StoreClient c(kHost, server.port(), 2.0, "w");
  const std::vector<char> huge(size_t{64} << 20);  // 64 MiB: no room left for the key
  const auto [kind, msg] = error_of([&] { c.set("k", huge); });
  EXPECT_EQ(kind, ErrorKind::value);
  EXPECT_NE(msg.find("StoreClient::set('k')"), std::string::npos) << msg;
  c.set("k", std::vector<char>(size_t{1} << 20, 'x'));  // the connection is intact
  EXPECT_EQ(c.get("k", 1.0).size(), size_t{1} << 20);
}

// A worker that dies (here: a child process that exits without running any
// destructor, so its socket closes with no goodbye) is lost; workers that say
// goodbye, explicitly or from their destructor, are not.
TEST(TcpStore, LostListsAClientThatDiedWithoutGoodbyeAndNoOther) {
  StoreServer server(kHost, 0);
  StoreClient chief(kHost, server.port(), 5.0, "chief");
  {
    StoreClient polite(kHost, server.port(), 5.0, "w2");  // destructor says goodbye
    polite.set("w2", {});
  }
  StoreClient explicit_bye(kHost, server.port(), 5.0, "w3");
  explicit_bye.goodbye();
  explicit_bye.goodbye();  // idempotent
  EXPECT_EQ(error_of([&] { explicit_bye.set("k", {}); }).first, ErrorKind::internal);

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = 1;
    try {
      StoreClient dying(kHost, server.port(), 5.0, "w1");
      dying.set("w1 was here", {});
      rc = 0;
      ::_exit(rc);  // no destructor: no goodbye
    } catch (...) {
    }
    ::_exit(rc);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(chief.check({"w1 was here"}));
  EXPECT_TRUE(becomes_lost(chief, "w1", 2.0));
  sleep_ms(50);
  EXPECT_EQ(chief.lost(), std::vector<std::string>{"w1"});  // not w2, not w3
}

TEST(TcpStore, IdleSecondsGrowsWhileAClientIsSilentAndIsNegativeForAStranger) {
  StoreServer server(kHost, 0);
  StoreClient quiet(kHost, server.port(), 5.0, "worker 1");
  StoreClient chief(kHost, server.port(), 5.0, "chief");
  quiet.set("k", {});
  const double first = chief.idle_seconds("worker 1");
  EXPECT_GE(first, 0.0);
  EXPECT_LT(first, 0.2);
  sleep_ms(300);
  const double later = chief.idle_seconds("worker 1");
  EXPECT_GE(later, first + 0.29);
  EXPECT_LT(later, 2.0);
  quiet.check({"k"});  // any request counts
  EXPECT_LT(chief.idle_seconds("worker 1"), 0.2);
  EXPECT_LT(chief.idle_seconds("worker 9"), 0.0);
}

TEST(TcpStore, ServerDestructionMakesABlockedGetThrowAWorkerErrorPromptly) {
  auto server = std::make_unique<StoreServer>(kHost, 0);
  const int port = server->port();
  StoreClient c(kHost, port, 5.0, "worker 1");
  std::pair<ErrorKind, std::string> error{ErrorKind::internal, ""};
  double waited = 0;
  std::thread blocked([&] {
    const auto t0 = Clock::now();
    error = error_of([&] { c.get("never", 20.0); });
    waited = since(t0);
  });
  sleep_ms(200);
  server.reset();
  blocked.join();
  EXPECT_EQ(error.first, ErrorKind::worker);
  EXPECT_NE(error.second.find("the chief's store at 127.0.0.1:" + std::to_string(port) +
                              " stopped answering"),
            std::string::npos)
      << error.second;
  EXPECT_LT(waited, 1.5);
  // The connection stays broken: later calls fail at once, the destructor does not hang.
  const auto t1 = Clock::now();
  EXPECT_EQ(error_of([&] { c.set("k", {}); }).first, ErrorKind::worker);
  EXPECT_LT(since(t1), 0.5);
}

// A chief that hangs (SIGSTOP): the store is alive but answers nothing, so a
// request fails after the request timeout with a worker error, not a hang.
TEST(TcpStore, AHungServerFailsARequestAfterTheRequestTimeout) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipe_fds[0]);
    try {
      StoreServer server(kHost, 0);
      const int port = server.port();
      if (::write(pipe_fds[1], &port, sizeof port) != sizeof port) ::_exit(1);
      for (;;) ::pause();  // serves until killed
    } catch (...) {
    }
    ::_exit(1);
  }
  // Kills and reaps the child however the test ends (an ASSERT returns early).
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  } reaper{pid};
  ::close(pipe_fds[1]);
  int port = 0;
  const bool got_port = ::read(pipe_fds[0], &port, sizeof port) == sizeof port;
  ::close(pipe_fds[0]);
  ASSERT_TRUE(got_port) << "the child's server did not start";

  StoreClient c(kHost, port, 5.0, "worker 1");
  c.set("k", bytes("v"));
  EXPECT_EQ(c.get("k", 1.0), bytes("v"));
  ::kill(pid, SIGSTOP);
  int stopped = 0;  // the signal is asynchronous: wait until the child really stopped
  ASSERT_EQ(::waitpid(pid, &stopped, WUNTRACED), pid);
  ASSERT_TRUE(WIFSTOPPED(stopped));
  c.set_request_timeout(0.3);
  const auto t0 = Clock::now();
  const auto [kind, msg] = error_of([&] { c.get("k", 5.0); });
  const double waited = since(t0);
  EXPECT_EQ(kind, ErrorKind::worker);
  EXPECT_NE(msg.find("stopped answering (no answer within 0.3 s)"), std::string::npos) << msg;
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 1.5);
  const auto t1 = Clock::now();
  c.goodbye();  // best effort: returns at once on a connection that is known broken
  EXPECT_LT(since(t1), 0.1);
}

TEST(TcpStore, MalformedFramesDropTheirSenderAndNothingElse) {
  StoreServer server(kHost, 0);
  StoreClient good(kHost, server.port(), 5.0, "good");
  good.set("k", bytes("v"));

  // Garbage, a frame claiming 2 GiB (refused at once, not awaited), an empty
  // frame and a request before any greeting: each sender is disconnected.
  const std::vector<std::string> junk = {
      std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
      std::string("\x7f\xff\xff\xff", 4) + "xyz",
      std::string("\0\0\0\0", 4),
      std::string("\0\0\0\x06\x03\0\0\0\x01", 9) + "k",
  };
  for (const std::string& bytes_out : junk) {
    const int fd = raw_connect(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, bytes_out.data(), bytes_out.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes_out.size()));
    EXPECT_TRUE(closed_by_peer(fd, 1.0));
    ::close(fd);
  }
  // A half frame then a close is no crash either.
  const int fd = raw_connect(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, "\0\0\0\x10\x02", 5, MSG_NOSIGNAL), 5);
  ::close(fd);

  EXPECT_EQ(good.get("k", 1.0), bytes("v"));
  StoreClient fresh(kHost, server.port(), 5.0, "fresh");
  fresh.set("k2", bytes("w"));
  EXPECT_EQ(good.get("k2", 1.0), bytes("w"));
  // Strangers that never said who they are are not workers: nobody is lost.
  EXPECT_TRUE(good.lost().empty());

  // A client that did introduce itself and then sends garbage is dropped and
  // lost. (This writes the greeting by hand: a 4-byte big-endian body length,
  // op 1, the name as a 4-byte length and its bytes; the answer is 1 byte.)
  const int greeted = raw_connect(server.port());
  ASSERT_GE(greeted, 0);
  const std::string hello("\0\0\0\x08\x01\0\0\0\x03raw", 12);
  ASSERT_EQ(::send(greeted, hello.data(), hello.size(), MSG_NOSIGNAL), 12);
  char answer[5];
  ASSERT_EQ(::recv(greeted, answer, 5, MSG_WAITALL), 5);
  EXPECT_EQ(std::string(answer, 5), std::string("\0\0\0\x01\0", 5));  // ok
  ASSERT_EQ(::send(greeted, "\0\0\0\x01\x7f", 5, MSG_NOSIGNAL), 5);   // op 127: none
  EXPECT_TRUE(closed_by_peer(greeted, 1.0));
  ::close(greeted);
  EXPECT_EQ(good.lost(), std::vector<std::string>{"raw"});
}

TEST(TcpStore, CallsAfterGoodbyeAndBadArgumentsAreClassedErrors) {
  EXPECT_EQ(error_of([] { StoreServer s(kHost, 70000); }).first, ErrorKind::value);
  EXPECT_EQ(error_of([] { StoreClient c(kHost, 0, 1.0, "w"); }).first, ErrorKind::value);
  StoreServer server(kHost, 0);
  StoreClient c(kHost, server.port(), 5.0, "w");
  EXPECT_EQ(error_of([&] { c.set_request_timeout(0); }).first, ErrorKind::value);
  EXPECT_EQ(error_of([&] { c.get("k", std::nan("")); }).first, ErrorKind::value);
  EXPECT_EQ(error_of([&] { c.wait({"k"}, -1.0, "w"); }).first, ErrorKind::value);
  const auto [kind0, msg0] = error_of([&] { StoreClient bad(kHost, server.port(), -1.0, "w"); });
  EXPECT_EQ(kind0, ErrorKind::value);
  EXPECT_NE(msg0.find("`connect_timeout`"), std::string::npos) << msg0;
  c.goodbye();
  const auto [kind, msg] = error_of([&] { c.get("k", 1.0); });
  EXPECT_EQ(kind, ErrorKind::internal);
  EXPECT_NE(msg.find("StoreClient::get() called after goodbye()"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mr
