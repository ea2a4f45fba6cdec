// training.bf16 as the matmul precision of a run (autograd/matmul_precision.h). Train,
// calibrate, eval and predict each hold it for their whole run, as Hugging Face's Trainer
// keeps autocast on for training and evaluation alike: a model trained with bf16 products is
// also evaluated and calibrated with them. (HF's bf16_full_eval, which casts the whole model to
// bf16 for evaluation, has no counterpart: evaluation is already the cheap part here.) Quantized
// models are the exception: they are scored with FP32 products (eval_matmul_precision); the
// products of two quantized operands then run on their integer codes (quant/integer_product.h),
// which bf16 would hold exactly too, and the rest (a Linear left in float, the heads) in FP32.
#pragma once

#include "autograd/matmul_precision.h"
#include "trainers/run_config.h"

namespace qdq {

// BF16 when training.bf16 is set, else TF32 when training.tf32 is; the first BF16 call in the process says on stderr, in one
// line, which kernel runs the products, or that they run in FP32 because this CPU has no bf16
// kernel that pays (or QDQ_BF16_KERNEL=none switched it off).
MatmulPrecision run_matmul_precision(const TrainingSettings& training);

// The precision a run's model is scored in: FP32 for a quantized model (a quantization
// section), whatever training.bf16 says, so that its metrics are those of the INT8 model that
// ONNX Runtime runs. A fake-quantized operand q·scale is not a bf16 number: rounding it moved
// the predictions of 5 in 1,000 IMDB reviews (0.5 points) against the exported INT8 model, while
// FP32 products agree with it within a review. A float model is scored as it trains.
MatmulPrecision eval_matmul_precision(const RunConfig& config);

}  // namespace qdq
