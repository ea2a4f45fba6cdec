// matmul() and linear() under MatmulPrecision::BF16, forward and backward, and a whole BERT
// step, against FP32.
//
// Two tolerances, both stated per element from Σ|a·b|, the sum of the magnitudes of the K
// products that make the element (computed as the FP32 product of |a| and |b|):
// - Against FP32 products of the bf16-rounded operands (the semantics promised): only the
//   order of the FP32 sums differs, so |diff| <= 2 (K + 2) 2^-24 Σ|a·b|.
// - Against FP32 products of the unrounded operands (what a user compares with): each
//   operand's rounding moves a product by at most 2^-8 of it, so |diff| <= 2^-7 Σ|a·b| (+ the
//   FP32 term).
// Backward is seeded with an upstream gradient that bf16 represents exactly, so the rounded
// reference differentiates the same numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "autograd/gemm_bf16.h"
#include "autograd/matmul_precision.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "io/safetensors.h"
#include "nn/bert_config.h"
#include "nn/heads.h"
#include "nn/state_dict.h"
#include "tests/support/gradcheck.h"

using namespace qdq;
using qdq::testing::random_tensor;

namespace {

Tensor map_values(const Tensor& t, float (*f)(float)) {
    Tensor out = empty(t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) out.f32()[i] = f(t.f32()[i]);
    return out;
}
float absolute(float x) { return std::fabs(x); }

Tensor rounded(const Tensor& t) { return map_values(t, &round_to_bf16); }

// |actual - expected| <= scale · magnitude, element by element.
void expect_within(const Tensor& actual, const Tensor& expected, const Tensor& magnitude,
                   double scale, const std::string& what) {
    ASSERT_EQ(actual.shape(), expected.shape()) << what;
    int reported = 0;
    for (int64_t i = 0; i < actual.numel(); ++i) {
        double diff = std::fabs((double)actual.f32()[i] - expected.f32()[i]);
        double bound = scale * magnitude.f32()[i] + 1e-30;
        if (diff > bound && reported++ < 5)
            ADD_FAILURE() << what << " [" << i << "]: " << actual.f32()[i] << " vs "
                          << expected.f32()[i] << ", bound " << bound;
    }
}

// One product op: y = f(a, b); its gradients into a and b.
struct Result {
    Tensor y, ga, gb;
};

using Product = Tensor (*)(const Tensor&, const Tensor&, int variant);

Tensor matmul_variant(const Tensor& a, const Tensor& b, int variant) {
    return matmul(a, b, variant & 1, variant & 2);
}
Tensor linear_variant(const Tensor& x, const Tensor& w, int) { return linear(x, w, Tensor()); }

Result run(Product f, const Tensor& a, const Tensor& b, int variant, const Tensor& upstream,
           MatmulPrecision precision) {
    MatmulPrecisionGuard guard(precision);
    Tensor ca = a.clone().set_requires_grad(true), cb = b.clone().set_requires_grad(true);
    Tensor y = f(ca, cb, variant);
    backward(y, upstream);
    return {y, ca.grad(), cb.grad()};
}

// The magnitudes Σ|a·b| of y, ga and gb: the same op in FP32 on |a|, |b| and |upstream|.
Result magnitudes(Product f, const Tensor& a, const Tensor& b, int variant, const Tensor& upstream) {
    return run(f, map_values(a, &absolute), map_values(b, &absolute), variant,
               map_values(upstream, &absolute), MatmulPrecision::F32);
}

void check_product(Product f, const Shape& a_shape, const Shape& b_shape, int variant,
                   const std::string& name) {
    Tensor a = random_tensor(a_shape, 1), b = random_tensor(b_shape, 2);
    Tensor y_shape_probe = f(a, b, variant);
    Tensor upstream = rounded(random_tensor(y_shape_probe.shape(), 3));
    // A bound on the inner dimension of the three products: the largest dimension, times the
    // batch entries that a shared b's gradient sums over.
    int64_t K = 1, batch = 1;
    for (int64_t d : a_shape) K = std::max(K, d);
    for (int64_t d : b_shape) K = std::max(K, d);
    for (size_t i = 0; i + 2 < a_shape.size(); ++i) batch *= a_shape[i];
    K *= batch;

    Result bf16 = run(f, a, b, variant, upstream, MatmulPrecision::BF16);
    Result exact = run(f, rounded(a), rounded(b), variant, upstream, MatmulPrecision::F32);
    Result fp32 = run(f, a, b, variant, upstream, MatmulPrecision::F32);
    Result mag = magnitudes(f, a, b, variant, upstream);
    const double order = 2.0 * (double)(K + 2) * std::ldexp(1.0, -24);
    expect_within(bf16.y, exact.y, mag.y, order, name + " forward vs rounded FP32");
    expect_within(bf16.ga, exact.ga, mag.ga, order, name + " grad a vs rounded FP32");
    expect_within(bf16.gb, exact.gb, mag.gb, order, name + " grad b vs rounded FP32");
    const double rounding = std::ldexp(1.0, -7) + order;
    expect_within(bf16.y, fp32.y, mag.y, rounding, name + " forward vs FP32");
    expect_within(bf16.ga, fp32.ga, mag.ga, rounding, name + " grad a vs FP32");
    expect_within(bf16.gb, fp32.gb, mag.gb, rounding, name + " grad b vs FP32");
}

bool has_bf16_kernel() { return bf16_kernel() != Bf16Kernel::None; }

}  // namespace

TEST(OpsBf16, MatmulEveryLayoutForwardAndBackward) {
    if (!has_bf16_kernel()) GTEST_SKIP() << bf16_kernel_description();
    check_product(&matmul_variant, {37, 70}, {70, 45}, 0, "matmul");
    check_product(&matmul_variant, {70, 37}, {70, 45}, 1, "matmul aᵀ");
    check_product(&matmul_variant, {37, 70}, {45, 70}, 2, "matmul bᵀ");
    check_product(&matmul_variant, {70, 37}, {45, 70}, 3, "matmul aᵀbᵀ");
    check_product(&matmul_variant, {2, 3, 33, 40}, {2, 3, 33, 40}, 2, "batched, as Q·Kᵀ");
    check_product(&matmul_variant, {2, 3, 33, 33}, {2, 3, 33, 40}, 0, "batched, as P·V");
    check_product(&matmul_variant, {4, 20, 50}, {50, 30}, 0, "shared b");
}

TEST(OpsBf16, LinearForwardAndBackward) {
    if (!has_bf16_kernel()) GTEST_SKIP() << bf16_kernel_description();
    check_product(&linear_variant, {3, 41, 96}, {72, 96}, 0, "linear");
}

TEST(OpsBf16, BiasIsAddedInFp32) {
    if (!has_bf16_kernel()) GTEST_SKIP() << bf16_kernel_description();
    // x·Wᵀ is exact here (small integers), so y - bias must give it back exactly: the bias is
    // not rounded to bf16 on the way.
    Tensor x = full({2, 3}, 1.0f), w = full({4, 3}, 2.0f);
    Tensor bias = from_vector({4}, {1.0f + 1e-6f, -3.3333333f, 1e-3f, 12345.678f});
    MatmulPrecisionGuard guard(MatmulPrecision::BF16);
    Tensor y = linear(x, w, bias);
    for (int64_t r = 0; r < 2; ++r)
        for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(y.f32()[r * 4 + c], 6.0f + bias.f32()[c]);
}

TEST(OpsBf16, PrecisionIsKeptFromForwardToBackward) {
    if (!has_bf16_kernel()) GTEST_SKIP() << bf16_kernel_description();
    Tensor a = random_tensor({20, 30}, 4), b = random_tensor({30, 10}, 5);
    Tensor upstream = rounded(random_tensor({20, 10}, 6));
    Result whole = run(&matmul_variant, a, b, 0, upstream, MatmulPrecision::BF16);
    Tensor ca = a.clone().set_requires_grad(true), cb = b.clone().set_requires_grad(true);
    Tensor y;
    {
        MatmulPrecisionGuard guard(MatmulPrecision::BF16);
        y = matmul(ca, cb);
    }
    backward(y, upstream);  // outside the scope: the tape remembers bf16
    EXPECT_EQ(whole.ga.to_vector(), ca.grad().to_vector());
    EXPECT_EQ(whole.gb.to_vector(), cb.grad().to_vector());
}

// A whole BERT classification step (the two-layer fixture of test_bert): loss and every
// parameter gradient with bf16 products against FP32. Through two layers the roundings add
// up, so the bound is on each tensor's L2 norm: 2^-4 (6%) of the FP32 gradient's norm, observed
// up to 2.1% (query and key weights, whose gradient passes back through the softmax of bf16
// scores) and 0.1-1% elsewhere; a wrong transpose or a dropped product gives order 1. Plus a
// floor of 2^-10 of the whole model's gradient norm for gradients that are zero in exact
// arithmetic (the key bias: softmax ignores a constant added to a row), where any rounding is
// infinitely large relative to the reference.
TEST(OpsBf16, BertStepLossAndGradientsNearFp32) {
    if (!has_bf16_kernel()) GTEST_SKIP() << bf16_kernel_description();
    const std::string dir = std::string(QDQ_FIXTURE_DIR) + "/bert_tiny/";
    std::map<std::string, Tensor> e;
    for (NamedTensor& t : load_safetensors(dir + "seqcls.expected.safetensors").tensors) e[t.name] = t.tensor;
    nn::BertConfig c = nn::load_bert_config(dir + "config.json");
    c.hidden_dropout_prob = 0;
    c.attention_probs_dropout_prob = 0;
    auto step = [&](MatmulPrecision precision, std::map<std::string, Tensor>& grads) {
        MatmulPrecisionGuard guard(precision);
        Rng init(1);
        nn::BertForSequenceClassification model(c, init);
        nn::load_state_dict(model, load_safetensors(dir + "seqcls.safetensors").tensors, "seqcls");
        model.train();
        Tensor loss = nn::BertForSequenceClassification::loss(
            model.forward({e["input_ids"], e["token_type_ids"], e["attention_mask"]}), e["labels"]);
        backward(loss);
        for (const NamedTensor& p : model.named_parameters()) grads[p.name] = p.tensor.grad();
        return loss.item();
    };
    std::map<std::string, Tensor> g32, g16;
    double loss32 = step(MatmulPrecision::F32, g32), loss16 = step(MatmulPrecision::BF16, g16);
    EXPECT_NEAR(loss16, loss32, std::ldexp(1.0, -7) * std::fabs(loss32));
    double total = 0;
    for (auto& [name, reference] : g32)
        for (float r : reference.to_vector()) total += (double)r * r;
    for (auto& [name, reference] : g32) {
        double diff = 0, norm = 0;
        for (int64_t i = 0; i < reference.numel(); ++i) {
            double r = reference.f32()[i], d = g16[name].f32()[i] - r;
            diff += d * d;
            norm += r * r;
        }
        EXPECT_LE(std::sqrt(diff), std::ldexp(1.0, -4) * std::sqrt(norm) + std::ldexp(1.0, -10) * std::sqrt(total))
            << name;
    }
}
