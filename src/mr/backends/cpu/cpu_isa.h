// The instruction-set paths of the CPU kernels, chosen per backend at run time.
//
// Every path gives bit-identical results for any team size and any split of
// the rows (or columns) of an op's output; the paths differ from one another
// by float rounding only (FMA or not, vector width). One machine runs every
// path it can execute, so the tests check each of them wherever they run:
//   avx512    the native AVX-512 build's kernels: oneDNN's sgemm (else Eigen)
//             and the narrow-product kernels (cpu_gemm_narrow.cpp); only in a
//             build made on an AVX-512 machine (configure / MR_NATIVE);
//   avx2      the blocked GEMM compiled for AVX2+FMA (cpu_gemm_blocked_avx2.cpp),
//             in every x86-64 build, on a CPU that has AVX2 and FMA;
//   portable  the same blocked GEMM compiled for the baseline instruction set
//             with separate multiplies and adds (cpu_gemm_blocked_portable.cpp).
// A backend's path is its constructor's argument, else the environment's
// MIRRORED_CPU_ISA ("avx512", "avx2" or "portable"), else the best one this
// build and CPU can run. oneDNN's convolutions choose their own instructions
// (DNNL_MAX_CPU_ISA caps them for the whole process).
#pragma once

#include <string>
#include <vector>

namespace mr {

enum class CpuIsa { portable, avx2, avx512 };

// "avx512", "avx2", "portable".
const char* cpu_isa_name(CpuIsa isa);
// "AVX-512", "AVX2+FMA", "portable (SSE2, no FMA)": for people.
const char* cpu_isa_label(CpuIsa isa);
// The paths this build has and this CPU can execute, best first.
std::vector<CpuIsa> cpu_isas_available();
// MIRRORED_CPU_ISA when set (an error names the variable when it is not a
// path, or not one of cpu_isas_available()), else the first available.
CpuIsa default_cpu_isa();
// `name` as a path; an mr::Error (value) names `what` when it is not one this
// machine can run.
CpuIsa parse_cpu_isa(const std::string& name, const char* what);

// Throws mr::Error (device) when this CPU lacks an instruction set the whole
// build was compiled for (AVX-512 / AVX2+FMA with MR_NATIVE).
void require_cpu_isa();

}  // namespace mr
