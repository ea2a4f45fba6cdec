// Matrix products in bf16 with FP32 accumulation, the arithmetic of a bf16 matmul under
// torch.autocast: C[M, N] = alpha * op(A)·op(B) + beta * C, the same contract as qdq::gemm
// (row-major float32 in and out, transpose flags, row strides). A and B are rounded to bf16
// (to nearest, ties to even) while the GEMM packs them, so callers keep float32 tensors. A
// product of two bf16 numbers is exact in FP32; only the sums round. See docs/GEMM.md.
#pragma once

#include <cstdint>
#include <string>

namespace qdq {

// Where a bf16 product runs, best first.
//   Amx:        Intel's tile unit (TDPBF16PS), about 15x the FP32 FMA rate per core.
//   Avx512Bf16: AVX512-BF16's VDPBF16PS, used only where it beats FP32 (AMD Zen 4 and later;
//               on Intel cores it runs at half the FP32 FMA rate).
//   None:       no bf16 kernel pays on this CPU: products run in FP32 through qdq::gemm.
enum class Bf16Kernel { Amx, Avx512Bf16, None };

const char* bf16_kernel_name(Bf16Kernel kernel);

// Whether this CPU (and for AMX, the operating system) can run the kernel.
bool bf16_kernel_supported(Bf16Kernel kernel);

// The kernel of this process, chosen once: the best supported one that pays, unless the
// environment variable QDQ_BF16_KERNEL names another (amx, avx512_bf16, or none to switch
// bf16 products off); a named kernel the CPU lacks falls back to the best one it has.
Bf16Kernel bf16_kernel();
// One line for logs: the kernel in use and why, or why bf16 products fall back to FP32.
std::string bf16_kernel_description();

// The product on this process's kernel; with Bf16Kernel::None it is qdq::gemm, bit for bit.
void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
               int64_t ldc);
// The same on a given kernel, which must be supported (tests compare the kernels).
void gemm_bf16_on(Bf16Kernel kernel, bool trans_a, bool trans_b, int64_t M, int64_t N,
                  int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float beta, float* C, int64_t ldc);

// x rounded to bf16 as the kernels round it (nearest, ties to even; a denormal becomes a zero
// of its sign, as VCVTNE2PS2BF16 does), returned as the float it represents.
float round_to_bf16(float x);

}  // namespace qdq
