// What runs the convolutions of a CUDA device, for the strategy's print()
// (R glue, r_strategy.cpp). Plain C++: the glue includes it without CUDA.
// Defined in cuda_conv_cudnn.cu; only CUDA builds have it.
#pragma once

#include <string>

namespace mr {

// One line: "convolutions: cuDNN 9.19.0" when cuDNN's handle can be made on
// CUDA device `ordinal` (it is made and freed again: the same call a
// backend's first convolution makes); "cuDNN unavailable (<why>):
// convolutions run im2col + cuBLAS" when that fails (a missing cuDNN
// sub-library, a version mismatch: CudaBackend::cudnn_note() says the same);
// "convolutions: im2col + cuBLAS (built without cuDNN)" otherwise.
std::string cuda_conv_engine(int ordinal);

}  // namespace mr
