// Glue for callback_device_monitor() and fit(verbose = 2)'s summary
// (R/device-monitor.R): the core's report of the last training epoch, per
// replica (train/device_report.h). Times in milliseconds, memory in MB, -1
// read as NA: the R side only shapes it into a data frame.
#include <Rcpp.h>

#include <vector>

#include "r_glue.h"
#include "train/model.h"

using mr_glue::guarded;

namespace {
double mib_or_na(int64_t bytes) {
  return bytes < 0 ? NA_REAL : static_cast<double>(bytes) / 1e6;  // MB of 10^6 bytes
}
}  // namespace

// One element per replica: the last closed training epoch's steps and the
// sums of its parts (which partition the steps' wall time), memory now and
// at peak since the epoch opened, device-wide memory in use (NA on the
// CPU), GPU utilisation in percent (NA on the CPU or without NVML), and the
// replica's host threads now: how many, how many take work, why fewer.
// [[Rcpp::export]]
Rcpp::List cpp_device_report(SEXP model) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(model);
    const std::vector<mr::ReplicaReport> rep = m->device_report();
    const R_xlen_t n = static_cast<R_xlen_t>(rep.size());
    Rcpp::IntegerVector replica(n), steps(n), util(n), threads(n), active(n);
    Rcpp::CharacterVector device(n), why(n);
    Rcpp::NumericVector wall(n), compute(n), allreduce(n), input(n), host(n), mem(n), peak(n),
        dev_mem(n);
    for (R_xlen_t i = 0; i < n; ++i) {
      const mr::ReplicaReport& r = rep[static_cast<size_t>(i)];
      replica[i] = static_cast<int>(i);
      device[i] = r.device;
      steps[i] = static_cast<int>(r.time.steps);
      wall[i] = r.time.wall * 1e3;
      compute[i] = r.time.compute * 1e3;
      allreduce[i] = r.time.allreduce * 1e3;
      input[i] = r.time.input * 1e3;
      host[i] = r.time.host * 1e3;
      mem[i] = mib_or_na(r.memory.in_use);
      peak[i] = mib_or_na(r.memory.peak);
      dev_mem[i] = mib_or_na(r.memory.device_used);
      util[i] = r.gpu_util < 0 ? NA_INTEGER : r.gpu_util;
      threads[i] = r.threads;
      active[i] = r.active_threads;
      why[i] = r.threads_why;
    }
    return Rcpp::List::create(
        Rcpp::Named("replica") = replica, Rcpp::Named("device") = device,
        Rcpp::Named("steps") = steps, Rcpp::Named("wall_ms") = wall,
        Rcpp::Named("compute_ms") = compute, Rcpp::Named("allreduce_ms") = allreduce,
        Rcpp::Named("input_ms") = input, Rcpp::Named("host_ms") = host,
        Rcpp::Named("memory_mb") = mem, Rcpp::Named("peak_memory_mb") = peak,
        Rcpp::Named("device_memory_mb") = dev_mem, Rcpp::Named("gpu_util") = util,
        Rcpp::Named("threads") = threads, Rcpp::Named("active_threads") = active,
        Rcpp::Named("threads_why") = why);
  });
}
