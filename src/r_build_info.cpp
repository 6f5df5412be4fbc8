// Glue: what the package was built with and which GPUs it sees.
#include <Rcpp.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "build_config.h"
#include "core/device_info.h"
#include "core/host_cores.h"
#include "dist/process_group.h"  // built_with_gloo
#include "r_glue.h"

// [[Rcpp::export]]
bool cpp_built_with_cuda() { return mr::built_with_cuda(); }

// [[Rcpp::export]]
bool cpp_built_with_nccl() { return mr::built_with_nccl(); }

// [[Rcpp::export]]
bool cpp_built_with_cudnn() { return mr::built_with_cudnn(); }

// [[Rcpp::export]]
bool cpp_built_with_gloo() { return mr::built_with_gloo(); }

namespace {
Rcpp::List cuda_devices_list() {
  const std::vector<mr::GpuInfo> gpus = mr::cuda_devices();
  const R_xlen_t n = static_cast<R_xlen_t>(gpus.size());
  Rcpp::IntegerVector index(n);
  Rcpp::CharacterVector name(n);
  Rcpp::NumericVector memory(n);
  Rcpp::CharacterVector cc(n);
  for (R_xlen_t i = 0; i < n; ++i) {
    const mr::GpuInfo& g = gpus[static_cast<size_t>(i)];
    index[i] = g.index;
    name[i] = g.name;
    memory[i] = static_cast<double>(g.total_memory);
    cc[i] = std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor);
  }
  return Rcpp::List::create(Rcpp::Named("index") = index, Rcpp::Named("name") = name,
                            Rcpp::Named("total_memory") = memory,
                            Rcpp::Named("compute_capability") = cc);
}
}  // namespace

// [[Rcpp::export]]
int cpp_cuda_device_count() {
  return mr_glue::guarded([] { return mr::cuda_device_count(); });
}

// [[Rcpp::export]]
Rcpp::List cpp_cuda_devices() {
  return mr_glue::guarded([] { return cuda_devices_list(); });
}

// Free and total bytes of CUDA device `ordinal`.
// [[Rcpp::export]]
Rcpp::NumericVector cpp_cuda_memory(int ordinal) {
  return mr_glue::guarded([&] {
    int64_t free_bytes = 0, total_bytes = 0;
    mr::cuda_memory(ordinal, &free_bytes, &total_bytes);
    return Rcpp::NumericVector::create(Rcpp::Named("free") = static_cast<double>(free_bytes),
                                       Rcpp::Named("total") = static_cast<double>(total_bytes));
  });
}

// [[Rcpp::export]]
std::string cpp_cuda_link(int a, int b) {
  return mr_glue::guarded([&] { return mr::cuda_link(a, b); });
}

// [[Rcpp::export]]
Rcpp::List cpp_build_info() {
  return mr_glue::guarded([&] {
    const mr::CpuIsa isa = mr::default_cpu_isa();
    std::vector<std::string> isas;
    for (mr::CpuIsa i : mr::cpu_isas_available()) isas.emplace_back(mr::cpu_isa_name(i));
    return Rcpp::List::create(Rcpp::Named("cuda") = mr::built_with_cuda(),
                              Rcpp::Named("cuda_version") = mr::cuda_runtime_version(),
                              Rcpp::Named("nccl") = mr::built_with_nccl(),
                              Rcpp::Named("nccl_version") = mr::nccl_version(),
                              Rcpp::Named("cudnn") = mr::built_with_cudnn(),
                              Rcpp::Named("cudnn_version") = mr::cudnn_version(),
                              Rcpp::Named("cpu_flags") = std::string(MR_CPU_FLAGS),
                              // The CPU kernel path a CPU replica takes (MIRRORED_CPU_ISA,
                              // else the best), and every path this machine runs.
                              Rcpp::Named("cpu_isa") = std::string(mr::cpu_isa_name(isa)),
                              Rcpp::Named("cpu_isas") = isas,
                              Rcpp::Named("cpu_gemm") = mr::cpu_gemm_description(isa),
                              // oneDNN runs the CPU convolutions when built in.
                              Rcpp::Named("dnnl") = MR_WITH_DNNL == 1,
                              Rcpp::Named("dnnl_version") = std::string(MR_DNNL_VERSION_STR),
                              // i16: multi-worker CPU collectives.
                              Rcpp::Named("gloo") = mr::built_with_gloo());
  });
}

// What print(strategy) says of its CPU replicas: threads per replica (the
// option, else the usable cores shared by `replicas` replicas), why, and the
// kernel path they compute with.
// [[Rcpp::export]]
Rcpp::List cpp_cpu_thread_plan(int asked, int replicas) {
  return mr_glue::guarded([&] {
    const mr::CpuThreadPlan plan = mr::plan_cpu_threads(asked, replicas);
    return Rcpp::List::create(
        Rcpp::Named("threads") = plan.threads, Rcpp::Named("why") = plan.why,
        Rcpp::Named("kernels") = std::string(mr::cpu_isa_label(mr::default_cpu_isa())));
  });
}
