// Inside the bf16 GEMM (autograd/gemm_bf16.cpp): the packed layouts that the packing code
// writes and the micro-kernels read, and the micro-kernels themselves, one file each
// (gemm_bf16_avx512.cpp, gemm_bf16_amx.cpp). Nothing outside autograd/ includes this.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cuda/bf16_math.h"

namespace qdq::bf16 {

// Columns of B (and C) one micro-kernel call covers: two AMX tiles, two AVX-512 registers.
constexpr int64_t kPanelCols = 32;
// The packed depth (K) is a multiple of this: one AMX tile row holds 32 bf16.
constexpr int64_t kDepthStep = 32;

// Packed A: a block of rows, each `depth` bf16 long, row-major (a[r * depth + k]); rows past
//   the matrix's end and depth past K are zeros, so kernels never test bounds inside the loop.
// Packed B: panels of kPanelCols columns; within a panel, row p holds the pairs of depth 2p
//   and 2p + 1 for each column: b[p * 2 * kPanelCols + 2 * j + (k % 2)] (the "VNNI" layout that
//   both VDPBF16PS and TDPBF16PS read). Columns past the matrix's end are zeros.

// One micro-kernel call: C[0:rows, 0:cols] = alpha * A·B + (beta == 0 ? 0 : beta * C), where
// A is `depth` deep and the kernel's row step tall (rows <= that; the rest is zero padding),
// and B one panel of the same depth.
struct Tile {
    const uint16_t* a;
    const uint16_t* b;
    int64_t depth;
    float* c;
    int64_t ldc;
    int rows, cols;
    float alpha, beta;
};

struct MicroKernel {
    int rows;  // the row step: rows of A (and C) per call
    void (*run)(const Tile& tile);
    // Called on each thread before its first and after its last call (AMX: tile configuration).
    void (*begin_thread)();
    void (*end_thread)();
};

MicroKernel avx512_bf16_kernel();
MicroKernel amx_kernel();

// Whether the operating system lets this process use AMX tile data (asks once, on Linux).
bool amx_permission_granted();

// A bf16 number's bits, rounded as VCVTNE2PS2BF16 rounds, as the device rounds too.
using qdq::bf16_bits;

// Writes one row of a tile held in two vectors (columns 0-15 and 16-31):
// c[0:cols] = alpha * (lo | hi) + (beta == 0 ? 0 : beta * c[0:cols]). Beta zero never reads c,
// which may hold garbage, as BLAS promises.
__attribute__((target("avx512f"))) inline void store_row(float* c, __m512 lo, __m512 hi,
                                                         int cols, float alpha, float beta) {
    __mmask16 mask_lo = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1);
    __mmask16 mask_hi = cols >= 32   ? (__mmask16)0xffff
                        : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1)
                                    : (__mmask16)0;
    __m512 a = _mm512_set1_ps(alpha);
    lo = _mm512_mul_ps(lo, a);
    hi = _mm512_mul_ps(hi, a);
    if (beta != 0.0f) {
        __m512 b = _mm512_set1_ps(beta);
        lo = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(mask_lo, c), lo);
        hi = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(mask_hi, c + 16), hi);
    }
    _mm512_mask_storeu_ps(c, mask_lo, lo);
    _mm512_mask_storeu_ps(c + 16, mask_hi, hi);
}

}  // namespace qdq::bf16
