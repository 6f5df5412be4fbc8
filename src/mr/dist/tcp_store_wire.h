// The store's wire format and the socket helpers that its server
// (dist/tcp_store.cpp) and its client (dist/tcp_store_client.cpp) share;
// private to those two files.
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
#pragma once

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace mr {
namespace store_wire {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxFrame = 64u << 20;  // 64 MiB: a longer frame is malformed

enum Op : uint8_t {
  kHello = 1,    // who -> ok
  kSet = 2,      // key, value -> ok
  kGet = 3,      // key -> ok + value | absent
  kCheck = 4,    // u32 n, n keys -> ok + n presence bytes
  kAdd = 5,      // key, i64 delta -> ok + i64 | failed + message
  kLost = 6,     // -> ok + u32 n, n strings
  kIdle = 7,     // who -> ok + i64 microseconds (-1: never connected)
  kGoodbye = 8,  // -> ok
  kErase = 9,    // key -> ok (an absent key too)
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

inline std::string endpoint(const std::string& host, int port) {
  std::ostringstream os;
  if (host.find(':') != std::string::npos) {
    os << '[' << host << "]:" << port;
  } else {
    os << (host.empty() ? "*" : host) << ':' << port;
  }
  return os.str();
}

inline std::string errno_text(int err) { return std::strerror(err); }

inline void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

inline void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// ---- frame encoding -------------------------------------------------------------

inline void put_u32(std::vector<char>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}
inline void put_i64(std::vector<char>& out, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<char>((u >> s) & 0xff));
}
inline void put_bytes(std::vector<char>& out, const char* data, size_t n) {
  put_u32(out, static_cast<uint32_t>(n));
  out.insert(out.end(), data, data + n);
}
inline void put_str(std::vector<char>& out, const std::string& s) {
  put_bytes(out, s.data(), s.size());
}

inline uint32_t read_u32(const char* p) {
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

// A request frame for `op` with room for its length; seal() fills that in.
inline std::vector<char> request(Op op) {
  std::vector<char> f;
  put_u32(f, 0);
  f.push_back(static_cast<char>(op));
  return f;
}

// Writes the body length of a finished frame into its first 4 bytes.
inline void seal(std::vector<char>& f) {
  const auto len = static_cast<uint32_t>(f.size() - 4);
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((len >> (24 - 8 * i)) & 0xff);
}

// getaddrinfo()'s list, freed once.
struct AddrInfoList {
  addrinfo* head = nullptr;
  ~AddrInfoList() {
    if (head) ::freeaddrinfo(head);
  }
};

}  // namespace store_wire
}  // namespace mr
