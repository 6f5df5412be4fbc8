// Glue for the update pipeline's settings (issue 13): the R optimizer spec's
// clipping, EMA, accumulation, the optimizers' extra hyper-parameters and a
// learning rate schedule, into the core's OptimizerConfig.
#pragma once

#include <Rcpp.h>

#include "nn/optimizer.h"

namespace mr_glue {

// Reads the optional entries of `spec` (R/optimizers.R core_spec()).
void optimizer_extras_from_r(const Rcpp::List& spec, mr::OptimizerConfig& o);
mr::LrSchedule lr_schedule_from_r(const Rcpp::List& spec);

}  // namespace mr_glue
