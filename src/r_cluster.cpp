// Glue for the cluster of a multi-worker job (R/strategy.R): the core reads
// the `cluster` argument and the environment (C++ decides); R displays.
#include <Rcpp.h>

#include <optional>
#include <string>

#include "dist/cluster_spec.h"
#include "r_glue.h"

using mr_glue::guarded;

namespace mr_glue {

mr::Environment environment_from_r(const Rcpp::CharacterVector& env) {
  mr::Environment vars;
  const Rcpp::RObject names_attr = env.attr("names");
  MR_CHECK(env.size() == 0 || !names_attr.isNULL(), value,
           "`env` must be a named character vector (as Sys.getenv() returns), not an unnamed one");
  if (env.size() == 0) return vars;
  const Rcpp::CharacterVector names(names_attr);
  for (R_xlen_t i = 0; i < env.size(); ++i) {
    if (Rcpp::CharacterVector::is_na(env[i]) || Rcpp::CharacterVector::is_na(names[i])) continue;
    vars[std::string(names[i])] = std::string(env[i]);
  }
  return vars;
}

}  // namespace mr_glue

// The cluster from the argument's JSON ("" = none) or else from `env`
// (R's Sys.getenv(): a named character vector). NULL when nothing describes
// a cluster; else list(workers, index (0-based), task_type, task_id,
// local_rank, source, chief, bind_host, described). Returns SEXP rather than
// Rcpp::List: an Rcpp::List cannot hold NULL (it would become list()).
// [[Rcpp::export]]
SEXP cpp_resolve_cluster(std::string cluster_json, Rcpp::CharacterVector env) {
  return guarded([&]() -> SEXP {
    const std::optional<mr::ClusterSpec> spec =
        mr::resolve_cluster(cluster_json, mr_glue::environment_from_r(env));
    if (!spec) return R_NilValue;
    const int n = spec->size();
    Rcpp::CharacterVector workers(n), described(n);
    for (int i = 0; i < n; ++i) {
      workers[i] = spec->workers[static_cast<size_t>(i)].str();
      described[i] = spec->describe(i);
    }
    return Rcpp::List::create(
        Rcpp::Named("workers") = workers, Rcpp::Named("index") = spec->index,
        Rcpp::Named("task_type") = spec->task_type, Rcpp::Named("task_id") = spec->task_id,
        Rcpp::Named("local_rank") = spec->local_rank, Rcpp::Named("source") = spec->source,
        Rcpp::Named("chief") = spec->chief.str(), Rcpp::Named("bind_host") = spec->bind_host,
        Rcpp::Named("described") = described);
  });
}
