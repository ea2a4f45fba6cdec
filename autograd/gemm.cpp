#include "autograd/gemm.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "autograd/cpu_level.h"

namespace qdq {

namespace {

// CBLAS enum values, fixed by the CBLAS standard.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                         int, float, float*, int);
using CorenameFn = char* (*)();

struct OpenBlas {
    SgemmFn sgemm = nullptr;
    CorenameFn corename = nullptr;
    std::string coretype_source;
};

// OpenBLAS picks its kernel from CPUID when the library loads. Debian's 0.3.21 predates
// recent Xeons and falls back to its generic SSE3 kernel on them (about 1/6 of the speed), so
// unless the environment already chose (never overridden: some machines set it on purpose), we
// name the kernel family of this process's CPU level (cpu_level.h, QDQ_CPU included), then load
// the library. Below AVX2, OpenBLAS detects for itself.
std::string choose_coretype() {
    if (const char* set = std::getenv("OPENBLAS_CORETYPE"))
        return std::string("OPENBLAS_CORETYPE=") + set + " from the environment";
    const CpuFeatures& cpu = cpu_features();
    const char* core = cpu.avx512 ? "SkylakeX" : cpu.avx2 ? "Haswell" : nullptr;
    if (!core) return "OpenBLAS's own CPU detection";
    setenv("OPENBLAS_CORETYPE", core, 0);
    return std::string("OPENBLAS_CORETYPE=") + core + " chosen from the CPU level";
}

const OpenBlas& openblas() {
    static OpenBlas lib;
    static std::once_flag once;
    std::call_once(once, [] {
        lib.coretype_source = choose_coretype();
        void* handle = dlopen(QDQ_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (!handle)
            throw std::runtime_error(std::string("cannot load OpenBLAS (") + QDQ_OPENBLAS_LIBRARY +
                                     "): " + dlerror() + "; run scripts/setup.sh");
        lib.sgemm = reinterpret_cast<SgemmFn>(dlsym(handle, "cblas_sgemm"));
        lib.corename = reinterpret_cast<CorenameFn>(dlsym(handle, "openblas_get_corename"));
        if (!lib.sgemm || !lib.corename)
            throw std::runtime_error(std::string(QDQ_OPENBLAS_LIBRARY) + " lacks cblas_sgemm");
    });
    return lib;
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
    if (M == 0 || N == 0) return;
    openblas().sgemm(kRowMajor, trans_a ? kTrans : kNoTrans, trans_b ? kTrans : kNoTrans, (int)M,
                     (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

std::string gemm_backend_description() {
    const OpenBlas& lib = openblas();
    return std::string("OpenBLAS (") + QDQ_OPENBLAS_LIBRARY + "), kernel " + lib.corename() +
           ", " + lib.coretype_source;
}

}  // namespace qdq
