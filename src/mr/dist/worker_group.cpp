#include "dist/worker_group.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

#include "build_config.h"
#include "core/json.h"
#include "dist/batch_split.h"
#include "dist/communicator.h"

namespace mr {

namespace {

constexpr double kBeatSeconds = 0.5;
// A worker not heard from for this long is reported as silent (hung,
// stopped or cut off): several missed heartbeats, well above scheduling
// jitter on a loaded machine.
constexpr double kSilentSeconds = 5.0;
// Requests to the store from the main client: a chief that stopped answering
// is reported within this.
constexpr double kRequestSeconds = 5.0;

std::vector<char> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<char>& v) { return {v.begin(), v.end()}; }

std::string own_host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

std::string encode(const WorkerInfo& w) {
  Json j = Json::object();
  j["host"] = w.host;
  j["pid"] = w.pid;
  j["replicas"] = w.replicas;
  j["gpu"] = w.gpu;
  j["gloo"] = w.gloo;
  j["nccl"] = w.nccl;
  return to_json(j);
}

WorkerInfo decode(const std::string& text, const std::string& who) {
  const Json j = parse_json(text, "the description " + who + " published");
  WorkerInfo w;
  try {
    w.host = j.at("host").get<std::string>();
    w.pid = j.at("pid").get<int64_t>();
    w.replicas = j.at("replicas").get<int>();
    w.gpu = j.at("gpu").get<bool>();
    w.gloo = j.at("gloo").get<bool>();
    w.nccl = j.at("nccl").get<bool>();
  } catch (const std::exception& e) {
    fail(ErrorKind::worker, "the description ", who, " published is not mirrored's (", e.what(),
         "): is it running another version of mirrored?");
  }
  return w;
}

}  // namespace

std::string WorkerGroup::who_main(int i) const { return "main:" + std::to_string(i); }
std::string WorkerGroup::who_beat(int i) const { return "beat:" + std::to_string(i); }

WorkerGroup::WorkerGroup(ClusterSpec spec, const WorkerGroupOptions& options)
    : spec_(std::move(spec)), options_(options) {
  MR_CHECK(spec_.size() >= 1 && spec_.index >= 0 && spec_.index < spec_.size(), value,
           "task index ", spec_.index, " is outside the cluster's ", spec_.size(), " workers");
  MR_CHECK(options_.local_replicas >= 1, value, "a worker needs at least one replica");
  MR_CHECK(options_.timeout > 0 && options_.rendezvous_timeout > 0, value,
           "deadlines must be positive");
  MR_CHECK(options_.implementation == "auto" || options_.implementation == "ring" ||
               options_.implementation == "nccl",
           value, "unknown communication implementation '", options_.implementation,
           "' (expected auto, ring or nccl)");
  if (spec_.is_chief()) server_ = std::make_unique<StoreServer>("", spec_.chief.port);
  // Connecting may wait for the chief up to the deadline; in slices of a
  // second, so that a cancel (Ctrl-C) stops it.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.rendezvous_timeout);
  for (;;) {
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    try {
      store_ = std::make_unique<StoreClient>(spec_.chief.host, spec_.chief.port,
                                             std::max(0.05, std::min(left, 1.0)), who_main(rank()));
      break;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::timeout) throw;
      if (options_.cancel != nullptr && options_.cancel->load())
        fail(ErrorKind::interrupted, "interrupted while waiting for ", spec_.describe(0));
      if (left <= 1.0)
        fail(ErrorKind::timeout, spec_.describe(0), " did not answer within ",
             options_.rendezvous_timeout, " s: ", e.what(), " (is the chief running?)");
    }
  }
  store_->set_request_timeout(kRequestSeconds);
  try {
    rendezvous();
  } catch (const Error& e) {
    // The others learn why through the store's error key, polled every
    // ~100 ms while they wait: the chief publishes its own failure there
    // (a worker that never came, a duplicated index seen first by another
    // worker) and its store outlives the failure a moment, so that every
    // worker stops with the same error instead of losing the store.
    if (server_) {
      try {
        std::lock_guard<std::mutex> lock(store_mu_);
        if (!store_->check({"error"}))
          store_->set("error", bytes_of(std::string(kind_name(e.kind())) + "\n" + e.what()));
        std::this_thread::sleep_for(std::chrono::seconds(1));
      } catch (...) {
      }
    }
    throw;
  }
  start_heartbeat();
}

WorkerGroup::~WorkerGroup() {
  try {
    leave();
  } catch (...) {
  }
  stop_.store(true);
  if (heartbeat_.joinable()) heartbeat_.join();
  group_.reset();
  store_.reset();
  server_.reset();
}

void WorkerGroup::leave() {
  std::lock_guard<std::mutex> lock(store_mu_);
  if (left_) return;
  left_ = true;
  try {
    if (is_chief() && size() > 1) {
      std::vector<std::string> keys;
      for (int i = 1; i < size(); ++i) keys.push_back("left/" + std::to_string(i));
      // Long enough for the others to read what the chief wrote last; not
      // the whole deadline, since a job that failed ends here too.
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration<double>(std::min(options_.timeout, 10.0));
      while (!store_->check(keys) && std::chrono::steady_clock::now() < deadline) {
        // A worker that died will never say it left.
        const std::vector<std::string> lost = store_->lost();
        bool waiting = false;
        for (int i = 1; i < size(); ++i)
          if (!store_->check({"left/" + std::to_string(i)}) &&
              std::find(lost.begin(), lost.end(), who_main(i)) == lost.end())
            waiting = true;
        if (!waiting) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } else if (!is_chief()) {
      store_->set("left/" + std::to_string(rank()), bytes_of("1"));
    }
  } catch (...) {
    // The chief is gone already: nothing to tell it.
  }
  stop_.store(true);
  if (heartbeat_.joinable()) heartbeat_.join();
  try {
    store_->goodbye();
  } catch (...) {
  }
}

void WorkerGroup::abandon(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(store_mu_);
    if (left_) return;
    left_ = true;
    try {
      store_->set("quit/" + std::to_string(rank()), bytes_of(reason));
    } catch (...) {
      // The chief is gone: the others learn it from its store.
    }
  }
  abandoned_.store(true);  // the heartbeat hangs up instead of saying goodbye
  stop_.store(true);
  if (heartbeat_.joinable()) heartbeat_.join();
  group_.reset();  // closes the Gloo pairs: a neighbour's receive fails now
  store_->hang_up();
}

// Set by a worker that finds the rendezvous impossible (a duplicated index),
// so that every worker stops with its message instead of waiting.
void WorkerGroup::check_error_key() {
  if (options_.cancel != nullptr && options_.cancel->load())
    fail(ErrorKind::interrupted, "interrupted while waiting for the other workers");
  if (!store_->check({"error"})) return;
  const std::string text = string_of(store_->get("error", kRequestSeconds));
  // "<kind>\n<message>" from the chief (its own failure, whatever its kind),
  // or a duplicated index's message (a value error).
  const size_t nl = text.find('\n');
  if (nl != std::string::npos) {
    for (ErrorKind k :
         {ErrorKind::value, ErrorKind::shape, ErrorKind::io, ErrorKind::device,
          ErrorKind::interrupted, ErrorKind::timeout, ErrorKind::worker, ErrorKind::internal})
      if (text.compare(0, nl, kind_name(k)) == 0) fail(k, text.substr(nl + 1));
  }
  fail(ErrorKind::value, text);
}

void WorkerGroup::rendezvous() {
  std::lock_guard<std::mutex> lock(store_mu_);
  const int n = size(), me = rank();
  if (store_->add("claim/" + std::to_string(me), 1) > 1) {
    const std::string msg = "two workers have the same task index: " + spec_.describe(me) +
                            " was claimed twice (check each worker's task index)";
    store_->set("error", bytes_of(msg));
    fail(ErrorKind::value, msg);
  }
  WorkerInfo mine;
  mine.host = own_host_name();
  mine.pid = static_cast<int64_t>(getpid());
  mine.replicas = options_.local_replicas;
  mine.gpu = options_.gpu;
  mine.gloo = built_with_gloo();
  mine.nccl = MR_WITH_NCCL != 0;
  store_->set("info/" + std::to_string(me), bytes_of(encode(mine)));
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back("info/" + std::to_string(i));
  store_->wait(
      keys, options_.rendezvous_timeout,
      "waiting for the cluster's " + std::to_string(n) + " workers",
      [&](const std::string& key) { return spec_.describe(std::stoi(key.substr(5))); },
      [&] { check_error_key(); });
  check_error_key();
  infos_.clear();
  for (int i = 0; i < n; ++i)
    infos_.push_back(decode(string_of(store_->get(keys[static_cast<size_t>(i)], kRequestSeconds)),
                            spec_.describe(i)));
  first_.assign(static_cast<size_t>(n), 0);
  global_replicas_ = 0;
  for (int i = 0; i < n; ++i) {
    first_[static_cast<size_t>(i)] = global_replicas_;
    global_replicas_ += infos_[static_cast<size_t>(i)].replicas;
  }
  // Every worker checks the same descriptions, so all of them stop here with
  // the same error.
  for (int i = 1; i < n; ++i)
    if (infos_[static_cast<size_t>(i)].gpu != infos_[0].gpu)
      fail(ErrorKind::value,
           "the workers' replicas must all be GPUs or all CPUs: ", spec_.describe(0), " has ",
           infos_[0].gpu ? "GPUs" : "CPUs", " and ", spec_.describe(i), " ",
           infos_[static_cast<size_t>(i)].gpu ? "GPUs" : "CPUs");
  auto all = [&](bool WorkerInfo::*flag) {
    return std::all_of(infos_.begin(), infos_.end(), [&](const WorkerInfo& w) { return w.*flag; });
  };
  auto lacking = [&](bool WorkerInfo::*flag) {
    std::string names;
    for (int i = 0; i < n; ++i)
      if (!(infos_[static_cast<size_t>(i)].*flag))
        names += (names.empty() ? "" : ", ") + spec_.describe(i);
    return names;
  };
  const std::string& impl = options_.implementation;
  if (!infos_[0].gpu) {
    MR_CHECK(impl != "nccl", value,
             "communication implementation NCCL needs GPU replicas; these workers train on CPUs");
    MR_CHECK(all(&WorkerInfo::gloo), device,
             "multi-worker training on CPUs needs Gloo, and these workers were built without it: ",
             lacking(&WorkerInfo::gloo), " (install libgloo-dev and reinstall mirrored)");
    engine_ = CrossWorker::gloo;
  } else if (impl == "ring" || (impl == "auto" && !all(&WorkerInfo::nccl))) {
    MR_CHECK(all(&WorkerInfo::gloo), device,
             "GPU workers without NCCL reduce through Gloo, and these were built without it: ",
             lacking(&WorkerInfo::gloo));
    engine_ = CrossWorker::gloo_staged;
  } else {
    MR_CHECK(all(&WorkerInfo::nccl), device,
             "communication implementation NCCL needs NCCL on every worker; built without it: ",
             lacking(&WorkerInfo::nccl));
    engine_ = CrossWorker::nccl;
  }
  // NCCL jobs get a Gloo group too when every worker has Gloo: the host's
  // exchanges between steps (metrics, a sharded step's batch sizes) then go
  // through it rather than through the chief's store.
  if (engine_ != CrossWorker::nccl || all(&WorkerInfo::gloo))
    group_ = make_gloo_group(*store_, "gloo/", me, n, spec_.bind_host, options_.timeout);
}

int WorkerGroup::worker_of_replica(int g) const {
  MR_CHECK(g >= 0 && g < global_replicas_, internal, "no global replica ", g);
  int w = 0;
  while (w + 1 < size() && first_[static_cast<size_t>(w + 1)] <= g) ++w;
  return w;
}

int64_t WorkerGroup::worker_rows(int64_t global_rows, int w) const {
  MR_CHECK(w >= 0 && w < size(), internal, "no worker ", w);
  const int first = first_[static_cast<size_t>(w)];
  const int count = infos_[static_cast<size_t>(w)].replicas;
  int64_t rows = 0, begin = 0, n = 0;
  for (int r = first; r < first + count; ++r) {
    replica_slice(global_rows, global_replicas_, r, begin, n);
    rows += n;
  }
  return rows;
}

int WorkerGroup::workers_on_this_host() const {
  const std::string& mine = infos_.at(static_cast<size_t>(rank())).host;
  return static_cast<int>(std::count_if(infos_.begin(), infos_.end(),
                                        [&](const WorkerInfo& w) { return w.host == mine; }));
}

std::string WorkerGroup::engine_name() const {
  switch (engine_) {
    case CrossWorker::gloo:
      return "Gloo (TCP)";
    case CrossWorker::gloo_staged:
      return "Gloo (TCP, through host memory)";
    case CrossWorker::nccl:
      return "NCCL";
  }
  return "unknown";
}

std::string WorkerGroup::communicator_name(const std::string& local, int local_size) const {
  std::string s = engine_name() + " across " + std::to_string(size()) + " workers";
  if (engine_ != CrossWorker::nccl && local_size > 1) s += ", " + local + " within each";
  return s;
}

std::vector<std::string> WorkerGroup::all_gather_text(const std::string& what,
                                                      const std::string& mine) {
  std::lock_guard<std::mutex> lock(store_mu_);
  MR_CHECK(!left_, worker, "this worker has left its job");
  const std::string base = "text/" + what + "/" + std::to_string(++exchanges_[what]) + "/";
  store_->set(base + std::to_string(rank()), bytes_of(mine));
  std::vector<std::string> keys;
  for (int i = 0; i < size(); ++i) keys.push_back(base + std::to_string(i));
  store_->wait(
      keys, options_.timeout, "exchanging " + what + " between the workers",
      [&](const std::string& key) { return spec_.describe(std::stoi(key.substr(base.size()))); });
  std::vector<std::string> all;
  for (const std::string& k : keys) all.push_back(string_of(store_->get(k, kRequestSeconds)));
  // Every worker wrote this exchange's key after reading all of the
  // previous one: this worker's previous key is read by all and goes, so
  // an exchange every step (the batch sizes of a sharded step without a
  // process group) keeps the store's size bounded.
  if (exchanges_[what] > 1)
    store_->erase("text/" + what + "/" + std::to_string(exchanges_[what] - 1) + "/" +
                  std::to_string(rank()));
  return all;
}

int64_t WorkerGroup::join_model(const std::string& description, const std::string& summary) {
  const int64_t seq = ++models_;
  Json j = Json::object();
  j["description"] = description;
  j["summary"] = summary;
  std::vector<std::string> texts;
  try {
    texts = all_gather_text("model", to_json(j));
  } catch (const Error& e) {
    fail(e.kind(), e.what(), " (every worker must build the same models in the same order)");
  }
  std::vector<Json> all;
  for (const std::string& t : texts) all.push_back(parse_json(t, "a worker's model"));
  std::string differ;
  for (int i = 1; i < size(); ++i)
    if (all[static_cast<size_t>(i)]["description"] != all[0]["description"])
      differ += std::string(differ.empty() ? "" : "; ") + spec_.describe(i) + " has " +
                all[static_cast<size_t>(i)]["summary"].get<std::string>();
  if (!differ.empty())
    fail(ErrorKind::value, "the workers built different models: ", spec_.describe(0), " has ",
         all[0]["summary"].get<std::string>(), "; ", differ,
         " (every worker must run the same script)");
  return seq;
}

std::string WorkerGroup::nccl_id(int64_t seq, const std::function<std::string()>& make_id) {
  std::lock_guard<std::mutex> lock(store_mu_);
  const std::string key = "nccl/" + std::to_string(seq);
  if (is_chief()) {
    const std::string id = make_id();
    store_->set(key, bytes_of(id));
    return id;
  }
  return string_of(store_->get(key, options_.timeout));
}

void WorkerGroup::all_reduce_host(double* buf, int64_t n) {
  if (size() == 1 || n == 0) return;
  if (group_) {
    try {
      group_->all_reduce_sum(buf, n);
    } catch (const Error& e) {
      rethrow(e, "summing the metrics over the workers");
    }
    return;
  }
  // Without a process group (NCCL jobs built without Gloo): every worker's
  // sums through the store, added in worker order on every worker.
  const size_t bytes = static_cast<size_t>(n) * sizeof(double);
  const std::vector<std::string> parts =
      all_gather_text("metrics", std::string(reinterpret_cast<const char*>(buf), bytes));
  std::vector<double> sum(static_cast<size_t>(n), 0.0), part(static_cast<size_t>(n));
  for (const std::string& p : parts) {
    MR_CHECK(p.size() == bytes, worker, "a worker sent ", p.size(), " bytes of metrics, not ",
             bytes);
    std::memcpy(part.data(), p.data(), bytes);
    for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(i)] += part[static_cast<size_t>(i)];
  }
  std::memcpy(buf, sum.data(), bytes);
}

void WorkerGroup::chief_done(const std::string& what) {
  if (!is_chief() || size() == 1) return;
  std::lock_guard<std::mutex> lock(store_mu_);
  store_->set("done/" + what, bytes_of("1"));
}

void WorkerGroup::wait_for_chief(const std::string& what) {
  if (is_chief() || size() == 1) return;
  std::lock_guard<std::mutex> lock(store_mu_);
  const std::string beat = who_beat(0);
  store_->wait(
      {"done/" + what}, 1e9, "waiting for the chief to finish " + what,
      [&](const std::string&) { return spec_.describe(0); },
      [&] {
        for (const std::string& who : store_->lost())
          if (who == beat || who == who_main(0))
            fail(ErrorKind::worker, spec_.describe(0), " died while ", what);
        const double idle = store_->idle_seconds(beat);
        if (idle > std::max(kSilentSeconds, options_.timeout))
          fail(ErrorKind::worker, spec_.describe(0), " has not been heard from for ",
               static_cast<int>(idle), " s while ", what, " (stopped, hung or cut off)");
      });
}

std::string WorkerGroup::diagnose() {
  std::string dead, silent, quits;
  try {
    std::lock_guard<std::mutex> lock(store_mu_);
    // The chief's store notices a closed connection within its poll loop;
    // give it a moment before concluding that nobody died.
    for (int attempt = 0; attempt < 10 && dead.empty() && silent.empty() && quits.empty();
         ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::vector<std::string> lost = store_->lost();
      for (int i = 0; i < size(); ++i) {
        if (i == rank()) continue;
        const bool gone = std::find(lost.begin(), lost.end(), who_beat(i)) != lost.end() ||
                          std::find(lost.begin(), lost.end(), who_main(i)) != lost.end();
        if (gone) {
          // A worker that quit (abandon()) says why; others died.
          const std::string quit = "quit/" + std::to_string(i);
          if (store_->check({quit}))
            quits += (quits.empty() ? "" : "; ") + spec_.describe(i) + " " +
                     string_of(store_->get(quit, kRequestSeconds));
          else
            dead += (dead.empty() ? "" : ", ") + spec_.describe(i);
          continue;
        }
        const double idle = store_->idle_seconds(who_beat(i));
        if (idle > kSilentSeconds)
          silent += (silent.empty() ? "" : ", ") + spec_.describe(i) + " (silent for " +
                    std::to_string(static_cast<int>(idle)) + " s)";
      }
    }
  } catch (const Error&) {
    return spec_.is_chief()
               ? ""
               : spec_.describe(0) + " cannot be reached (it died, or the network to it failed)";
  }
  std::string out = quits;
  if (!dead.empty()) out += (out.empty() ? "" : "; ") + dead + " died";
  if (!silent.empty())
    out += (out.empty() ? "" : "; ") + silent + " stopped answering (stopped, hung or cut off)";
  return out;
}

void WorkerGroup::rethrow(const Error& e, const std::string& during) {
  const std::string why = diagnose();
  if (!why.empty()) fail(ErrorKind::worker, why, " during ", during, " (", e.what(), ")");
  throw Error(e.kind(), during + ": " + e.what());
}

void WorkerGroup::watch(Communicator* comm) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  watched_.push_back(comm);
}

void WorkerGroup::unwatch(Communicator* comm) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  watched_.erase(std::remove(watched_.begin(), watched_.end(), comm), watched_.end());
}

// The heartbeat: its own connection, a request every kBeatSeconds (the
// store notes the time of each), and a look at the lost list. A worker that
// died makes the watched communicators abort, so replica threads waiting on
// the host or on a device stop at once; the failing collective's own error
// (or its deadline) ends a wait inside Gloo.
void WorkerGroup::start_heartbeat() {
  auto client = std::make_shared<StoreClient>(spec_.chief.host, spec_.chief.port,
                                              options_.rendezvous_timeout, who_beat(rank()));
  client->set_request_timeout(kRequestSeconds);
  heartbeat_ = std::thread([this, client] {
    const std::string key = "beat/" + std::to_string(rank());
    bool reported = false;
    while (!stop_.load()) {
      std::string note;
      try {
        client->add(key, 1);
        for (const std::string& who : client->lost()) {
          const int i = std::stoi(who.substr(who.find(':') + 1));
          if (i != rank()) {
            note = spec_.describe(i) + " died";
            break;
          }
        }
      } catch (const std::exception&) {
        if (!spec_.is_chief()) note = spec_.describe(0) + " cannot be reached";
      }
      if (!note.empty() && !reported) {
        reported = true;
        std::lock_guard<std::mutex> lock(watch_mu_);
        for (Communicator* c : watched_) c->abort(note);
      }
      for (int i = 0; i < 10 && !stop_.load(); ++i)
        std::this_thread::sleep_for(std::chrono::duration<double>(kBeatSeconds / 10));
    }
    try {
      if (abandoned_.load())
        client->hang_up();
      else
        client->goodbye();
    } catch (...) {
    }
  });
}

}  // namespace mr
