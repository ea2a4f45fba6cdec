#include "autograd/cpu_level.h"

#include <cpuid.h>

#include <cstdlib>
#include <stdexcept>

#include "autograd/gemm_bf16_kernels.h"

namespace qdq {

namespace {

constexpr CpuLevel kLevels[] = {CpuLevel::Baseline, CpuLevel::Avx2, CpuLevel::Avx512, CpuLevel::Avx512Bf16,
                                CpuLevel::Amx};

CpuFeatures detect() {
    CpuFeatures f;
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
    f.amd = b == 0x68747541;  // "Auth" of "AuthenticAMD"
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return f;  // OSXSAVE
    const bool fma = c & (1u << 12);
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    const bool ymm_state = (xcr0_lo & 0x6) == 0x6;     // SSE and AVX state
    const bool zmm_state = (xcr0_lo & 0xe6) == 0xe6;  // and opmask, ZMM upper halves and 16-31
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    f.avx2 = ymm_state && fma && (b & (1u << 5));
    f.avx512 = f.avx2 && zmm_state && (b & (1u << 16)) && (b & (1u << 17)) && (b & (1u << 30)) && (b & (1u << 31));
    const bool amx = f.avx512 && (d & (1u << 24)) && (d & (1u << 22));
    f.vnni = f.avx512 && (c & (1u << 11));
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
        f.avx512_bf16 = f.avx512 && (a & (1u << 5));
        f.vnni = f.vnni || (f.avx2 && (a & (1u << 4)));  // AVX-VNNI
    }
    f.amx_bf16 = amx && f.avx512_bf16 && bf16::amx_permission_granted();
    return f;
}

CpuLevel level_of(const CpuFeatures& f) {
    if (f.amx_bf16) return CpuLevel::Amx;
    if (f.avx512_bf16) return CpuLevel::Avx512Bf16;
    if (f.avx512) return CpuLevel::Avx512;
    return f.avx2 ? CpuLevel::Avx2 : CpuLevel::Baseline;
}

// The CPU's features less those above `cap`.
CpuFeatures capped(CpuFeatures f, CpuLevel cap) {
    if (cap < CpuLevel::Amx) f.amx_bf16 = false;
    if (cap < CpuLevel::Avx512Bf16) f.avx512_bf16 = f.vnni = false;
    if (cap < CpuLevel::Avx512) f.avx512 = false;
    if (cap < CpuLevel::Avx2) f.avx2 = false;
    return f;
}

const CpuFeatures& detected() {
    static const CpuFeatures features = detect();
    return features;
}

}  // namespace

const char* cpu_level_name(CpuLevel level) {
    switch (level) {
        case CpuLevel::Baseline: return "baseline";
        case CpuLevel::Avx2: return "avx2";
        case CpuLevel::Avx512: return "avx512";
        case CpuLevel::Avx512Bf16: return "avx512_bf16";
        case CpuLevel::Amx: return "amx";
    }
    return "?";
}

std::optional<CpuLevel> cpu_level_named(const std::string& name) {
    for (CpuLevel l : kLevels)
        if (name == cpu_level_name(l)) return l;
    return std::nullopt;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = [] {
        const std::optional<CpuLevel> asked = asked_cpu_level();
        return asked ? capped(detected(), *asked) : detected();
    }();
    return features;
}

CpuLevel cpu_level() { return level_of(cpu_features()); }

CpuLevel detected_cpu_level() { return level_of(detected()); }

std::string cpu_level_description() {
    const std::string level = cpu_level_name(cpu_level()), cpu = cpu_level_name(detected_cpu_level());
    const std::optional<CpuLevel> asked = asked_cpu_level();
    if (!asked) return level + " (this CPU's)";
    if (*asked > detected_cpu_level()) return level + " (QDQ_CPU=" + cpu_level_name(*asked) + " is above this CPU's)";
    return level + " (QDQ_CPU=" + cpu_level_name(*asked) + "; this CPU has " + cpu + ")";
}

std::optional<CpuLevel> asked_cpu_level() {
    const char* asked = std::getenv("QDQ_CPU");
    if (!asked || !*asked) return std::nullopt;
    if (std::optional<CpuLevel> level = cpu_level_named(asked)) return level;
    std::string names;
    for (CpuLevel l : kLevels) names += std::string(names.empty() ? "" : ", ") + cpu_level_name(l);
    throw std::runtime_error(std::string("QDQ_CPU=") + asked + " is not one of " + names);
}

}  // namespace qdq
