// The rendezvous store of a multi-worker job: a small key-value server that
// the chief runs, reached over TCP by every worker (the chief included).
// Gloo brings no TCP store of its own (PyTorch writes its own TCPStore for the
// same reason); NCCL's unique id, Gloo's addresses, the workers' descriptions
// and the liveness of every worker travel through it.
//
// Invariants: the server never blocks on one client (a single poll() loop
// serves every connection; requests never wait server-side, the client polls
// instead); every client call has a deadline and throws mr::Error instead of
// hanging; a client whose connection closes without goodbye() is recorded as
// lost, so the survivors can name a worker that died.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mr {

class StoreServer {
 public:
  // Listens on host:port (port 0: any free port; host "" or "0.0.0.0": every
  // interface) and serves from its own thread until destroyed. Throws
  // Error(io) naming host:port and the system error when it cannot listen
  // (e.g. the port is taken).
  StoreServer(const std::string& host, int port);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One thread at a time uses a client (its calls are not synchronised);
// several clients may live in one process, e.g. one per thread that needs one.
class StoreClient {
 public:
  // Connects to host:port, retrying until `connect_timeout` seconds passed
  // (the chief may start after its workers). `who` names this client to the
  // server (e.g. "worker 1 (10.0.0.2:2222)"); it is what lost() reports.
  // Throws Error(timeout): "could not reach the chief's store at host:port
  // within N s (<last system error>)".
  StoreClient(const std::string& host, int port, double connect_timeout, const std::string& who);
  ~StoreClient();  // says goodbye (the server then does not count it as lost)
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::vector<char>& value);
  // Removes `key` (nothing happens when it is absent).
  void erase(const std::string& key);
  // The value of `key`, waiting for it up to `timeout` seconds (Error(timeout)
  // naming the key otherwise).
  std::vector<char> get(const std::string& key, double timeout);
  // Whether every key is present now (no wait).
  bool check(const std::vector<std::string>& keys);
  // Waits until every key is present. Every ~100 ms while waiting,
  // `on_poll` (when given) is called and may throw to stop the wait (a
  // liveness check). On timeout throws Error(timeout) with `what` and the
  // missing keys, each passed through `describe` when given (e.g. key
  // "worker/2" -> "worker 2 (host:port)").
  void wait(const std::vector<std::string>& keys, double timeout, const std::string& what,
            const std::function<std::string(const std::string&)>& describe = nullptr,
            const std::function<void()>& on_poll = nullptr);
  // Atomically adds `delta` to the integer counter `key` (absent: 0) and
  // returns the new value.
  int64_t add(const std::string& key, int64_t delta);
  // The `who` of every client whose connection closed without goodbye, in
  // the order the server noticed.
  std::vector<std::string> lost();
  // Server-side seconds since the client named `who` last sent any request
  // (< 0 when no such client ever connected); for liveness reports.
  double idle_seconds(const std::string& who);
  // Per-request deadline for set/add/check/lost/idle_seconds (a request the
  // server does not answer within it throws Error(worker) saying that the
  // chief's store stopped answering). Default 30 s.
  void set_request_timeout(double seconds);
  // Idempotent and never throws (a store that stopped answering is simply
  // left: it waits at most 2 s for the acknowledgement); after it every call
  // throws Error(internal).
  void goodbye();
  // Closes the connection without goodbye: the server counts this client as
  // lost, as if its process had died. Later calls throw.
  void hang_up();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mr
