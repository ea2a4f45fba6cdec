// The one GEMM of the project (row-major, float32):
//   C[M, N] = alpha * op(A)[M, K] · op(B)[K, N] + beta * C
// op(X) is X or Xᵀ; lda/ldb/ldc are row strides of the matrices as stored.
// Backed by OpenBLAS, loaded at first use; see docs/GEMM.md for why and how the kernel is chosen.
#pragma once

#include <cstdint>
#include <string>

namespace qdq {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc);

// The OpenBLAS kernel in use (e.g. "SkylakeX"), and whether we chose it or the environment did.
std::string gemm_backend_description();

}  // namespace qdq
