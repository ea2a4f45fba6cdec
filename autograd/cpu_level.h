// The instruction-set level the CPU kernels may use: what this CPU has, unless the environment
// variable QDQ_CPU caps it lower (baseline, avx2, avx512, avx512_bf16, amx). Every choice that depends on
// the CPU (the bf16 GEMM's kernel, OpenBLAS's kernel family) reads cpu_features(), so one machine
// can run, and the suite can test, each lower level's path: an AVX-512 machine also proves what
// an AVX2-only one computes.
#pragma once

#include <optional>
#include <string>

namespace qdq {

// Ordered: each level has what the ones before it have. Baseline: below AVX2 and FMA.
enum class CpuLevel { Baseline, Avx2, Avx512, Avx512Bf16, Amx };

const char* cpu_level_name(CpuLevel level);
std::optional<CpuLevel> cpu_level_named(const std::string& name);

// This process's features: the CPU's (with the operating system's consent where it is needed),
// less everything above QDQ_CPU's level. Read once.
struct CpuFeatures {
    bool avx2 = false;         // AVX2 and FMA
    bool avx512 = false;       // F, BW, DQ, VL, with the OS saving ZMM state
    bool avx512_bf16 = false;
    bool amx_bf16 = false;     // AMX-TILE and AMX-BF16 (the OS's permission is asked apart)
    // u8·s8 dot products summed in 32 bits (AVX512-VNNI or AVX-VNNI), which ONNX Runtime's integer
    // MatMuls need to be exact by default (onnx/onnx_runtime.h). Not a level of its own: the CPUs
    // here with AVX512-BF16 or AMX have it, those with AVX2 only do not, so a cap below
    // avx512_bf16 clears it (an AVX-512 CPU without BF16 may have it; it counts as one without).
    bool vnni = false;
    bool amd = false;
};
const CpuFeatures& cpu_features();

// The highest level of cpu_features(), and of the CPU itself.
CpuLevel cpu_level();
CpuLevel detected_cpu_level();

// Why the level is what it is, for --version: "avx512_bf16 (this CPU's)", "avx2 (QDQ_CPU=avx2;
// this CPU has avx512_bf16)". Throws when QDQ_CPU names no level.
std::string cpu_level_description();

// QDQ_CPU's level; none when it is unset or empty. Throws when it names no level.
std::optional<CpuLevel> asked_cpu_level();

}  // namespace qdq
