// Products on the codes (quant/integer_product.h) against ONNX Runtime's MatMulIntegerToFloat as
// its source defines it, computed here apart: each code PQ's round(x·(127/amax)) clamped to
// [-128, 127], the sum of code products in int64, then float32(sum) · (x_step · w_step[n]) and
// + bias[n], each rounded to float32, with step = amax/127 in float32.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "autograd/rng.h"
#include "autograd/tape.h"
#include "quant/fake_quant.h"
#include "quant/integer_product.h"

using namespace qdq;

namespace {

std::vector<float> uniform_values(int64_t n, uint64_t seed, float range) {
    Rng rng(seed);
    std::vector<float> v((size_t)n);
    for (float& x : v) x = range * (2.0f * rng.uniform() - 1.0f);
    return v;
}

int64_t code(float x, float amax) {
    const float scaled = x * (127.0f / amax);
    return (int64_t)std::clamp(std::nearbyint(scaled), -128.0f, 127.0f);
}

TensorQuantizer quantizer(std::vector<float> amax, std::optional<int64_t> axis = std::nullopt) {
    QuantDescriptor desc;
    desc.axis = axis;
    const Shape shape = axis ? Shape{(int64_t)amax.size(), 1} : Shape{};
    desc.amax = std::move(amax);
    return TensorQuantizer(desc, shape);
}

// MatMulIntegerToFloat's y[r, n] for x [rows, K] and w [N, K] (row n scaled by w_amax[n]).
std::vector<float> integer_reference(const std::vector<float>& x, float x_amax, const std::vector<float>& w,
                                     const std::vector<float>& w_amax, const std::vector<float>& bias, int64_t K) {
    const int64_t rows = (int64_t)x.size() / K, N = (int64_t)w.size() / K;
    std::vector<float> y;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t n = 0; n < N; ++n) {
            const float w_range = w_amax[w_amax.size() == 1 ? 0 : (size_t)n];
            int64_t sum = 0;
            for (int64_t k = 0; k < K; ++k) sum += code(x[(size_t)(r * K + k)], x_amax) * code(w[(size_t)(n * K + k)], w_range);
            const float multiplier = (x_amax / 127.0f) * (w_range / 127.0f);
            const float scaled = (float)sum * multiplier;
            y.push_back(bias.empty() ? scaled : scaled + bias[(size_t)n]);
        }
    return y;
}

}  // namespace

// Per-channel and per-tensor weights, with and without a bias, values beyond both ranges: equal
// to the reference bit for bit (float sums of the fake-quantized operands are not, on these).
TEST(IntegerProduct, LinearIsMatMulIntegerToFloat) {
    const int64_t K = 40, N = 7;
    const std::vector<float> x = uniform_values(3 * 5 * K, 1, 2.5f), w = uniform_values(N * K, 2, 0.3f);
    const std::vector<float> bias = uniform_values(N, 3, 1.0f);
    const std::vector<float> per_row{0.2f, 0.25f, 0.3f, 0.11f, 0.29f, 0.3f, 0.17f};
    NoGradGuard no_grad;
    for (bool per_channel : {true, false})
        for (bool with_bias : {true, false}) {
            TensorQuantizer xq = quantizer({2.0f});
            TensorQuantizer wq = per_channel ? quantizer(per_row, 0) : quantizer({0.27f});
            const Tensor b = with_bias ? from_vector({N}, bias) : Tensor();
            const Tensor y = quantized_linear(from_vector({3, 5, K}, x), &xq, from_vector({N, K}, w), &wq, b);
            EXPECT_EQ(y.shape(), (Shape{3, 5, N}));
            const std::vector<float> expected =
                integer_reference(x, 2.0f, w, per_channel ? per_row : std::vector<float>{0.27f},
                                  with_bias ? bias : std::vector<float>{}, K);
            EXPECT_EQ(y.to_vector(), expected) << "per channel " << per_channel << ", bias " << with_bias;
        }
}

// Attention's two products: batched, with bᵀ and without, per-tensor ranges.
TEST(IntegerProduct, MatmulIsMatMulIntegerToFloat) {
    const int64_t batch = 6, M = 5, K = 16, N = 9;
    const std::vector<float> a = uniform_values(batch * M * K, 4, 3.0f), b = uniform_values(batch * N * K, 5, 3.0f);
    NoGradGuard no_grad;
    TensorQuantizer aq = quantizer({2.5f}), bq = quantizer({2.75f});
    const Tensor y = quantized_matmul(from_vector({2, 3, M, K}, a), &aq, from_vector({2, 3, N, K}, b), &bq, true);
    std::vector<float> expected;
    for (int64_t i = 0; i < batch; ++i) {
        const std::vector<float> ai(a.begin() + i * M * K, a.begin() + (i + 1) * M * K);
        const std::vector<float> bi(b.begin() + i * N * K, b.begin() + (i + 1) * N * K);
        const std::vector<float> yi = integer_reference(ai, 2.5f, bi, {2.75f}, {}, K);
        expected.insert(expected.end(), yi.begin(), yi.end());
    }
    EXPECT_EQ(y.to_vector(), expected);

    const Tensor bt = transpose(from_vector({2, 3, N, K}, b), -1, -2);  // [.., K, N]
    EXPECT_EQ(quantized_matmul(from_vector({2, 3, M, K}, a), &aq, bt, &bq).to_vector(), expected);
}

// The longest sum exact in float32: 1,024 products of -128·-128 reach 2^24 exactly.
TEST(IntegerProduct, ExtremeCodesOverTheLongestExactSum) {
    const int64_t K = 1024;
    const float amax = 1.0f, below = -2.0f;  // code -128 after clamping
    NoGradGuard no_grad;
    TensorQuantizer xq = quantizer({amax}), wq = quantizer({amax});
    const Tensor y = quantized_linear(full({1, K}, below), &xq, full({1, K}, below), &wq, Tensor());
    const float step = amax / 127.0f;
    EXPECT_EQ(y.to_vector()[0], 16777216.0f * (step * step));
}

// Training and per-channel activations keep the fake-quantized float product (PQ's, with its
// straight-through gradient); so does an operand without a quantizer.
TEST(IntegerProduct, FakeQuantizedProductWhereTheCodesDoNotApply) {
    const int64_t K = 12, N = 4;
    const std::vector<float> x = uniform_values(2 * K, 6, 2.0f), w = uniform_values(N * K, 7, 0.5f);
    TensorQuantizer xq = quantizer({1.5f}), wq = quantizer({0.4f});
    const QuantParams params = quant_params(xq.desc);
    const Tensor xt = from_vector({2, K}, x).set_requires_grad(), wt = from_vector({N, K}, w);
    const Tensor expected = linear(fake_quant(xt, xq.amax, params), fake_quant(wt, wq.amax, params), Tensor());
    const Tensor trained = quantized_linear(xt, &xq, wt, &wq, Tensor());
    EXPECT_EQ(trained.to_vector(), expected.to_vector());
    EXPECT_TRUE(trained.requires_grad());
    EXPECT_FALSE(integer_product_applies(&xq, nullptr));

    NoGradGuard no_grad;
    TensorQuantizer per_feature = quantizer(std::vector<float>((size_t)K, 1.5f), -1);
    EXPECT_FALSE(integer_product_applies(&per_feature, &wq));
    xq.mode = QuantMode::Calibrating;
    EXPECT_FALSE(integer_product_applies(&xq, &wq));
    xq.mode = QuantMode::Quantizing;
    EXPECT_TRUE(integer_product_applies(&xq, &wq));
    EXPECT_EQ(quantized_linear(xt, nullptr, wt, &wq, Tensor()).to_vector(),
              linear(xt, fake_quant(wt, wq.amax, params), Tensor()).to_vector());
}
