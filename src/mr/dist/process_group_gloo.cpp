// The process group on Gloo's TCP transport (dist/process_group.h). Gloo has
// no TCP store, so rendezvous goes through the chief's store
// (dist/tcp_store.h) behind Gloo's Store interface.
//
// Gloo builds its send/receive descriptors (unbound buffers) per call; a
// training step all-reduces the same gradient ranges every time, so prepared
// options are kept per (buffer, length, type) and reused: after the first
// step no collective allocates (DESIGN.md, "nothing allocates inside a step").
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include "build_config.h"
#include "core/error.h"
#include "dist/process_group.h"
#include "dist/sigpipe_guard.h"
#include "dist/tcp_store.h"

#if MR_WITH_GLOO
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace mr {

bool built_with_gloo() { return MR_WITH_GLOO != 0; }

#if MR_WITH_GLOO
namespace {

std::chrono::milliseconds to_ms(double seconds) {
  const double ms = std::min(seconds * 1000.0, 1e12);
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(ms, 1.0)));
}

// "8", "0.5": a deadline as people write it.
std::string seconds_text(std::chrono::milliseconds t) {
  std::ostringstream os;
  os << static_cast<double>(t.count()) / 1000.0;
  return os.str();
}

// Gloo's Store on the chief's store. Gloo calls it from the thread that
// connects the group only.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  StoreAdapter(StoreClient& store, double timeout) : store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(key, data);
  }
  std::vector<char> get(const std::string& key) override { return store_.get(key, timeout_); }
  void wait(const std::vector<std::string>& keys) override {
    store_.wait(keys, timeout_, "connecting the workers' Gloo transport");
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    store_.wait(keys, std::chrono::duration<double>(t).count(),
                "connecting the workers' Gloo transport");
  }

 private:
  StoreClient& store_;
  double timeout_;
};

class GlooGroup final : public ProcessGroup {
 public:
  GlooGroup(StoreClient& store, const std::string& prefix, int rank, int size,
            const std::string& bind_host, double timeout)
      : rank_(rank), size_(size), timeout_(to_ms(timeout)) {
    // Gloo's I/O thread, started below, inherits the blocked SIGPIPE.
    SigpipeGuard no_sigpipe;
    gloo::transport::tcp::attr attr;
    const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
    if (iface != nullptr && *iface != '\0')
      attr.iface = iface;
    else if (!bind_host.empty())
      attr.hostname = bind_host;
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
      ctx->setTimeout(timeout_);
      StoreAdapter adapter(store, timeout);
      gloo::rendezvous::PrefixStore prefixed(prefix, adapter);
      ctx->connectFullMesh(prefixed, device_);
      context_ = std::move(ctx);
    } catch (const gloo::Exception& e) {
      fail(ErrorKind::worker, "could not connect the workers' Gloo transport (bind address '",
           bind_host.empty() ? std::string("host name") : bind_host, "'): ", e.what());
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "Gloo (TCP)"; }
  bool broken() const override { return !broken_.empty(); }

  void all_reduce_sum(float* buf, int64_t n) override { all_reduce(buf, n); }
  void all_reduce_sum(double* buf, int64_t n) override { all_reduce(buf, n); }

  void broadcast(float* buf, int64_t n, int root) override {
    MR_CHECK(root >= 0 && root < size_, internal, "broadcast root ", root, " is not a worker");
    run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(buf, static_cast<size_t>(n));
      opts.setRoot(root);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  void all_gather(const void* mine, size_t bytes, void* all) override {
    run("all-gather", [&] {
      std::memcpy(static_cast<char*>(all) + bytes * static_cast<size_t>(rank_), mine, bytes);
      gloo::AllgatherOptions opts(context_);
      opts.setOutput(static_cast<char*>(all), bytes * static_cast<size_t>(size_));
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    });
  }

  void barrier() override {
    run("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

  void set_timeout(double seconds) override {
    timeout_ = to_ms(seconds);
    context_->setTimeout(timeout_);
    std::lock_guard<std::mutex> lock(mu_);
    prepared_.clear();  // their timeouts were the old one
  }

 private:
  struct Prepared {
    const void* buf;
    int64_t n;
    size_t elem;
    std::unique_ptr<gloo::AllreduceOptions> opts;
  };

  template <typename T>
  void all_reduce(T* buf, int64_t n) {
    if (size_ == 1 || n == 0) return;
    const gloo::AllreduceOptions& opts = prepared(buf, n);
    run("all-reduce", [&] { gloo::allreduce(opts); });
  }

  template <typename T>
  const gloo::AllreduceOptions& prepared(T* buf, int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Prepared& p : prepared_)
      if (p.buf == buf && p.n == n && p.elem == sizeof(T)) return *p.opts;
    // A bounded cache: the step uses a handful of ranges; anything else
    // (metric totals, tests) is rare, and a full cache restarts.
    if (prepared_.size() >= 64) prepared_.clear();
    auto opts = std::make_unique<gloo::AllreduceOptions>(context_);
    opts->setOutput(buf, static_cast<size_t>(n));
    void (*fn)(void*, const void*, const void*, size_t) = &gloo::sum<T>;
    opts->setReduceFunction(fn);
    opts->setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts->setTimeout(timeout_);
    prepared_.push_back({buf, n, sizeof(T), std::move(opts)});
    return *prepared_.back().opts;
  }

  template <typename Op>
  void run(const char* what, Op&& op) {
    if (!broken_.empty())
      fail(ErrorKind::worker, "the workers' connection broke earlier (", broken_,
           "); every worker must be restarted");
    try {
      SigpipeGuard no_sigpipe;  // R's thread too, between steps
      op();
    } catch (const gloo::Exception& e) {
      const std::string msg = e.what();
      broken_ = std::string(what) + ": " + msg;
      const bool timed_out =
          msg.find("Timed out") != std::string::npos || msg.find("timed out") != std::string::npos;
      fail(timed_out ? ErrorKind::timeout : ErrorKind::worker, "the ", what,
           " between workers failed",
           timed_out ? " (deadline " + seconds_text(timeout_) + " s)" : "", ": ", msg);
    }
  }

  const int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  std::mutex mu_;
  std::vector<Prepared> prepared_;
  std::string broken_;
};

}  // namespace

std::unique_ptr<ProcessGroup> make_gloo_group(StoreClient& store, const std::string& prefix,
                                              int rank, int size, const std::string& bind_host,
                                              double timeout) {
  MR_CHECK(size >= 1 && rank >= 0 && rank < size, internal, "worker ", rank, " of ", size);
  return std::make_unique<GlooGroup>(store, prefix, rank, size, bind_host, timeout);
}

#else

std::unique_ptr<ProcessGroup> make_gloo_group(StoreClient&, const std::string&, int, int,
                                              const std::string&, double) {
  fail(ErrorKind::device,
       "this build of mirrored was compiled without Gloo, which multi-worker training on CPUs "
       "needs (install libgloo-dev, or set GLOO_HOME, and reinstall)");
}

#endif

}  // namespace mr
