// The chief's rendezvous store, client side (dist/tcp_store.h): blocking
// calls on a non-blocking socket, each bounded by poll() and a deadline; the
// client polls for absent keys with a short backoff. The wire format is in
// dist/tcp_store_wire.h.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <sstream>
#include <thread>
#include <utility>

#include "core/error.h"
#include "dist/tcp_store.h"
#include "dist/tcp_store_wire.h"

namespace mr {

using namespace store_wire;  // NOLINT: this file's own protocol

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

// What a failed send/recv means to the user: the chief's side went away.
std::string why_closed(int err) {
  return err == EPIPE || err == ECONNRESET ? std::string("the connection closed") : errno_text(err);
}

std::string format_seconds(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// NaN or a negative number of seconds is a caller's bug, caught before it
// reaches the clock arithmetic.
void check_timeout(const char* fn, double seconds, const char* arg = "timeout") {
  MR_CHECK(seconds >= 0, value, "StoreClient::", fn, ": `", arg,
           "` must be a number of seconds >= 0, not ", seconds);
}

void check_key(const char* fn, const std::string& key) {
  MR_CHECK(key.size() <= kMaxFrame - 16, value, "StoreClient::", fn, ": the key takes ", key.size(),
           " bytes; the store takes at most ", kMaxFrame - 16);
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
      stopped(why_closed(errno));
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
        stopped(why_closed(errno));
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
  check_timeout("StoreClient", connect_timeout, "connect_timeout");
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

void StoreClient::erase(const std::string& key) {
  check_key("erase", key);
  std::vector<char> f = request(kErase);
  put_str(f, key);
  seal(f);
  const std::vector<char> a = impl_->call(f, impl_->request_timeout, "erase");
  if (a.size() != 1 || a[0] != kOk) impl_->stopped("a malformed answer");
}

std::vector<char> StoreClient::get(const std::string& key, double timeout) {
  check_timeout("get", timeout);
  check_key("get", key);
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
  std::vector<char> f = request(kCheck);
  put_u32(f, static_cast<uint32_t>(keys.size()));
  for (const std::string& k : keys) put_str(f, k);
  MR_CHECK(f.size() <= kMaxFrame, value, "StoreClient::check: ", keys.size(),
           " keys take more than the ", kMaxFrame, " bytes a request may hold");
  seal(f);
  const std::vector<char> a = call(f, request_timeout, "check");
  Reader r(a.data(), a.size());
  const uint8_t status = r.u8();
  const uint32_t n = r.u32();
  if (!r.ok() || status != kOk || n != keys.size() || a.size() != 5 + size_t{n}) {
    stopped("a malformed answer");
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
  check_timeout("wait", timeout);
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
  check_key("add", key);
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

void StoreClient::hang_up() {
  impl_->said_goodbye = true;
  impl_->fd.reset();
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
