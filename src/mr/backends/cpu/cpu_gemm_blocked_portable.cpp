// The blocked GEMM (cpu_gemm_blocked_kernel.h) for any CPU: 4-float vectors
// of the compiler's generic vector extension, compiled for the baseline
// instruction set with -ffp-contract=off (a multiply and an add, never fused,
// so the same arithmetic on every compiler and target).
#define MR_BLOCKED_NS blocked_portable
#define MR_BLOCKED_AVX2 0
#include "backends/cpu/cpu_gemm_blocked_kernel.h"
