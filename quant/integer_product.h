// Matrix products of quantized operands, as an INT8 deployment computes them when nothing is
// learning: the integer codes multiplied and summed exactly, the sum multiplied once by the
// product of the two steps (amax/bound, the scales the ONNX export writes) and rounded to
// float32, then the bias added: ONNX Runtime's MatMulIntegerToFloat, TensorRT's int8 GEMMs.
// Training keeps pytorch-quantization's product of the fake-quantized operands, Σ (qx/sx)·(qw/sw)
// in float32, and its straight-through gradient. The two are the same number but for rounding:
// the float sum rounds at each of its K partial sums, and each such rounding that lands a value
// on the other side of a code's tie moves the next quantizer's code; on the main job's model
// (BERT-mini) the float products moved 2.4 times as many of the codes ONNX Runtime's kernels read
// as the integer ones (docs/BENCHMARKS.md).
//
// Exact: with at most 8 bits a code is an integer of magnitude at most 255, which float32 and
// bf16 both hold, as float32 holds each product (< 2^16) and every partial sum up to 2^24, that
// is any sum of up to 1,024 products of 8-bit signed codes (BERT-mini's longest); a longer sum
// rounds only where a partial sum passes 2^24 in magnitude.
#pragma once

#include "autograd/tensor.h"
#include "quant/tensor_quantizer.h"

namespace qdq {

// Whether a product of operands through these quantizers runs on the codes: grad mode off, both
// fake-quantizing with at most 8 bits, the first per tensor and the second per tensor or per
// row of a [rows, K] operand (axis 0, a Linear's output channels), so that the steps factor out
// of the sum. A null quantizer leaves its operand in float, and the product with it.
bool integer_product_applies(const TensorQuantizer* a, const TensorQuantizer* b);

// x [..., in] · weightᵀ + bias (weight [out, in], bias [out] or undefined), each operand through
// its quantizer where it has one: on the codes where integer_product_applies, else the
// fake-quantized float product.
Tensor quantized_linear(const Tensor& x, TensorQuantizer* x_quantizer, const Tensor& weight,
                        TensorQuantizer* weight_quantizer, const Tensor& bias);

// a · b (bᵀ with trans_b) as matmul() takes them, likewise; both quantizers per tensor for the
// codes' path.
Tensor quantized_matmul(const Tensor& a, TensorQuantizer* a_quantizer, const Tensor& b, TensorQuantizer* b_quantizer,
                        bool trans_b = false);

}  // namespace qdq
