#include "quant/integer_product.h"

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "quant/fake_quant.h"

namespace qdq {

namespace {

// x's codes under `quantizer`; its fake-quantized values are still kept when the fidelity report
// asks for them (TensorQuantizer::keep_output).
Tensor codes_of(TensorQuantizer& quantizer, const Tensor& x) {
    const QuantParams params = quant_params(quantizer.desc);
    if (quantizer.keep_output) quantizer.kept = fake_quant(x, quantizer.amax, params);
    return quant_codes(x, quantizer.amax, params);
}

// amax/bound per channel, as the export writes its scales, on the device amax lives on (no read
// back to the host). A vanishing amax gives codes 0, and so a product 0 whatever its step.
Tensor steps_of(const TensorQuantizer& quantizer) {
    const Tensor bound = full({1}, quant_bound(quant_params(quantizer.desc))).to(quantizer.amax.device());
    return reshape(div(quantizer.amax, bound), {-1});
}

}  // namespace

bool integer_product_applies(const TensorQuantizer* a, const TensorQuantizer* b) {
    auto integer = [](const TensorQuantizer* q) { return q && q->mode == QuantMode::Quantizing && q->desc.num_bits <= 8; };
    return !grad_enabled() && integer(a) && integer(b) && !a->desc.axis && (!b->desc.axis || *b->desc.axis == 0);
}

Tensor quantized_linear(const Tensor& x, TensorQuantizer* x_quantizer, const Tensor& weight,
                        TensorQuantizer* weight_quantizer, const Tensor& bias) {
    if (!integer_product_applies(x_quantizer, weight_quantizer))
        return linear(quantize(x_quantizer, x), quantize(weight_quantizer, weight), bias);
    const Tensor sums = linear(codes_of(*x_quantizer, x), codes_of(*weight_quantizer, weight), Tensor());
    const Tensor scaled = mul(sums, mul(steps_of(*x_quantizer), steps_of(*weight_quantizer)));  // [1] or [out]
    return bias.defined() ? add(scaled, bias) : scaled;
}

Tensor quantized_matmul(const Tensor& a, TensorQuantizer* a_quantizer, const Tensor& b, TensorQuantizer* b_quantizer,
                        bool trans_b) {
    if (!integer_product_applies(a_quantizer, b_quantizer) || b_quantizer->desc.axis)
        return matmul(quantize(a_quantizer, a), quantize(b_quantizer, b), false, trans_b);
    const Tensor sums = matmul(codes_of(*a_quantizer, a), codes_of(*b_quantizer, b), false, trans_b);
    return mul(sums, mul(steps_of(*a_quantizer), steps_of(*b_quantizer)));
}

}  // namespace qdq
