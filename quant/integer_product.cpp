#include "quant/integer_product.h"

#include <vector>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "cuda/quant_math.h"
#include "quant/fake_quant.h"

namespace qdq {

namespace {

Tensor quantize_or_pass(TensorQuantizer* quantizer, const Tensor& x) { return quantizer ? quantizer->quantize(x) : x; }

// x's codes under `quantizer`; its fake-quantized values are still kept when the fidelity report
// asks for them (TensorQuantizer::keep_output).
Tensor codes_of(TensorQuantizer& quantizer, const Tensor& x) {
    const QuantParams params = quant_params(quantizer.desc);
    if (quantizer.keep_output) quantizer.kept = fake_quant(x, quantizer.amax, params);
    return quant_codes(x, quantizer.amax, params);
}

// amax/bound per channel, as the export writes scales (1 where amax zeroes the channel: its
// codes are 0, so any step gives the same product).
std::vector<float> steps_of(const TensorQuantizer& quantizer) {
    const float bound = quant_bound(quant_params(quantizer.desc));
    std::vector<float> steps = quantizer.amax.to_vector();
    for (float& s : steps) s = s <= kTinyAmax ? 1.0f : s / bound;
    return steps;
}

}  // namespace

bool integer_product_applies(const TensorQuantizer* a, const TensorQuantizer* b) {
    auto integer = [](const TensorQuantizer* q) { return q && q->mode == QuantMode::Quantizing && q->desc.num_bits <= 8; };
    return !grad_enabled() && integer(a) && integer(b) && !a->desc.axis && (!b->desc.axis || *b->desc.axis == 0);
}

Tensor quantized_linear(const Tensor& x, TensorQuantizer* x_quantizer, const Tensor& weight,
                        TensorQuantizer* weight_quantizer, const Tensor& bias) {
    if (!integer_product_applies(x_quantizer, weight_quantizer))
        return linear(quantize_or_pass(x_quantizer, x), quantize_or_pass(weight_quantizer, weight), bias);
    const Tensor sums = linear(codes_of(*x_quantizer, x), codes_of(*weight_quantizer, weight), Tensor());
    const float x_step = steps_of(*x_quantizer)[0];
    std::vector<float> multipliers = steps_of(*weight_quantizer);
    for (float& m : multipliers) m = x_step * m;
    const Tensor scaled = multipliers.size() == 1
                              ? mul_scalar(sums, multipliers[0])
                              : mul(sums, from_vector({(int64_t)multipliers.size()}, multipliers).to(sums.device()));
    return bias.defined() ? add(scaled, bias) : scaled;
}

Tensor quantized_matmul(const Tensor& a, TensorQuantizer* a_quantizer, const Tensor& b, TensorQuantizer* b_quantizer,
                        bool trans_b) {
    if (!integer_product_applies(a_quantizer, b_quantizer) || b_quantizer->desc.axis)
        return matmul(quantize_or_pass(a_quantizer, a), quantize_or_pass(b_quantizer, b), false, trans_b);
    const Tensor sums = matmul(codes_of(*a_quantizer, a), codes_of(*b_quantizer, b), false, trans_b);
    return mul_scalar(sums, steps_of(*a_quantizer)[0] * steps_of(*b_quantizer)[0]);
}

}  // namespace qdq
