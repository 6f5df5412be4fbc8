// The chief's rendezvous store (dist/tcp_store.h) on plain POSIX sockets.
//
// Wire format. Every message, both ways, is a frame: a 4-byte big-endian body
// length, then the body. A request body is an op byte and its fields; an answer
// body is a status byte and its fields. Fields: a string is a 4-byte
// big-endian length and its bytes (any bytes, '\0' included); an integer is 8
// bytes big-endian (two's complement). A body of 0 bytes or of more than
// kMaxFrame bytes is malformed, and so is a body whose fields do not add up to
// its length exactly.
//
// The first request of a connection is kHello (its `who`); the server answers
// every request at once, so a GET of an absent key answers kAbsent and the
// client polls. A counter (add) is stored as its decimal text, so get() of a
// counter reads e.g. "4000".
#include "dist/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

#include "core/error.h"

namespace mr {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxFrame = 64u << 20;  // 64 MiB: a longer frame is malformed

enum Op : uint8_t {
  kHello = 1,    // who -> ok
  kSet = 2,      // key, value -> ok
  kGet = 3,      // key -> ok + value | absent
  kCheck = 4,    // u32 n, n keys -> ok + n presence bytes
  kAdd = 5,      // key, i64 delta -> ok + i64 | error + message
  kLost = 6,     // -> ok + u32 n, n strings
  kIdle = 7,     // who -> ok + i64 microseconds (-1: never connected)
  kGoodbye = 8,  // -> ok
};
enum Status : uint8_t { kOk = 0, kAbsent = 1, kFailed = 2 };

// An owned file descriptor: closed exactly once, by its last owner.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

std::string endpoint(const std::string& host, int port) {
  std::ostringstream os;
  if (host.find(':') != std::string::npos) {
    os << '[' << host << "]:" << port;
  } else {
    os << (host.empty() ? "*" : host) << ':' << port;
  }
  return os.str();
}

std::string errno_text(int err) { return std::strerror(err); }

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// ---- frame encoding -------------------------------------------------------------

void put_u32(std::vector<char>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}
void put_i64(std::vector<char>& out, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<char>((u >> s) & 0xff));
}
void put_bytes(std::vector<char>& out, const char* data, size_t n) {
  put_u32(out, static_cast<uint32_t>(n));
  out.insert(out.end(), data, data + n);
}
void put_str(std::vector<char>& out, const std::string& s) { put_bytes(out, s.data(), s.size()); }

uint32_t read_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Reads the fields of one body; any read past its end marks it malformed
// instead of throwing, so that the server's parser never crashes on garbage.
class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && p_ == end_; }
  uint8_t u8() {
    if (!need(1)) return 0;
    return static_cast<uint8_t>(*p_++);
  }
  uint32_t u32() {
    if (!need(4)) return 0;
    const uint32_t v = read_u32(p_);
    p_ += 4;
    return v;
  }
  int64_t i64() {
    if (!need(8)) return 0;
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(p_[i]);
    p_ += 8;
    return static_cast<int64_t>(u);
  }
  std::string str() {
    const uint32_t n = u32();
    if (!need(n)) return {};
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  std::vector<char> bytes() {
    const uint32_t n = u32();
    if (!need(n)) return {};
    std::vector<char> v(p_, p_ + n);
    p_ += n;
    return v;
  }

 private:
  bool need(size_t n) {
    if (ok_ && static_cast<size_t>(end_ - p_) >= n) return true;
    ok_ = false;
    return false;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

// Strict decimal int64 ("-12", never "12x", " 12" or an overflow).
bool parse_int64(const std::vector<char>& text, int64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  size_t i = 0;
  const bool neg = text[0] == '-';
  if (neg) i = 1;
  if (i == text.size()) return false;
  int64_t v = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return false;
    const int d = c - '0';
    if (__builtin_mul_overflow(v, 10, &v)) return false;
    if (neg ? __builtin_sub_overflow(v, d, &v) : __builtin_add_overflow(v, d, &v)) return false;
  }
  *out = v;
  return true;
}

struct AddrInfoList {
  addrinfo* head = nullptr;
  ~AddrInfoList() {
    if (head) ::freeaddrinfo(head);
  }
};

}  // namespace

// ==== server =======================================================================

// Everything below is touched by the serving thread only, except `wake` (the
// destructor writes to it) and `port` (fixed before the thread starts).
struct StoreServer::Impl {
  struct Client {
    UniqueFd fd;
    std::vector<char> in;   // bytes received, not yet parsed
    std::vector<char> out;  // answers not yet sent (while non-empty, reading pauses)
    size_t out_sent = 0;
    std::string who;
    bool greeted = false;
    bool goodbye = false;
    bool closed = false;
  };

  std::string host;
  int port = 0;
  UniqueFd listener;
  UniqueFd wake_read, wake_write;  // self-pipe: a byte on it stops the loop
  std::vector<Client> clients;
  std::unordered_map<std::string, std::vector<char>> data;
  std::map<std::string, Clock::time_point> last_seen;  // by who
  std::vector<std::string> lost;
  std::thread thread;

  void serve() noexcept;
  void loop() noexcept;
  void accept_all();
  void read_from(Client& c);
  void process(Client& c);
  void handle(Client& c, const char* body, size_t n);
  void flush(Client& c);
  void drop(Client& c);
};

namespace {

// Binds and listens on host:port. "" and "0.0.0.0" mean every interface: an
// IPv6 wildcard with IPV6_V6ONLY off (it takes IPv4 too), else IPv4's.
UniqueFd listen_on(const std::string& host, int port) {
  const bool any = host.empty() || host == "0.0.0.0";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  AddrInfoList list;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(any ? nullptr : host.c_str(), service.c_str(), &hints, &list.head);
  if (rc != 0) {
    fail(ErrorKind::io, "the store could not listen on ", endpoint(host, port), " (",
         ::gai_strerror(rc), ")");
  }
  std::vector<addrinfo*> order;
  for (addrinfo* a = list.head; a; a = a->ai_next) order.push_back(a);
  if (any) {
    std::stable_partition(order.begin(), order.end(),
                          [](const addrinfo* a) { return a->ai_family == AF_INET6; });
  }
  int last_err = 0;
  for (addrinfo* a : order) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      last_err = errno;
      continue;
    }
    int one = 1, zero = 0;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->ai_family == AF_INET6 && any) {
      ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), 128) != 0) {
      last_err = errno;
      continue;
    }
    set_nonblocking(fd.get());
    return fd;
  }
  fail(ErrorKind::io, "the store could not listen on ", endpoint(host, port), " (",
       last_err ? errno_text(last_err) : std::string("no address"), ")");
}

}  // namespace

StoreServer::StoreServer(const std::string& host, int port) : impl_(std::make_unique<Impl>()) {
  MR_CHECK(port >= 0 && port <= 65535, value, "StoreServer: `port` must be in [0, 65535], not ",
           port);
  impl_->host = host;
  impl_->listener = listen_on(host, port);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(impl_->listener.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  impl_->port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                 : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    fail(ErrorKind::io, "the store on ", endpoint(host, impl_->port),
         " could not create its wake-up pipe (", errno_text(errno), ")");
  }
  impl_->wake_read = UniqueFd(fds[0]);
  impl_->wake_write = UniqueFd(fds[1]);
  Impl* impl = impl_.get();
  impl_->thread = std::thread([impl] { impl->serve(); });
}

StoreServer::~StoreServer() {
  const char byte = 1;
  // The pipe is non-blocking and the loop reads nothing from it: one byte is
  // enough, and a full pipe already means "stop".
  while (::write(impl_->wake_write.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  impl_->thread.join();
  // Impl's destructor closes the listener and every client socket: clients
  // then see EOF or ECONNRESET ("stopped answering"), never a hang.
}

int StoreServer::port() const { return impl_->port; }

void StoreServer::Impl::serve() noexcept {
  loop();
  // However the loop ended, every client sees its connection close at once
  // ("stopped answering") rather than wait out its request timeout.
  clients.clear();
  listener.reset();
}

void StoreServer::Impl::loop() noexcept {
  std::vector<pollfd> fds;
  for (;;) {
    try {
      clients.erase(
          std::remove_if(clients.begin(), clients.end(), [](const Client& c) { return c.closed; }),
          clients.end());
      fds.clear();
      fds.push_back({wake_read.get(), POLLIN, 0});
      fds.push_back({listener.get(), POLLIN, 0});
      for (const Client& c : clients) {
        // While answers wait to go out, the client's requests wait too: a
        // client that never reads cannot make the server buffer without end.
        fds.push_back({c.fd.get(), static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      }
      const int n = ::poll(fds.data(), fds.size(), -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        return;  // cannot happen with valid fds; clients then see the store stop
      }
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) accept_all();
      // accept_all() appends clients after the polled ones: index by the poll.
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        Client& c = clients[i - 2];
        if (fds[i].revents & POLLOUT) {
          flush(c);
          if (!c.closed && c.out.empty()) process(c);
        } else {
          read_from(c);
        }
      }
    } catch (...) {
      // Out of memory (the only thing that throws here): the store stops, and
      // its clients get "stopped answering" instead of a crashed process.
      return;
    }
  }
}

void StoreServer::Impl::accept_all() {
  for (;;) {
    const int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN, or a connection reset before accept: nothing to serve
    set_nodelay(fd);
    Client c;
    c.fd = UniqueFd(fd);
    clients.push_back(std::move(c));
  }
}

void StoreServer::Impl::read_from(Client& c) {
  // One read per wake-up keeps the loop fair between clients.
  char buf[1 << 16];
  const ssize_t got = ::recv(c.fd.get(), buf, sizeof buf, 0);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    drop(c);  // ECONNRESET and kin
    return;
  }
  if (got == 0) {
    drop(c);  // EOF: every complete frame before it was processed already
    return;
  }
  c.in.insert(c.in.end(), buf, buf + got);
  process(c);
}

// Answers the complete frames in c.in, in order, until one answer cannot be
// sent at once (the rest waits for POLLOUT).
void StoreServer::Impl::process(Client& c) {
  size_t pos = 0;
  while (!c.closed && c.out.empty() && c.in.size() - pos >= 4) {
    const uint32_t len = read_u32(c.in.data() + pos);
    if (len == 0 || len > kMaxFrame) {
      drop(c);
      return;
    }
    if (c.in.size() - pos - 4 < len) break;
    handle(c, c.in.data() + pos + 4, len);
    pos += 4 + size_t{len};
    if (!c.closed) flush(c);
  }
  if (!c.closed) c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(pos));
}

void StoreServer::Impl::handle(Client& c, const char* body, size_t n) {
  Reader r(body, n);
  const uint8_t op = r.u8();
  if (!c.greeted && op != kHello) {
    drop(c);
    return;
  }
  std::vector<char> answer;
  put_u32(answer, 0);  // the length, patched below
  switch (op) {
    case kHello: {
      std::string who = r.str();
      if (!r.done() || c.greeted) break;
      c.who = std::move(who);
      c.greeted = true;
      answer.push_back(kOk);
      break;
    }
    case kSet: {
      std::string key = r.str();
      std::vector<char> value = r.bytes();
      if (!r.done()) break;
      data[std::move(key)] = std::move(value);
      answer.push_back(kOk);
      break;
    }
    case kGet: {
      const std::string key = r.str();
      if (!r.done()) break;
      const auto it = data.find(key);
      if (it == data.end()) {
        answer.push_back(kAbsent);
      } else {
        answer.push_back(kOk);
        put_bytes(answer, it->second.data(), it->second.size());
      }
      break;
    }
    case kCheck: {
      const uint32_t count = r.u32();
      // Each key takes at least 4 bytes: a count the body cannot hold is garbage.
      if (!r.ok() || count > n / 4) break;
      std::vector<char> present(count);
      for (uint32_t i = 0; i < count; ++i) present[i] = data.count(r.str()) ? 1 : 0;
      if (!r.done()) break;
      answer.push_back(kOk);
      put_u32(answer, count);
      answer.insert(answer.end(), present.begin(), present.end());
      break;
    }
    case kAdd: {
      const std::string key = r.str();
      const int64_t delta = r.i64();
      if (!r.done()) break;
      std::vector<char>& slot = data[key];  // absent (or empty): 0
      int64_t value = 0;
      std::string problem;
      if (!slot.empty() && !parse_int64(slot, &value)) {
        problem = "its value is not an integer";
      } else if (__builtin_add_overflow(value, delta, &value)) {
        problem = "the sum overflows a 64-bit integer";
      }
      if (!problem.empty()) {
        answer.push_back(kFailed);
        put_str(answer, problem);
        break;
      }
      const std::string text = std::to_string(value);
      slot.assign(text.begin(), text.end());
      answer.push_back(kOk);
      put_i64(answer, value);
      break;
    }
    case kLost: {
      if (!r.done()) break;
      answer.push_back(kOk);
      put_u32(answer, static_cast<uint32_t>(lost.size()));
      for (const std::string& w : lost) put_str(answer, w);
      break;
    }
    case kIdle: {
      const std::string who = r.str();
      if (!r.done()) break;
      const auto it = last_seen.find(who);
      int64_t micros = -1;
      if (it != last_seen.end()) {
        micros = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - it->second)
                     .count();
      }
      answer.push_back(kOk);
      put_i64(answer, micros);
      break;
    }
    case kGoodbye: {
      if (!r.done()) break;
      c.goodbye = true;
      answer.push_back(kOk);
      break;
    }
    default:
      break;
  }
  if (answer.size() == 4) {  // unknown op or fields that do not add up
    drop(c);
    return;
  }
  // After the request (an idle_seconds query reads the others' times, not its own).
  last_seen[c.who] = Clock::now();
  const auto len = static_cast<uint32_t>(answer.size() - 4);
  for (int i = 0; i < 4; ++i) answer[i] = static_cast<char>((len >> (24 - 8 * i)) & 0xff);
  if (c.out.empty()) {
    c.out = std::move(answer);
    c.out_sent = 0;
  } else {
    c.out.insert(c.out.end(), answer.begin(), answer.end());
  }
}

void StoreServer::Impl::flush(Client& c) {
  while (c.out_sent < c.out.size()) {
    const ssize_t sent =
        ::send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // POLLOUT resumes it
      drop(c);
      return;
    }
    c.out_sent += static_cast<size_t>(sent);
  }
  c.out.clear();
  c.out_sent = 0;
}

// Closes a client; one that introduced itself and left without goodbye is
// lost. A connection that never said who it is (a port scanner, garbage
// before any greeting) is not a worker, so it is not recorded.
void StoreServer::Impl::drop(Client& c) {
  if (c.closed) return;
  if (c.greeted && !c.goodbye) lost.push_back(c.who);
  c.fd.reset();
  c.in.clear();
  c.out.clear();
  c.closed = true;
}

// ==== client =======================================================================

struct StoreClient::Impl {
  std::string host;
  int port = 0;
  std::string who;
  std::string where;  // host:port, for messages
  UniqueFd fd;
  double request_timeout = 30.0;
  bool said_goodbye = false;
  std::string broken;  // why the connection is unusable ("" while it works)

  // One request and its answer (status byte first); throws Error(worker) when
  // the store does not answer within `timeout` seconds or the connection closes.
  std::vector<char> call(const std::vector<char>& frame, double timeout, const char* fn);
  std::vector<bool> presence(const std::vector<std::string>& keys);
  void usable(const char* fn) const;
  [[noreturn]] void stopped(const std::string& why);
};

namespace {

double seconds_left(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

Clock::time_point deadline_after(double seconds) {
  // Clamped so that a huge timeout (Inf) does not overflow the clock.
  seconds = std::min(std::max(seconds, 0.0), 1e9);
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Waits for `events` on fd until the deadline: 1 ready, 0 timed out, -1 error.
// It looks at least once, so that what is ready already (a refused loopback
// connect, an answer) counts even when the deadline has just passed.
int wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const double left = seconds_left(deadline);
    pollfd p{fd, events, 0};
    const int ms = left <= 0 ? 0 : static_cast<int>(std::min(left * 1000.0 + 1.0, 1e9));
    const int n = ::poll(&p, 1, ms);
    if (n > 0) return 1;
    if (n < 0 && errno != EINTR) return -1;
    if (n == 0 && left <= 0) return 0;
  }
}

void sleep_for(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

std::string format_seconds(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

std::vector<char> request(Op op) {
  std::vector<char> f;
  put_u32(f, 0);
  f.push_back(static_cast<char>(op));
  return f;
}

void seal(std::vector<char>& f) {
  const auto len = static_cast<uint32_t>(f.size() - 4);
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((len >> (24 - 8 * i)) & 0xff);
}

// One non-blocking connect attempt to any address of host:port, bounded by the
// deadline; the connected socket, or an empty one with *err set.
UniqueFd try_connect(const std::string& host, int port, Clock::time_point deadline,
                     std::string* err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  AddrInfoList list;
  const std::string service = std::to_string(port);
  const int rc =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &list.head);
  if (rc != 0) {
    *err = ::gai_strerror(rc);  // a name not resolvable yet is retried too
    return UniqueFd();
  }
  for (addrinfo* a = list.head; a; a = a->ai_next) {
    UniqueFd fd(
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (!fd) {
      *err = errno_text(errno);
      continue;
    }
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        *err = errno_text(errno);
        continue;
      }
      const int ready = wait_fd(fd.get(), POLLOUT, deadline);
      if (ready <= 0) {
        *err = ready == 0 ? "connect did not complete" : errno_text(errno);
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof so_error;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error != 0) {
        *err = errno_text(so_error);
        continue;
      }
    }
    set_nodelay(fd.get());
    return fd;
  }
  return UniqueFd();
}

}  // namespace

void StoreClient::Impl::stopped(const std::string& why) {
  broken = why;
  fd.reset();
  fail(ErrorKind::worker, "the chief's store at ", where, " stopped answering (", why, ")");
}

void StoreClient::Impl::usable(const char* fn) const {
  MR_CHECK(!said_goodbye, internal, "StoreClient::", fn, "() called after goodbye()");
  if (!broken.empty()) {
    fail(ErrorKind::worker, "the chief's store at ", where, " stopped answering (", broken, ")");
  }
}

std::vector<char> StoreClient::Impl::call(const std::vector<char>& frame, double timeout,
                                          const char* fn) {
  usable(fn);
  const Clock::time_point deadline = deadline_after(timeout);
  const std::string late = "no answer within " + format_seconds(timeout) + " s";
  size_t sent = 0;
  while (sent < frame.size()) {
    const int ready = wait_fd(fd.get(), POLLOUT, deadline);
    if (ready == 0) stopped(late);
    if (ready < 0) stopped(errno_text(errno));
    const ssize_t n = ::send(fd.get(), frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      stopped(errno == EPIPE ? std::string("the connection closed") : errno_text(errno));
    }
    sent += static_cast<size_t>(n);
  }
  // The answer: its 4-byte length, then its body.
  std::vector<char> head(4), body;
  auto receive = [&](std::vector<char>& into) {
    size_t got = 0;
    while (got < into.size()) {
      const int ready = wait_fd(fd.get(), POLLIN, deadline);
      if (ready == 0) stopped(late);
      if (ready < 0) stopped(errno_text(errno));
      const ssize_t n = ::recv(fd.get(), into.data() + got, into.size() - got, 0);
      if (n == 0) stopped("the connection closed");
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        stopped(errno == ECONNRESET ? std::string("the connection closed") : errno_text(errno));
      }
      got += static_cast<size_t>(n);
    }
  };
  receive(head);
  const uint32_t len = read_u32(head.data());
  if (len == 0 || len > kMaxFrame + 64) stopped("a malformed answer");
  body.resize(len);
  receive(body);
  return body;
}

StoreClient::StoreClient(const std::string& host, int port, double connect_timeout,
                         const std::string& who)
    : impl_(std::make_unique<Impl>()) {
  MR_CHECK(port > 0 && port <= 65535, value, "StoreClient: `port` must be in [1, 65535], not ",
           port);
  Impl& s = *impl_;
  s.host = host;
  s.port = port;
  s.who = who;
  s.where = endpoint(host.empty() ? std::string("localhost") : host, port);
  const Clock::time_point t0 = Clock::now();
  const Clock::time_point deadline = deadline_after(connect_timeout);
  std::string last_error = "no attempt";
  double backoff = 0.05;
  std::vector<char> hello = request(kHello);
  put_str(hello, who);
  seal(hello);
  for (;;) {
    s.fd = try_connect(host, port, deadline, &last_error);
    if (s.fd) {
      // The greeting is part of reaching the store: a listener that is not
      // answering (or closes) is retried like a refused connection. It gets
      // at least 1 s, so a connect at the very end of the deadline can finish.
      try {
        s.broken.clear();
        const std::vector<char> answer = s.call(hello, std::max(seconds_left(deadline), 1.0), "");
        if (answer.size() == 1 && answer[0] == kOk) return;
        last_error = "the listener there is not a mirrored store";
      } catch (const Error& e) {
        last_error = std::string("connected, but: ") + e.what();
      }
      s.fd.reset();
      s.broken.clear();
    }
    const double left = seconds_left(deadline);
    if (left <= 0) break;
    sleep_for(std::min(backoff, left));
    backoff = std::min(backoff * 2, 0.2);
  }
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  std::ostringstream waited_text;
  waited_text.precision(3);
  waited_text << waited;
  fail(ErrorKind::timeout, "could not reach the chief's store at ", s.where, " within ",
       waited_text.str(), " s (", last_error, ")");
}

StoreClient::~StoreClient() { goodbye(); }

void StoreClient::set(const std::string& key, const std::vector<char>& value) {
  MR_CHECK(key.size() + value.size() <= kMaxFrame - 16, value, "StoreClient::set('", key,
           "'): the key and value take ", key.size() + value.size(),
           " bytes; the store takes at most ", kMaxFrame - 16, " per request");
  std::vector<char> f = request(kSet);
  f.reserve(4 + 1 + 8 + key.size() + value.size());
  put_str(f, key);
  put_bytes(f, value.data(), value.size());
  seal(f);
  const std::vector<char> a = impl_->call(f, impl_->request_timeout, "set");
  if (a.size() != 1 || a[0] != kOk) impl_->stopped("a malformed answer");
}

std::vector<char> StoreClient::get(const std::string& key, double timeout) {
  MR_CHECK(key.size() <= kMaxFrame - 16, value, "StoreClient::get: the key is too long");
  std::vector<char> f = request(kGet);
  put_str(f, key);
  seal(f);
  const Clock::time_point deadline = deadline_after(timeout);
  double backoff = 0.001;
  for (;;) {
    const std::vector<char> a = impl_->call(f, impl_->request_timeout, "get");
    if (!a.empty() && a[0] == kOk) {
      Reader r(a.data() + 1, a.size() - 1);
      std::vector<char> value = r.bytes();
      if (!r.done()) impl_->stopped("a malformed answer");
      return value;
    }
    if (a.size() != 1 || a[0] != kAbsent) impl_->stopped("a malformed answer");
    const double left = seconds_left(deadline);
    if (left <= 0) {
      fail(ErrorKind::timeout, "get('", key, "') timed out after ", format_seconds(timeout),
           " s: the key did not appear in the chief's store at ", impl_->where);
    }
    sleep_for(std::min(backoff, left));
    backoff = std::min(backoff * 2, 0.05);
  }
}

// Which of `keys` the store holds now (one request).
std::vector<bool> StoreClient::Impl::presence(const std::vector<std::string>& keys) {
  Impl& s = *this;
  std::vector<char> f = request(kCheck);
  put_u32(f, static_cast<uint32_t>(keys.size()));
  for (const std::string& k : keys) put_str(f, k);
  MR_CHECK(f.size() <= kMaxFrame, value, "StoreClient::check: ", keys.size(),
           " keys take more than the ", kMaxFrame, " bytes a request may hold");
  seal(f);
  const std::vector<char> a = s.call(f, request_timeout, "check");
  Reader r(a.data(), a.size());
  const uint8_t status = r.u8();
  const uint32_t n = r.u32();
  if (!r.ok() || status != kOk || n != keys.size() || a.size() != 5 + size_t{n}) {
    s.stopped("a malformed answer");
  }
  std::vector<bool> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = a[5 + i] != 0;
  return out;
}

bool StoreClient::check(const std::vector<std::string>& keys) {
  const std::vector<bool> p = impl_->presence(keys);
  return std::all_of(p.begin(), p.end(), [](bool b) { return b; });
}

void StoreClient::wait(const std::vector<std::string>& keys, double timeout,
                       const std::string& what,
                       const std::function<std::string(const std::string&)>& describe,
                       const std::function<void()>& on_poll) {
  const Clock::time_point deadline = deadline_after(timeout);
  Clock::time_point last_poll = Clock::now();
  double backoff = 0.001;
  for (;;) {
    const std::vector<bool> p = impl_->presence(keys);
    if (std::all_of(p.begin(), p.end(), [](bool b) { return b; })) return;
    if (on_poll && Clock::now() - last_poll >= std::chrono::milliseconds(100)) {
      on_poll();  // may throw: that ends the wait
      last_poll = Clock::now();
    }
    const double left = seconds_left(deadline);
    if (left <= 0) {
      std::string missing;
      for (size_t i = 0; i < keys.size(); ++i) {
        if (p[i]) continue;
        if (!missing.empty()) missing += ", ";
        missing += describe ? describe(keys[i]) : keys[i];
      }
      fail(ErrorKind::timeout, what, " timed out after ", format_seconds(timeout),
           " s waiting for ", missing);
    }
    sleep_for(std::min(backoff, left));  // <= 50 ms: on_poll stays on time
    backoff = std::min(backoff * 2, 0.05);
  }
}

int64_t StoreClient::add(const std::string& key, int64_t delta) {
  MR_CHECK(key.size() <= kMaxFrame - 16, value, "StoreClient::add: the key is too long");
  std::vector<char> f = request(kAdd);
  put_str(f, key);
  put_i64(f, delta);
  seal(f);
  const std::vector<char> a = impl_->call(f, impl_->request_timeout, "add");
  Reader r(a.data(), a.size());
  const uint8_t status = r.u8();
  if (status == kFailed) {
    const std::string problem = r.str();
    if (!r.done()) impl_->stopped("a malformed answer");
    fail(ErrorKind::value, "StoreClient::add('", key, "', ", delta, "): ", problem);
  }
  const int64_t value = r.i64();
  if (status != kOk || !r.done()) impl_->stopped("a malformed answer");
  return value;
}

std::vector<std::string> StoreClient::lost() {
  std::vector<char> f = request(kLost);
  seal(f);
  const std::vector<char> a = impl_->call(f, impl_->request_timeout, "lost");
  Reader r(a.data(), a.size());
  const uint8_t status = r.u8();
  const uint32_t n = r.u32();
  std::vector<std::string> out;
  // Each name takes at least 4 bytes: a count the answer cannot hold is garbage.
  if (r.ok() && n <= a.size() / 4) {
    out.reserve(n);
    for (uint32_t i = 0; i < n; ++i) out.push_back(r.str());
  }
  if (status != kOk || !r.done()) impl_->stopped("a malformed answer");
  return out;
}

double StoreClient::idle_seconds(const std::string& who) {
  std::vector<char> f = request(kIdle);
  put_str(f, who);
  seal(f);
  const std::vector<char> a = impl_->call(f, impl_->request_timeout, "idle_seconds");
  Reader r(a.data(), a.size());
  const uint8_t status = r.u8();
  const int64_t micros = r.i64();
  if (status != kOk || !r.done()) impl_->stopped("a malformed answer");
  return micros < 0 ? -1.0 : static_cast<double>(micros) * 1e-6;
}

void StoreClient::set_request_timeout(double seconds) {
  MR_CHECK(seconds > 0, value, "StoreClient::set_request_timeout: `seconds` must be > 0, not ",
           seconds);
  impl_->request_timeout = seconds;
}

// Best effort and never throws: a store that stopped answering has nobody
// left to tell. It waits for the server's acknowledgement (at most 2 s), so
// that the socket closes with nothing unread and the server has recorded the
// goodbye before it sees the connection close.
void StoreClient::goodbye() {
  Impl& s = *impl_;
  if (s.said_goodbye) return;
  if (s.broken.empty() && s.fd) {
    try {
      std::vector<char> f = request(kGoodbye);
      seal(f);
      s.call(f, std::min(s.request_timeout, 2.0), "goodbye");
    } catch (...) {
      // The server is gone or hung: closing is all that is left to do.
    }
  }
  s.said_goodbye = true;
  s.fd.reset();
}

}  // namespace mr
