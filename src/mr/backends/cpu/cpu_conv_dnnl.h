// The CPU convolution passes on oneDNN (cpu_conv_dnnl.cpp), used by
// cpu_conv.cpp when the build found oneDNN (MR_WITH_DNNL). The header names no
// oneDNN type, so cpu_backend.h stays free of <dnnl.hpp>.
#pragma once

#include <cstdint>
#include <memory>

#include "core/conv_geometry.h"

namespace mr {

class CpuBackend;
class DnnlConv;

struct DnnlConvDelete {
  void operator()(DnnlConv* p) const noexcept;
};
using DnnlConvPtr = std::unique_ptr<DnnlConv, DnnlConvDelete>;

DnnlConvPtr make_dnnl_conv(CpuBackend& be);

// Creates the plan for g at up to max_rows rows unless one exists (outside
// the steps: Backend::prepare_conv).
void dnnl_conv_prepare(DnnlConv& c, const ConvGeometry& g, int64_t max_rows);

// The three passes with core/backend.h's contract (x, y NHWC; w in Keras'
// (k_h, k_w, in/groups, out_c) layout). rows may be 0.
void dnnl_conv_forward(DnnlConv& c, const ConvGeometry& g, int64_t rows, const float* x,
                       const float* w, float* y);
void dnnl_conv_backward_filter(DnnlConv& c, const ConvGeometry& g, int64_t rows, const float* x,
                               const float* dy, float* dw);
void dnnl_conv_backward_data(DnnlConv& c, const ConvGeometry& g, int64_t rows, const float* dy,
                             const float* w, float* dx);

}  // namespace mr
