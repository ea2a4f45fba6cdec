// The AVX512-BF16 micro-kernel: 12 rows × 32 columns of C in 24 registers. Each step takes
// one pair of depth: the pair of A's row r (one 32-bit broadcast) against B's panel row (two
// registers of 16 column pairs), VDPBF16PS adding both products into FP32.
#include "autograd/gemm_bf16_kernels.h"

#define QDQ_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace qdq::bf16 {

namespace {

constexpr int kRows = 12;

QDQ_AVX512_BF16 void run(const Tile& t) {
    __m512 lo[kRows], hi[kRows];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
    const int32_t* a = reinterpret_cast<const int32_t*>(t.a);
    const int64_t pairs = t.depth / 2;
    for (int64_t p = 0; p < pairs; ++p) {
        const uint16_t* b = t.b + p * 2 * kPanelCols;
        __m512bh b_lo = (__m512bh)_mm512_loadu_si512(b);
        __m512bh b_hi = (__m512bh)_mm512_loadu_si512(b + kPanelCols);
#pragma GCC unroll 12
        for (int r = 0; r < kRows; ++r) {
            __m512bh a_pair = (__m512bh)_mm512_set1_epi32(a[r * pairs + p]);
            lo[r] = _mm512_dpbf16_ps(lo[r], a_pair, b_lo);
            hi[r] = _mm512_dpbf16_ps(hi[r], a_pair, b_hi);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
        if (r >= t.rows) break;
        store_row(t.c + r * t.ldc, lo[r], hi[r], t.cols, t.alpha, t.beta);
    }
}

void nothing() {}

}  // namespace

MicroKernel avx512_bf16_kernel() { return {kRows, &run, &nothing, &nothing}; }

}  // namespace qdq::bf16
