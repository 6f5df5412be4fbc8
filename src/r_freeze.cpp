// Glue for the model-structure API (R/freeze.R, R/layer-weights.R): which
// layer node owns each variable, so that R can hand a layer its own weights
// out of the model's, in the layer's (Keras') order.
#include <Rcpp.h>

#include "nn/graph.h"
#include "r_glue.h"
#include "train/model.h"

// Per variable in Keras' order (the order of cpp_model_get_weights()): the
// 0-based node owning it, its name, whether the layer declares it trainable
// (before freezing) and its element count.
// [[Rcpp::export]]
Rcpp::List cpp_model_weight_owners(SEXP ptr) {
  return mr_glue::guarded([&] {
    Rcpp::XPtr<mr::Model> m(ptr);
    const mr::Graph& g = m->graph();
    std::vector<int> node;
    std::vector<std::string> name;
    std::vector<bool> trainable;
    std::vector<double> size;
    for (int i = 0; i < g.size(); ++i)
      for (const auto& w : g.node_weights(i)) {
        const auto& v = g.weight(w);
        node.push_back(i);
        name.push_back(v.name);
        trainable.push_back(w.trainable);
        size.push_back(static_cast<double>(v.size));
      }
    return Rcpp::List::create(Rcpp::Named("node") = node, Rcpp::Named("name") = name,
                              Rcpp::Named("trainable") = trainable, Rcpp::Named("size") = size);
  });
}
