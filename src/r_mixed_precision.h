// Glue for mixed precision (issue 14): compile()'s loss-scale settings.
#pragma once

#include <Rcpp.h>

#include "train/loss_scale.h"

namespace mr_glue {

// Reads spec$loss_scale, absent or NULL (no loss scaling) or
// list(initial_scale, dynamic_growth_steps) (R validates both), into `c`.
void loss_scale_from_r(const Rcpp::List& spec, mr::LossScaleConfig& c);

}  // namespace mr_glue
