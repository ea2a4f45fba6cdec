#include "trainers/run_precision.h"

#include <cstdio>
#include <mutex>

#include "autograd/gemm_bf16.h"

namespace qdq {

MatmulPrecision run_matmul_precision(const TrainingSettings& training) {
    if (!training.bf16) return training.tf32 ? MatmulPrecision::TF32 : MatmulPrecision::F32;
    static std::once_flag once;
    std::call_once(once, [] {
        std::fprintf(stderr, "qdqtrain: training.bf16: %s\n", bf16_kernel_description().c_str());
    });
    return MatmulPrecision::BF16;
}

MatmulPrecision eval_matmul_precision(const RunConfig& config) {
    return config.quantization ? MatmulPrecision::F32 : run_matmul_precision(config.training);
}

}  // namespace qdq
