#include "autograd/gemm_bf16_pack.h"

#include <cstring>

#include "autograd/gemm_bf16_kernels.h"

#define QDQ_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace qdq::bf16 {

namespace {

QDQ_AVX512_BF16 __mmask16 first_lanes(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

// out[0:n] = bf16(src[0:n]), 32 at a time; src may be read only where it exists.
QDQ_AVX512_BF16 void convert_row(const float* src, int64_t n, uint16_t* out) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
        _mm512_storeu_si512(out + i, (__m512i)v);
    }
    if (i < n) {
        __m512 lo = _mm512_maskz_loadu_ps(first_lanes(n - i), src + i);
        __m512 hi = _mm512_maskz_loadu_ps(first_lanes(n - i - 16), src + i + 16);
        __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
        _mm512_mask_storeu_epi16(out + i, (__mmask32)((1ull << (n - i)) - 1), v);
    }
}

// The first n (at most 32) floats of src as bf16, zeros after: 16 words of pairs.
QDQ_AVX512_BF16 __m512i convert_32(const float* src, int64_t n) {
    __m512 lo = _mm512_maskz_loadu_ps(first_lanes(n), src);
    __m512 hi = _mm512_maskz_loadu_ps(first_lanes(n - 16), src + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

// Word i = (bf16(even[i]), bf16(odd[i])) for the lanes in mask; a null row reads as zeros.
QDQ_AVX512_BF16 __m512i interleave_pairs(const float* even, const float* odd, __mmask16 mask) {
    const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                           24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
                                           1, 16, 0);
    __m512 e = even ? _mm512_maskz_loadu_ps(mask, even) : _mm512_setzero_ps();
    __m512 o = odd ? _mm512_maskz_loadu_ps(mask, odd) : _mm512_setzero_ps();
    return _mm512_permutexvar_epi16(order, (__m512i)_mm512_cvtne2ps_pbh(o, e));
}

// Transposes a 16 × 16 matrix of 32-bit words held one row per register. (GCC 12 warns that
// the unpack intrinsics read an "uninitialized" _mm512_undefined_epi32(), its own placeholder
// for the unmasked form: a false positive, silenced here alone.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
QDQ_AVX512_BF16 void transpose_16x16(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_shuffle_i32x4(u[i], u[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_i32x4(u[i], u[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_i32x4(u[i + 8], u[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_i32x4(u[i + 8], u[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; ++i) {
        r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
    }
}
#pragma GCC diagnostic pop

}  // namespace

QDQ_AVX512_BF16 void pack_a(const float* A, int64_t lda, bool trans_a, int64_t i0,
                            int64_t rows, int64_t packed_rows, int64_t k0, int64_t depth,
                            int64_t packed_depth, uint16_t* out) {
    // Only the padding is zeroed: the rows past the matrix here, the depth past K below.
    std::memset(out + rows * packed_depth, 0, (size_t)((packed_rows - rows) * packed_depth) * 2);
    if (!trans_a) {
        for (int64_t r = 0; r < rows; ++r) {
            uint16_t* row = out + r * packed_depth;
            convert_row(A + (i0 + r) * lda + k0, depth, row);
            std::memset(row + depth, 0, (size_t)(packed_depth - depth) * 2);
        }
        return;
    }
    // Stored transposed: a stored row holds one depth of every packed row. Blocks of 32
    // depths × 16 rows: interleave depth pairs into words (one word per row), then transpose.
    for (int64_t r = 0; r < rows; r += 16) {
        __mmask16 mask = first_lanes(rows - r);
        for (int64_t k = 0; k < depth; k += kDepthStep) {
            __m512i words[16];
            for (int q = 0; q < 16; ++q) {
                int64_t even = k + 2 * q;
                words[q] = interleave_pairs(
                    even < depth ? A + (k0 + even) * lda + i0 + r : nullptr,
                    even + 1 < depth ? A + (k0 + even + 1) * lda + i0 + r : nullptr, mask);
            }
            transpose_16x16(words);
            for (int64_t i = 0; i < 16 && r + i < rows; ++i)
                _mm512_storeu_si512(out + (r + i) * packed_depth + k, words[i]);
        }
    }
}

QDQ_AVX512_BF16 void pack_b(const float* B, int64_t ldb, bool trans_b, int64_t k0,
                            int64_t depth, int64_t j0, int64_t cols, int64_t packed_depth,
                            uint16_t* out) {
    const int64_t panels = (cols + kPanelCols - 1) / kPanelCols;
    const int64_t panel_size = kPanelCols * packed_depth;
    // Both layouts below write whole groups of 16 columns; the last panel's second group may
    // lie wholly past the matrix and is zeroed here. Depth past K is zeroed below.
    if ((cols + 15) / 16 * 16 < panels * kPanelCols) {
        uint16_t* last = out + (panels - 1) * panel_size + kPanelCols;
        for (int64_t p = 0; p < packed_depth / 2; ++p) std::memset(last + p * 2 * kPanelCols, 0, kPanelCols * 2);
    }
    if (trans_b) {
        // Stored transposed: a stored row is one column with its depth pairs side by side.
        // Blocks of 16 columns × 32 depths: convert each column's 16 pairs, then transpose.
        for (int64_t j = 0; j < cols; j += 16) {
            uint16_t* panel = out + (j / kPanelCols) * panel_size + 2 * (j % kPanelCols);
            for (int64_t k = 0; k < depth; k += kDepthStep) {
                __m512i words[16];
                for (int64_t i = 0; i < 16; ++i)
                    words[i] = j + i < cols ? convert_32(B + (j0 + j + i) * ldb + k0 + k, depth - k)
                                            : _mm512_setzero_si512();
                transpose_16x16(words);
                for (int64_t q = 0; q < 16; ++q)
                    _mm512_storeu_si512(panel + (k / 2 + q) * 2 * kPanelCols, words[q]);
            }
        }
        return;
    }
    // Two stored rows (depths 2p and 2p + 1) interleave into one panel row of pairs; the pair
    // rows past K are zero.
    const int64_t pairs = (depth + 1) / 2;
    for (int64_t panel = 0; panel < panels; ++panel)
        std::memset(out + panel * panel_size + pairs * 2 * kPanelCols, 0,
                    (size_t)((packed_depth / 2 - pairs) * 2 * kPanelCols) * 2);
    for (int64_t k = 0; k < depth; k += 2) {
        const float* even = B + (k0 + k) * ldb + j0;
        const float* odd = k + 1 < depth ? even + ldb : nullptr;
        for (int64_t j = 0; j < cols; j += 16) {
            uint16_t* dst = out + (j / kPanelCols) * panel_size + (k / 2) * 2 * kPanelCols +
                            2 * (j % kPanelCols);
            _mm512_storeu_si512(dst, interleave_pairs(even + j, odd ? odd + j : nullptr,
                                                      first_lanes(cols - j)));
        }
    }
}

}  // namespace qdq::bf16
