// Packing for the bf16 GEMM: copies a block of op(A) or op(B) into the layouts of
// gemm_bf16_kernels.h, rounding each float to bf16 on the way. Runs only where a bf16 kernel
// does, so it may use AVX512-BF16's conversions. Internal to autograd/.
#pragma once

#include <cstdint>

namespace qdq::bf16 {

// op(A)[i0 : i0 + rows, k0 : k0 + depth] into `out`, packed_rows × packed_depth, zero-padded.
void pack_a(const float* A, int64_t lda, bool trans_a, int64_t i0, int64_t rows,
            int64_t packed_rows, int64_t k0, int64_t depth, int64_t packed_depth, uint16_t* out);

// op(B)[k0 : k0 + depth, j0 : j0 + cols] into `out`, as panels of kPanelCols columns of
// packed_depth depth, zero-padded.
void pack_b(const float* B, int64_t ldb, bool trans_b, int64_t k0, int64_t depth, int64_t j0,
            int64_t cols, int64_t packed_depth, uint16_t* out);

}  // namespace qdq::bf16
