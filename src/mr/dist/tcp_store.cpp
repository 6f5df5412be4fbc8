// The chief's rendezvous store, server side (dist/tcp_store.h): one thread
// runs a poll() loop over the listener, every client and a self-pipe that
// stops it. The wire format is in dist/tcp_store_wire.h.
#include "dist/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <thread>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "dist/tcp_store_wire.h"

namespace mr {

using namespace store_wire;  // NOLINT: this file's own protocol

namespace {

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

}  // namespace

// Everything below is touched by the serving thread only, except `wake_write`
// (the destructor writes to it) and `port` (fixed before the thread starts).
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
  put_u32(answer, 0);  // the length, filled in by seal()
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
    case kErase: {
      const std::string key = r.str();
      if (!r.done()) break;
      data.erase(key);
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
  seal(answer);
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

}  // namespace mr
