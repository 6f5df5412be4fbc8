// Glue for the strategy's communication options (R/communication.R): the
// gradient buckets' size, and the core's bucket plan and launch order for
// tests and diagnostics (src/mr/train/grad_buckets.h decides both).
#include <Rcpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "r_glue.h"
#include "train/model.h"

// [[Rcpp::export]]
void cpp_model_set_bytes_per_pack(SEXP ptr, double bytes) {
  mr_glue::guarded([&] {
    Rcpp::XPtr<mr::Model> m(ptr);
    m->set_bytes_per_pack(static_cast<int64_t>(bytes));
  });
}

// The plan in launch order (bucket id, floats, the node whose backward
// finishes it (0-based), its variables as "<node name>/<variable>") and each
// replica's launched bucket ids in its last applying step.
// [[Rcpp::export]]
Rcpp::List cpp_model_grad_buckets(SEXP ptr) {
  return mr_glue::guarded([&] {
    Rcpp::XPtr<mr::Model> m(ptr);
    const mr::Graph& g = m->graph();
    const mr::GradBuckets& b = m->grad_buckets();
    const std::vector<mr::GradBucket>& plan = b.plan();
    std::vector<int> id, ready;
    std::vector<double> floats;
    std::vector<std::string> vars;
    for (size_t i = 0; i < plan.size(); ++i) {
      id.push_back(static_cast<int>(i));
      floats.push_back(static_cast<double>(plan[i].floats));
      ready.push_back(plan[i].ready_node);
      std::string names;
      for (int k : plan[i].params) {
        const mr::Graph::Param& p = g.params()[static_cast<size_t>(k)];
        if (!names.empty()) names += ", ";
        names += g.node(p.node).name + "/" + p.name;
      }
      vars.push_back(names);
    }
    Rcpp::DataFrame df =
        Rcpp::DataFrame::create(Rcpp::Named("bucket") = id, Rcpp::Named("floats") = floats,
                                Rcpp::Named("ready_node") = ready, Rcpp::Named("variables") = vars,
                                Rcpp::Named("stringsAsFactors") = false);
    Rcpp::List order;
    for (int r = 0; r < m->replicas(); ++r) order.push_back(Rcpp::wrap(b.last_order(r)));
    return Rcpp::List::create(Rcpp::Named("plan") = df, Rcpp::Named("order") = order);
  });
}
