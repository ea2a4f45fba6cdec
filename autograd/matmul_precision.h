// How matmul() and linear() multiply on the CPU: in FP32, or with operands rounded to bf16 and
// FP32 accumulation (gemm_bf16.h), which is what torch.autocast(dtype=torch.bfloat16) does to
// matrix products and what training.bf16 asks for. Everything else (activations between ops,
// LayerNorm, softmax, GELU, losses, weights, gradients outside the products) stays FP32.
//
// A setting of the calling thread, like grad mode. An op reads it when it runs forward and its
// backward multiplies in the same precision, so a tape recorded under bf16 differentiates in
// bf16 whatever the setting is when backward() runs. On a CPU without a bf16 kernel that pays
// (see bf16_kernel()), BF16 products run in FP32, exactly as FP32 does.
//
// TF32 is Hugging Face's tf32 (torch.backends.cuda.matmul.allow_tf32): on the GPU, FP32 products
// on tensor cores that read 10 bits of each operand's mantissa (cuda::gemm_tf32). A CPU has no
// such unit, so there TF32 products run in FP32; a run refuses training.tf32 on the CPU, as HF's
// Trainer refuses tf32 without such a GPU.
#pragma once

namespace qdq {

enum class MatmulPrecision { F32, BF16, TF32 };

MatmulPrecision matmul_precision();

// Sets the precision for its scope and restores the previous one after.
class MatmulPrecisionGuard {
public:
    explicit MatmulPrecisionGuard(MatmulPrecision precision);
    ~MatmulPrecisionGuard();
    MatmulPrecisionGuard(const MatmulPrecisionGuard&) = delete;
    MatmulPrecisionGuard& operator=(const MatmulPrecisionGuard&) = delete;

private:
    MatmulPrecision previous_;
};

}  // namespace qdq
