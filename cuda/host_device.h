// Code that the CPU and the GPU run alike: a function marked QDQ_HOST_DEVICE is compiled for
// both by nvcc and is a plain inline function for g++, so one definition serves the CPU ops and
// the CUDA kernels (counter_hash.h, optimizer_math.h).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define QDQ_HOST_DEVICE __host__ __device__ inline
#else
#define QDQ_HOST_DEVICE inline
#endif

namespace qdq {

// A float's bits. For non-negative floats (NaN aside) the bits order as the values do, so a
// running max of |x| can be an integer atomicMax.
QDQ_HOST_DEVICE uint32_t float_bits(float v) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(v);
#else
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
#endif
}

QDQ_HOST_DEVICE float float_of_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float v;
    std::memcpy(&v, &u, sizeof v);
    return v;
#endif
}

}  // namespace qdq
