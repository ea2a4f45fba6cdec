// training.bf16 as the matmul precision of a run (autograd/matmul_precision.h). Train,
// calibrate, eval and predict each hold it for their whole run, as Hugging Face's Trainer
// keeps autocast on for training and evaluation alike: a model trained with bf16 products is
// also evaluated and calibrated with them. (HF's bf16_full_eval, which casts the whole model to
// bf16 for evaluation, has no counterpart: evaluation is already the cheap part here.)
#pragma once

#include "autograd/matmul_precision.h"
#include "trainers/run_config.h"

namespace qdq {

// BF16 when training.bf16 is set; the first such call in the process says on stderr, in one
// line, which kernel runs the products, or that they run in FP32 because this CPU has no bf16
// kernel that pays (or QDQ_BF16_KERNEL=none switched it off).
MatmulPrecision run_matmul_precision(const TrainingSettings& training);

}  // namespace qdq
