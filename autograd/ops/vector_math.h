// Vectorizable float math for the op kernels. std::exp and std::erf are library calls that the
// compiler cannot turn into SIMD code without -ffast-math, so a loop calling them runs one
// element at a time. These are branch-free polynomials the vectorizer handles like any
// arithmetic; tests/test_ops_nn.cpp measures their error against std::exp and std::erf.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

// The whole project compiles for baseline x86-64; a hot kernel marked with this is compiled
// three times (AVX-512, AVX2 + FMA, baseline) and the loader picks the best one for the CPU.
// Not when the build already targets AVX-512 (-march=native): GCC would then refuse to inline
// the functions below into the clones, whose target is narrower, and the loops would not vectorize.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__AVX512F__)
#define QDQ_VECTOR_KERNEL \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define QDQ_VECTOR_KERNEL
#endif

namespace qdq::vmath {

// e^x for x <= 88 (larger x saturate at e^88; every caller here passes x <= 0), within
// 2 ulp. e^x = 2^n · e^r with n = round(x·log2 e) and r = x − n·ln 2 in [−ln2/2, ln2/2],
// where the Taylor series to r^7 is exact to 5e-9 relative. ln 2 is split into a part with
// 16 significant bits (so n·ln2_hi is exact) and the remainder, to keep r accurate.
inline float exp_approx(float x) {
    constexpr float kLog2e = 1.44269504f, kLn2Hi = 0.693145752f, kLn2Lo = 1.42860677e-6f;
    // Adding 1.5·2^23 rounds to an integer and leaves it in the low mantissa bits.
    constexpr float kRound = 12582912.0f;
    float xc = std::min(std::max(x, -87.5f), 88.0f);  // NaN passes through both
    float shifted = xc * kLog2e + kRound;
    float n = shifted - kRound;
    int32_t n_int = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRound);
    float r = (xc - n * kLn2Hi) - n * kLn2Lo;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    float two_n = std::bit_cast<float>((uint32_t)(n_int + 127) << 23);
    return x < -87.5f ? 0.0f : p * two_n;  // below ln(FLT_MIN) the result is negligible
}

// erf on |t| < 0.75 as t·P(t²): a least-squares fit on Chebyshev nodes (made for this
// file against mpmath), 1.1e-9 absolute error before float rounding.
inline float erf_near_zero(float t) {
    float t2 = t * t;
    float p = -0.000677575008f;
    p = p * t2 + 0.0051182895f;
    p = p * t2 - 0.0268367529f;
    p = p * t2 + 0.112834252f;
    p = p * t2 - 0.37612623f;
    p = p * t2 + 1.12837923f;
    return t * p;
}

// erfc(t)·e^{t²} for t >= 0.75, as s·Q(s) with s = 1/(1 + t/2): the substitution maps
// [0.75, ∞) onto a short interval on which the slowly varying function is a polynomial
// (same fit, 5.5e-9 relative error on [0.75, 10]; beyond 10, erfc(t) underflows anyway).
// Multiplying by e^{−t²} then gives erfc with small *relative* error, which keeps
// GELU's far negative tail (x·Φ(x), tiny values) accurate too.
inline float erfc_scaled(float t) {
    float s = 1.0f / (1.0f + 0.5f * std::min(t, 10.0f));
    float q = -0.0510596707f;
    q = q * s + 0.261224508f;
    q = q * s - 0.460895717f;
    q = q * s + 0.264630258f;
    q = q * s - 0.024684405f;
    q = q * s + 0.203737691f;
    q = q * s + 0.242575273f;
    q = q * s + 0.28246507f;
    q = q * s + 0.282081008f;
    return s * q;
}

constexpr float kErfSplit = 0.75f;

// erf(x) within 1e-7 absolute. Both pieces are computed and one selected, so the loop
// stays branch-free.
inline float erf_approx(float x) {
    float t = std::fabs(x);
    float near_zero = erf_near_zero(t);
    float far = 1.0f - exp_approx(-t * t) * erfc_scaled(t);
    return std::copysign(t < kErfSplit ? near_zero : far, x);
}

}  // namespace qdq::vmath
