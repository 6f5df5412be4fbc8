// Glue for models: building the core graph from the R layer specs, weights,
// compile settings. The R side (R/model.R) validates every argument first;
// the core re-checks shapes and values.
#include <Rcpp.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <thread>

#include "core/host_cores.h"
#include "dist/worker_group.h"  // i16
#include "nn/graph.h"
#include "nn/layers/registry.h"
#include "nn/traced_graph.h"  // i15-users
#include "r_glue.h"
#include "r_mixed_precision.h"
#include "r_optimizer.h"
#include "train/model.h"

using mr_glue::guarded;

namespace {

using ModelPtr = Rcpp::XPtr<mr::Model>;

// Every variable in Keras' order: node order, then each layer's own order
// (trainable and non-trainable interleaved, e.g. gamma, beta, moving_mean,
// moving_variance).
std::vector<mr::Graph::WeightRef> keras_order(const mr::Graph& g) {
  std::vector<mr::Graph::WeightRef> out;
  for (int i = 0; i < g.size(); ++i)
    for (const auto& w : g.node_weights(i)) out.push_back(w);
  return out;
}

}  // namespace

// [[Rcpp::export]]
SEXP cpp_model_new(Rcpp::List nodes, Rcpp::IntegerVector inputs, Rcpp::IntegerVector outputs,
                   Rcpp::CharacterVector devices, int threads, double collective_timeout,
                   bool initialize, std::string cross_device_ops, int logical_per_gpu, bool tf32,
                   SEXP workers) {
  return guarded([&]() -> SEXP {
    std::vector<mr::GraphNode> gn;
    for (R_xlen_t i = 0; i < nodes.size(); ++i) {
      const Rcpp::List nd = nodes[i];
      mr::GraphNode g;
      g.name = Rcpp::as<std::string>(nd["name"]);
      // A later call of a shared layer names the node owning the layer (0-based).
      g.shares = nd.containsElementNamed("shares") ? Rcpp::as<int>(nd["shares"]) : -1;
      if (g.shares < 0)
        g.layer = mr::make_layer(Rcpp::as<std::string>(nd["class_name"]),
                                 mr_glue::json_from_r(nd["config"]),
                                 static_cast<uint64_t>(Rcpp::as<double>(nd["seed"])));
      g.inputs = Rcpp::as<std::vector<int>>(nd["inputs"]);
      // keras3's training = FALSE on the call that made this node.
      if (nd.containsElementNamed("training") && !Rf_isNull(nd["training"]))
        g.training = Rcpp::as<bool>(nd["training"]) ? 1 : 0;
      gn.push_back(std::move(g));
    }
    auto graph = std::make_shared<const mr::Graph>(
        std::move(gn), Rcpp::as<std::vector<int>>(inputs), Rcpp::as<std::vector<int>>(outputs));
    std::vector<mr::DeviceSpec> devs;
    for (R_xlen_t i = 0; i < devices.size(); ++i)
      devs.push_back(mr::parse_device(Rcpp::as<std::string>(devices[i])));
    std::shared_ptr<mr::WorkerGroup> group;
    if (!Rf_isNull(workers)) {
      Rcpp::XPtr<std::shared_ptr<mr::WorkerGroup>> w(workers);
      MR_CHECK(w.get() != nullptr && *w, value, "this multi-worker strategy was closed");
      group = *w;
    }
    // The host's usable cores are shared by its replicas, and (i16) by the
    // replicas of the job's other workers on this host.
    threads = mr::plan_cpu_threads(threads, static_cast<int>(devs.size()) *
                                                (group ? group->workers_on_this_host() : 1))
                  .threads;
    // R owns the model from here: the XPtr finalizer deletes it.
    mr::PlacementOptions placement;
    placement.threads_per_replica = threads;
    placement.collective_timeout = collective_timeout;
    placement.cross_device_ops = cross_device_ops;
    placement.logical_per_gpu = logical_per_gpu;
    placement.tf32 = tf32;
    placement.workers = group;  // i16: the job the model joins (null: alone)
    auto model =
        std::make_unique<mr::Model>(std::move(graph), std::move(devs), placement, initialize);
    return ModelPtr(model.release(), true);
  });
}

// What a strategy's models will all-reduce with: the core's plan for these
// devices and cross_device_ops (name, and the note when it is not NCCL where
// NCCL was asked for or would be the default).
// [[Rcpp::export]]
Rcpp::CharacterVector cpp_communicator_plan(Rcpp::CharacterVector devices,
                                            std::string cross_device_ops, int logical_per_gpu) {
  return guarded([&] {
    std::vector<mr::DeviceSpec> devs;
    for (R_xlen_t i = 0; i < devices.size(); ++i)
      devs.push_back(mr::parse_device(Rcpp::as<std::string>(devices[i])));
    mr::assign_gpu_ordinals(devs, logical_per_gpu);
    const mr::CommPlan plan = mr::plan_communicator(devs, cross_device_ops);
    return Rcpp::CharacterVector::create(Rcpp::Named("name") = mr::comm_kind_name(plan.kind),
                                         Rcpp::Named("note") = plan.note);
  });
}

// What all-reduces this model's gradients, and why that is not what the
// strategy asked for ("" when it is).
// [[Rcpp::export]]
Rcpp::CharacterVector cpp_model_communicator(SEXP ptr) {
  return guarded([&] {
    ModelPtr m(ptr);
    return Rcpp::CharacterVector::create(Rcpp::Named("name") = m->communicator_name(),
                                         Rcpp::Named("note") = m->communicator_note());
  });
}

// Weights in Keras order (node order, then each layer's variables), as R
// arrays of the variables' shapes (a kernel is in_dim x units).
// [[Rcpp::export]]
Rcpp::List cpp_model_get_weights(SEXP ptr, int rank = 0) {
  return guarded([&] {
    ModelPtr m(ptr);
    const std::vector<float> flat = m->get_params(rank), state = m->get_state(rank);
    const auto order = keras_order(m->graph());
    Rcpp::List out(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      const auto& v = m->graph().weight(order[k]);
      const float* src = (order[k].trainable ? flat : state).data() + v.offset;
      out[static_cast<R_xlen_t>(k)] = mr_glue::from_row_major(src, v.shape.dims());
    }
    return out;
  });
}

// [[Rcpp::export]]
void cpp_model_set_weights(SEXP ptr, Rcpp::List weights) {
  guarded([&] {
    ModelPtr m(ptr);
    const auto order = keras_order(m->graph());
    MR_CHECK(static_cast<size_t>(weights.size()) == order.size(), value, "expected ", order.size(),
             " weight arrays, got ", weights.size());
    std::vector<float> flat = m->get_params(), state = m->get_state();
    for (size_t k = 0; k < order.size(); ++k) {
      const mr::Graph::Param& p = m->graph().weight(order[k]);
      SEXP w = weights[static_cast<R_xlen_t>(k)];
      std::vector<int64_t> dims = mr_glue::r_dims(w);
      const auto& want = p.shape.dims();
      MR_CHECK(static_cast<int64_t>(Rf_xlength(w)) == p.size &&
                   (dims == want || (want.size() == 1 && dims.size() <= 2) ||
                    (want.empty() && dims.size() <= 1)),
               shape, "weight ", k + 1, " (", m->graph().node(p.node).name, "/", p.name,
               ") must have shape ", p.shape.str(), ", got ", mr::Shape(dims).str());
      // Dims are checked above; a 1-D target accepts any vector of the right
      // length, a scalar (shape (), as Normalization's count) a length-1 vector.
      SEXP src = w;
      Rcpp::RObject tmp;
      if (want.size() == 1) {
        tmp = Rf_duplicate(w);
        Rf_setAttrib(tmp, R_DimSymbol, R_NilValue);
        src = tmp;
      }
      const std::vector<float> v = mr_glue::to_row_major(src, "weights", false);
      std::copy(v.begin(), v.end(), (order[k].trainable ? flat : state).begin() + p.offset);
    }
    m->set_params(flat);
    m->set_state(state);
  });
}

namespace {
// ---- i15-users: the optional `graph` field of a loss or metric list: the
// JSON text of a traced graph (R/ops tracer); absent or "" = built-in ----
std::shared_ptr<const mr::TracedGraph> traced_graph(const Rcpp::List& spec, const char* what) {
  if (!spec.containsElementNamed("graph")) return nullptr;
  const std::string text = Rcpp::as<std::string>(spec["graph"]);
  if (text.empty()) return nullptr;
  const std::string name =
      spec.containsElementNamed("name") ? Rcpp::as<std::string>(spec["name"]) : std::string();
  const std::string who = std::string(what) + " '" + name + "'";
  return std::make_shared<const mr::TracedGraph>(
      mr::parse_json(text, "the traced graph of " + who));
}

// A metric as R/metrics-core.R's metric_core_spec() gives it: every field
// of mr::MetricConfig by name.
mr::MetricConfig metric_config(const Rcpp::List& mt) {
  auto num = [&](const char* k) { return Rcpp::as<double>(mt[k]); };
  auto flag = [&](const char* k) { return Rcpp::as<bool>(mt[k]); };
  auto str = [&](const char* k) { return Rcpp::as<std::string>(mt[k]); };
  mr::MetricConfig mc;
  // i15-users: a traced metric (Keras' MeanMetricWrapper) is its name, its
  // weighted flag and its graph.
  if (auto g = traced_graph(mt, "metric")) {
    // A Metric() class (R/metrics-custom-class.R): its update_state()
    // graph, result() graph, variables' floats and reset values.
    if (mt.containsElementNamed("result_graph")) {
      Rcpp::List rg = Rcpp::List::create(Rcpp::Named("name") = mt["name"],
                                         Rcpp::Named("graph") = mt["result_graph"]);
      mc.kind = mr::MetricKind::state_metric;
      mc.name = str("name");
      mc.weighted = flag("weighted");
      mc.graph = std::move(g);
      mc.result_graph = traced_graph(rg, "metric");
      mc.state_floats = static_cast<int64_t>(num("state_floats"));
      mc.reset_values = Rcpp::as<std::vector<float>>(mt["reset_values"]);
      return mc;
    }
    mc.kind = mr::MetricKind::mean_metric_wrapper;
    mc.name = str("name");
    mc.weighted = flag("weighted");
    mc.graph = std::move(g);
    return mc;
  }
  mc.kind = mr::metric_kind(str("kind"));
  mc.name = str("name");
  mc.weighted = flag("weighted");
  mc.threshold = static_cast<float>(num("threshold"));  // NaN: none
  mc.k = static_cast<int>(num("k"));
  mc.top_k = static_cast<int>(num("top_k"));
  mc.class_id = static_cast<int>(num("class_id"));
  mc.num_thresholds = static_cast<int>(num("num_thresholds"));
  mc.curve = str("curve") == "PR" ? mr::AucCurve::pr : mr::AucCurve::roc;
  const std::string sm = str("summation_method");
  mc.summation_method = sm == "minoring"   ? mr::AucSummation::minoring
                        : sm == "majoring" ? mr::AucSummation::majoring
                                           : mr::AucSummation::interpolation;
  const std::string av = str("average");
  mc.average = av == "micro"      ? mr::FbetaAverage::micro
               : av == "macro"    ? mr::FbetaAverage::macro
               : av == "weighted" ? mr::FbetaAverage::weighted
                                  : mr::FbetaAverage::none;
  mc.beta = static_cast<float>(num("beta"));
  mc.num_classes = static_cast<int>(num("num_classes"));
  mc.ignore_class = static_cast<int>(num("ignore_class"));
  mc.sparse_y_true = flag("sparse_y_true");
  mc.sparse_y_pred = flag("sparse_y_pred");
  mc.from_logits = flag("from_logits");
  mc.label_smoothing = static_cast<float>(num("label_smoothing"));
  return mc;
}
}  // namespace

// `outputs`: one list per model output (loss = list(kind, from_logits,
// name, and LossParams' other arguments), weight, metrics = list of
// metric_config() lists, name).
// `frozen`: one flag per graph node, TRUE where the layer is frozen
// (R/freeze.R); empty when nothing is.
// `keep_state`: keep the optimizer's slots and iteration count
// (Model::compile; R/losses-custom.R traces a loss again for new targets).
// [[Rcpp::export]]
void cpp_model_compile(SEXP ptr, Rcpp::List optimizer, Rcpp::List outputs,
                       Rcpp::LogicalVector frozen, bool keep_state) {
  guarded([&] {
    ModelPtr m(ptr);
    mr::CompileConfig c;
    for (R_xlen_t i = 0; i < frozen.size(); ++i) c.frozen.push_back(frozen[i] == TRUE ? 1 : 0);
    mr::OptimizerConfig& o = c.optimizer;
    o.kind = mr::optimizer_kind(Rcpp::as<std::string>(optimizer["kind"]));
    o.learning_rate = Rcpp::as<double>(optimizer["learning_rate"]);
    o.beta_1 = Rcpp::as<double>(optimizer["beta_1"]);
    o.beta_2 = Rcpp::as<double>(optimizer["beta_2"]);
    o.epsilon = Rcpp::as<double>(optimizer["epsilon"]);
    o.amsgrad = Rcpp::as<bool>(optimizer["amsgrad"]);
    o.weight_decay = Rcpp::as<double>(optimizer["weight_decay"]);
    o.momentum = Rcpp::as<double>(optimizer["momentum"]);
    o.nesterov = Rcpp::as<bool>(optimizer["nesterov"]);
    o.rho = Rcpp::as<double>(optimizer["rho"]);
    o.centered = Rcpp::as<bool>(optimizer["centered"]);
    mr_glue::optimizer_extras_from_r(optimizer, o);       // issue 13: r_optimizer.cpp
    mr_glue::loss_scale_from_r(optimizer, c.loss_scale);  // issue 14: r_mixed_precision.cpp
    for (R_xlen_t k = 0; k < outputs.size(); ++k) {
      const Rcpp::List out = outputs[k];
      const Rcpp::List loss = out["loss"];
      mr::OutputConfig oc;
      // i15-users: a traced loss is its name and its graph (null = built-in).
      oc.loss.graph = traced_graph(loss, "loss");
      if (oc.loss.graph != nullptr) {
        oc.loss.name = Rcpp::as<std::string>(loss["name"]);
      } else {
        oc.loss.kind = mr::loss_kind(Rcpp::as<std::string>(loss["kind"]));
        oc.loss.from_logits = Rcpp::as<bool>(loss["from_logits"]);
        oc.loss.name = Rcpp::as<std::string>(loss["name"]);
        // The loss's Keras arguments (R/losses.R, loss_core_spec()).
        oc.loss.label_smoothing = static_cast<float>(Rcpp::as<double>(loss["label_smoothing"]));
        oc.loss.has_ignore = Rcpp::as<bool>(loss["has_ignore"]);
        oc.loss.ignore_class = static_cast<float>(Rcpp::as<double>(loss["ignore_class"]));
        oc.loss.delta = static_cast<float>(Rcpp::as<double>(loss["delta"]));
        oc.loss.alpha = static_cast<float>(Rcpp::as<double>(loss["alpha"]));
        oc.loss.gamma = static_cast<float>(Rcpp::as<double>(loss["gamma"]));
        oc.loss.apply_class_balancing = Rcpp::as<bool>(loss["apply_class_balancing"]);
      }
      oc.weight = static_cast<float>(Rcpp::as<double>(out["weight"]));
      oc.name = Rcpp::as<std::string>(out["name"]);
      const Rcpp::List metrics = out["metrics"];
      for (R_xlen_t i = 0; i < metrics.size(); ++i) {
        oc.metrics.push_back(metric_config(metrics[i]));
      }
      c.outputs.push_back(oc);
    }
    m->compile(c, keep_state);
  });
}

// [[Rcpp::export]]
void cpp_model_set_learning_rate(SEXP ptr, double lr) {
  guarded([&] { ModelPtr(ptr)->set_learning_rate(lr); });
}

// Slot buffers of the compiled optimizer (each as long as the parameters).
// [[Rcpp::export]]
int cpp_model_slot_count(SEXP ptr) {
  return guarded([&] {
    ModelPtr m(ptr);
    MR_CHECK(m->compiled(), value, "the model is not compiled");
    return mr::slot_count(m->config().optimizer);
  });
}

// [[Rcpp::export]]
double cpp_model_iterations(SEXP ptr) {
  return guarded([&] { return static_cast<double>(ModelPtr(ptr)->iterations()); });
}

// Per-replica facts for tests: rows of the last step, distinct threads and
// parameter buffers.
// [[Rcpp::export]]
Rcpp::List cpp_model_replica_info(SEXP ptr) {
  return guarded([&] {
    ModelPtr m(ptr);
    const auto rows = m->rows_last_step();
    const auto threads = m->replica_threads();
    const auto bufs = m->replica_param_buffers();
    Rcpp::CharacterVector tid(threads.size()), buf(bufs.size()), dev(m->devices().size());
    for (size_t i = 0; i < threads.size(); ++i) {
      std::ostringstream os;
      os << threads[i];
      tid[static_cast<R_xlen_t>(i)] = os.str();
      std::ostringstream ob;
      ob << bufs[i];
      buf[static_cast<R_xlen_t>(i)] = ob.str();
      dev[static_cast<R_xlen_t>(i)] = m->devices()[i].name();
    }
    return Rcpp::List::create(
        Rcpp::Named("devices") = dev,
        Rcpp::Named("rows_last_step") = Rcpp::NumericVector(rows.begin(), rows.end()),
        Rcpp::Named("threads") = tid, Rcpp::Named("param_buffers") = buf);
  });
}

// Test hook: replica `rank` fails ("error") or stalls `seconds` ("stall") at
// training step `step` (1-based).
// [[Rcpp::export]]
void cpp_model_inject_fault(SEXP ptr, int rank, double step, std::string kind, double seconds) {
  guarded([&] {
    const mr::Model::Fault f = kind == "error"   ? mr::Model::Fault::error
                               : kind == "stall" ? mr::Model::Fault::stall
                                                 : mr::Model::Fault::none;
    ModelPtr(ptr)->inject_fault(rank, static_cast<int64_t>(step), f, seconds);
  });
}
