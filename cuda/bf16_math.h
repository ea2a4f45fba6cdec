// A float rounded to bf16, as the CPU's bf16 GEMM packs its operands (autograd/gemm_bf16.h) and
// as the device converts them for cuBLAS (cuda/backend.h's gemm_bf16): to nearest, ties to
// even; a NaN stays a quiet NaN; a denormal becomes a zero of its sign, as VCVTNE2PS2BF16 does.
#pragma once

#include <cstdint>

#include "cuda/host_device.h"

namespace qdq {

QDQ_HOST_DEVICE uint16_t bf16_bits(float x) {
    const uint32_t u = float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // quiet NaN
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u);         // denormal
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace qdq
