// Glue for multi-worker strategies (R/strategy-multi-worker.R): the core
// resolves the cluster and runs the rendezvous (dist/worker_group.h); R keeps
// the job's handle and displays what the core says.
#include <Rcpp.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "dist/cluster_spec.h"
#include "dist/worker_group.h"
#include "r_glue.h"

using mr_glue::guarded;

namespace {

using GroupPtr = Rcpp::XPtr<std::shared_ptr<mr::WorkerGroup>>;

void check_interrupt(void*) { R_CheckUserInterrupt(); }

mr::WorkerGroup& group_of(SEXP xp) {
  GroupPtr p(xp);
  if (p.get() == nullptr || !*p)
    mr::fail(mr::ErrorKind::value, "this multi-worker strategy was closed");
  return **p;
}

}  // namespace

// The rendezvous: NULL when nothing describes a cluster (a worker alone),
// else the job's handle once every worker has joined.
// [[Rcpp::export]]
SEXP cpp_workers_new(std::string cluster_json, Rcpp::CharacterVector env, int local_replicas,
                     bool gpu, double timeout, std::string implementation) {
  return guarded([&]() -> SEXP {
    std::optional<mr::ClusterSpec> spec =
        mr::resolve_cluster(cluster_json, mr_glue::environment_from_r(env));
    if (!spec) return R_NilValue;
    std::atomic<bool> cancel{false};
    mr::WorkerGroupOptions o;
    o.local_replicas = local_replicas;
    o.gpu = gpu;
    o.timeout = timeout;
    o.rendezvous_timeout = timeout;
    o.implementation = implementation;
    o.cancel = &cancel;
    // The rendezvous may wait for the other workers up to the deadline: it
    // runs on its own thread while R's thread polls for Ctrl-C, which
    // cancels it (the thread never touches R).
    std::shared_ptr<mr::WorkerGroup> made;
    std::exception_ptr error;
    std::atomic<bool> done{false};
    std::thread joiner([&] {
      try {
        made = std::make_shared<mr::WorkerGroup>(std::move(*spec), o);
      } catch (...) {
        error = std::current_exception();
      }
      done.store(true);
    });
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!cancel.load() && R_ToplevelExec(check_interrupt, nullptr) == FALSE) cancel.store(true);
    }
    joiner.join();
    if (error) std::rethrow_exception(error);
    made->set_cancel(nullptr);  // `cancel` dies with this call
    auto group = std::make_unique<std::shared_ptr<mr::WorkerGroup>>(std::move(made));
    return GroupPtr(group.release(), true);
  });
}

// What print() and cluster_resolver show.
// [[Rcpp::export]]
Rcpp::List cpp_workers_info(SEXP xp) {
  return guarded([&] {
    mr::WorkerGroup& g = group_of(xp);
    const mr::ClusterSpec& s = g.spec();
    Rcpp::CharacterVector described, hosts, address;
    Rcpp::IntegerVector replicas;
    for (int i = 0; i < g.size(); ++i) {
      described.push_back(s.describe(i));
      address.push_back(s.workers[static_cast<size_t>(i)].str());
      hosts.push_back(g.workers()[static_cast<size_t>(i)].host);
      replicas.push_back(g.workers()[static_cast<size_t>(i)].replicas);
    }
    return Rcpp::List::create(
        Rcpp::Named("index") = g.rank(), Rcpp::Named("size") = g.size(),
        Rcpp::Named("task_type") = s.task_type, Rcpp::Named("task_id") = s.task_id,
        Rcpp::Named("source") = s.source, Rcpp::Named("described") = described,
        Rcpp::Named("address") = address, Rcpp::Named("hosts") = hosts,
        Rcpp::Named("replicas") = replicas, Rcpp::Named("first_replica") = g.first_replica(),
        Rcpp::Named("global_replicas") = g.global_replicas(),
        Rcpp::Named("engine") = g.engine_name(), Rcpp::Named("is_chief") = g.is_chief(),
        Rcpp::Named("local_rank") = s.local_rank);
  });
}

// What a model of `local_size` replicas whose own communicator is `local`
// all-reduces with in this job (WorkerGroup::communicator_name).
// [[Rcpp::export]]
std::string cpp_workers_communicator_name(SEXP xp, std::string local, int local_size) {
  return guarded([&] { return group_of(xp).communicator_name(local, local_size); });
}

// The chief finished `what` (a checkpoint); the others wait for that while
// the chief lives (WorkerGroup::wait_for_chief).
// [[Rcpp::export]]
void cpp_workers_chief_done(SEXP xp, std::string what) {
  guarded([&] { group_of(xp).chief_done(what); });
}

// [[Rcpp::export]]
void cpp_workers_wait_for_chief(SEXP xp, std::string what) {
  guarded([&] { group_of(xp).wait_for_chief(what); });
}

// Leaves the job (WorkerGroup::leave: at the end of the R session, so that
// the chief's store outlives every worker's last request).
// [[Rcpp::export]]
void cpp_workers_close(SEXP xp) {
  guarded([&] {
    GroupPtr p(xp);
    if (p.get() != nullptr && *p) (*p)->leave();
  });
}

// This worker quits the job mid-way (WorkerGroup::abandon): Ctrl-C while
// fit() or evaluate() runs R code (a callback, the progress bar).
// [[Rcpp::export]]
void cpp_workers_abandon(SEXP xp, std::string reason) {
  guarded([&] { group_of(xp).abandon(reason); });
}

// Every worker's `mine` (WorkerGroup::all_gather_text), in worker order.
// [[Rcpp::export]]
Rcpp::CharacterVector cpp_workers_all_gather(SEXP xp, std::string what, std::string mine) {
  return guarded([&] { return Rcpp::wrap(group_of(xp).all_gather_text(what, mine)); });
}
