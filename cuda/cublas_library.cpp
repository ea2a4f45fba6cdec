// cuBLAS's entry points through dlopen (cuda/cublas_library.h).
#include "cuda/cublas_library.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace qdq::cuda {

namespace {

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

void* open_library() {
    std::string reasons;
    for (const std::string& name : {kSoname, std::string(QDQ_CUBLAS_DIR) + "/" + kSoname}) {
        if (void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
        reasons += std::string("\n  ") + dlerror();
    }
    throw std::runtime_error("cannot open cuBLAS (" + kSoname + "), which products on the GPU need:" + reasons);
}

template <typename Function>
void resolve(void* library, const char* symbol, Function& out) {
    out = reinterpret_cast<Function>(dlsym(library, symbol));
    if (!out)
        throw std::runtime_error(kSoname + " has no " + symbol + ": a cuBLAS older than the headers built against");
}

CublasLibrary open_cublas() {
    void* library = open_library();  // kept open for the process: cuBLAS handles outlive any scope here
    CublasLibrary api{};
    resolve(library, "cublasCreate_v2", api.create);
    resolve(library, "cublasSgemm_v2", api.sgemm);
    resolve(library, "cublasSgemmStridedBatched", api.sgemm_strided_batched);
    resolve(library, "cublasGemmStridedBatchedEx", api.gemm_strided_batched_ex);
    return api;
}

}  // namespace

const CublasLibrary& cublas() {
    static const CublasLibrary api = open_cublas();
    return api;
}

bool cublas_loaded() {
    void* library = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (library) dlclose(library);  // NOLOAD took a reference only because it was loaded
    return library != nullptr;
}

}  // namespace qdq::cuda
