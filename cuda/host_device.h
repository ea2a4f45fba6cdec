// Code that the CPU and the GPU run alike: a function marked QDQ_HOST_DEVICE is compiled for
// both by nvcc and is a plain inline function for g++, so one definition serves the CPU ops and
// the CUDA kernels (counter_hash.h, optimizer_math.h).
#pragma once

#if defined(__CUDACC__)
#define QDQ_HOST_DEVICE __host__ __device__ inline
#else
#define QDQ_HOST_DEVICE inline
#endif
