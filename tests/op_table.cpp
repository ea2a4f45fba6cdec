#include "tests/op_table.h"

#include "autograd/ops.h"
#include "autograd/rng.h"
#include "tests/support/fixture.h"

namespace qdq::testing {

namespace {

using V = const std::vector<Tensor>&;
using P = const nlohmann::json&;

const Fixture& fixture_file(const std::string& file) {
    static const Fixture basic("ops_basic.json"), nn("ops_nn.json");
    return file == "ops_basic.json" ? basic : nn;
}

// Tolerances of the device against the CPU, by what the op computes.
constexpr Tolerance kExact{0.0f, 0.0f};  // copies, masks, one float op per element: the same floats
// Sums over up to 53 products of |x| < 1 in another order (cuBLAS's against OpenBLAS's).
constexpr Tolerance kProducts{1e-5f, 1e-5f};
// Row kernels: a block's tree of partial sums against the CPU's running sums, and the CPU's exp
// approximation (within 2 ulp, test_ops_nn) against the device's expf.
constexpr Tolerance kRows{2e-5f, 2e-5f};

OpCase make_case(const char* name, const char* op, const char* fixture, std::function<std::vector<Tensor>()> generate,
                 OpFn f, Tolerance device, std::vector<size_t> constant) {
    OpCase c;
    c.name = name;
    c.op = op;
    c.fixture = fixture;
    c.generate = std::move(generate);
    c.f = std::move(f);
    c.device = device;
    c.constant = std::move(constant);
    return c;
}

OpCase basic(const char* name, const char* op, OpFn f, Tolerance device = {1e-6f, 1e-6f}) {
    return make_case(name, op, "ops_basic.json", nullptr, std::move(f), device, {});
}

// An ops_nn.json case; f also gets the case's "params" (a softmax's scale, an eps).
OpCase nn(const char* name, const char* op, std::function<Tensor(V, P)> f, Tolerance device,
          std::vector<size_t> constant = {}) {
    OpFn bound = [name = std::string(name), f](V x) { return f(x, fixture_file("ops_nn.json").at(name).at("params")); };
    return make_case(name, op, "ops_nn.json", nullptr, bound, device, std::move(constant));
}

OpCase generated(const char* name, const char* op, std::function<std::vector<Tensor>()> inputs, OpFn f,
                 Tolerance device, std::vector<size_t> constant = {}) {
    return make_case(name, op, "", std::move(inputs), std::move(f), device, std::move(constant));
}

OpFn mm(bool trans_a, bool trans_b) {
    return [=](V x) { return matmul(x[0], x[1], trans_a, trans_b); };
}

std::vector<OpCase> basic_cases() {
    auto binary = [](Tensor (*op)(const Tensor&, const Tensor&)) { return [op](V x) { return op(x[0], x[1]); }; };
    return {
        basic("add_same", "add", binary(add)),
        basic("add_bcast_last", "add", binary(add)),
        basic("add_bcast_both", "add", binary(add)),
        basic("sub_same", "sub", binary(sub)),
        basic("sub_bcast", "sub", binary(sub)),
        basic("sub_bcast_first", "sub", binary(sub)),
        basic("mul_same", "mul", binary(mul)),
        basic("mul_bcast_last", "mul", binary(mul)),
        basic("mul_bcast_both", "mul", binary(mul)),
        basic("mul_one_element", "mul", binary(mul)),
        basic("div_same", "div", binary(div)),
        basic("div_bcast_divisor", "div", binary(div)),
        basic("div_bcast_last", "div", binary(div)),
        basic("div_bcast_both", "div", binary(div)),
        basic("add_scalar", "add_scalar", [](V x) { return add_scalar(x[0], 0.75f); }),
        basic("mul_scalar", "mul_scalar", [](V x) { return mul_scalar(x[0], -1.5f); }),
        basic("pow_square", "pow_scalar", [](V x) { return pow_scalar(x[0], 2.0f); }),
        basic("pow_cube", "pow_scalar", [](V x) { return pow_scalar(x[0], 3.0f); }),
        basic("pow_zero", "pow_scalar", [](V x) { return pow_scalar(x[0], 0.0f); }),
        basic("pow_sqrt", "pow_scalar", [](V x) { return pow_scalar(x[0], 0.5f); }),
        basic("pow_negative", "pow_scalar", [](V x) { return pow_scalar(x[0], -1.5f); }),
        basic("sum_axis0", "sum", [](V x) { return sum(x[0], 0); }),
        basic("sum_axis1_keepdim", "sum", [](V x) { return sum(x[0], 1, true); }),
        basic("sum_last", "sum", [](V x) { return sum(x[0], -1); }),
        basic("mean_axis1", "mean", [](V x) { return mean(x[0], 1); }),
        basic("mean_last_keepdim", "mean", [](V x) { return mean(x[0], -1, true); }),
        basic("sum_all", "sum_all", [](V x) { return sum_all(x[0]); }),
        basic("mean_all", "mean_all", [](V x) { return mean_all(x[0]); }),
        basic("reshape_infer", "reshape", [](V x) { return reshape(x[0], {4, -1}); }, kExact),
        basic("reshape_flat", "reshape", [](V x) { return reshape(x[0], {24}); }, kExact),
        basic("transpose_outer", "transpose", [](V x) { return transpose(x[0], 0, 2); }, kExact),
        basic("transpose_last2", "transpose", [](V x) { return transpose(x[0], -1, -2); }, kExact),
        basic("permute_4d", "permute", [](V x) { return permute(x[0], {2, 0, 3, 1}); }, kExact),
        basic("permute_keep_last", "permute", [](V x) { return permute(x[0], {1, 0, 2}); }, kExact),
        basic("split_heads", "split_heads", [](V x) { return split_heads(x[0], 2); }, kExact),
        basic("merge_heads", "merge_heads", [](V x) { return merge_heads(x[0]); }, kExact),
        basic("slice_middle", "slice", [](V x) { return slice(x[0], 1, 1, 3); }, kExact),
        basic("slice_first", "slice", [](V x) { return slice(x[0], 0, 1, 2); }, kExact),
        basic("slice_last", "slice", [](V x) { return slice(x[0], -1, 0, 2); }, kExact),
        basic("concat_first", "concat", [](V x) { return concat(x, 0); }, kExact),
        basic("concat_middle", "concat", [](V x) { return concat(x, 1); }, kExact),
        basic("concat_last", "concat", [](V x) { return concat(x, -1); }, kExact),
    };
}

std::vector<OpCase> nn_cases() {
    auto product = [](bool ta, bool tb) { return [f = mm(ta, tb)](V x, P) { return f(x); }; };
    auto layer_norm_case = [](V x, P p) { return layer_norm(x[0], x[1], x[2], p.at("eps")); };
    std::vector<OpCase> cases = {
        nn("matmul_nn", "matmul", product(false, false), kProducts),
        nn("matmul_nt", "matmul", product(false, true), kProducts),
        nn("matmul_tn", "matmul", product(true, false), kProducts),
        nn("matmul_tt", "matmul", product(true, true), kProducts),
        nn("matmul_attention_scores", "matmul", product(false, true), kProducts),
        nn("matmul_attention_context", "matmul", product(false, false), kProducts),
        nn("matmul_shared_b", "matmul", product(false, false), kProducts),
        nn("matmul_shared_b_nt", "matmul", product(false, true), kProducts),
        nn("matmul_shared_b_tn", "matmul", product(true, false), kProducts),
        nn("linear_bias", "linear", [](V x, P) { return linear(x[0], x[1], x[2]); }, kProducts),
        nn("linear_no_bias", "linear", [](V x, P) { return linear(x[0], x[1], Tensor()); }, kProducts),
        // Repeated ids: their rows' gradients are atomic adds on the device, in any order.
        nn("embedding", "embedding", [](V x, P) { return embedding(x[0], x[1]); }, {1e-6f, 1e-6f}),
        nn("embedding_padding_idx", "embedding",
           [](V x, P p) { return embedding(x[0], x[1], (int64_t)p.at("padding_idx")); }, {1e-6f, 1e-6f}),
        // Below x ≈ −8.5 PyTorch's float64 gelu (1 + erf, cancelling) returns 0 where the exact
        // value is < 1e-16: atol covers it, and test_ops_nn's GeluAndItsDerivativeOnADenseGrid
        // checks that tail against erfc in relative terms.
        nn("gelu", "gelu", [](V x, P) { return gelu(x[0]); }, {1e-6f, 1e-6f}),
        nn("tanh", "tanh", [](V x, P) { return qdq::tanh(x[0]); }, {1e-6f, 1e-6f}),
        nn("softmax_plain", "softmax", [](V x, P p) { return softmax(x[0], p.at("scale")); }, kRows),
        nn("softmax_scaled_padding_mask", "softmax", [](V x, P p) { return softmax(x[0], p.at("scale"), x[1]); },
           kRows, {1}),
        nn("softmax_causal_mask", "softmax", [](V x, P p) { return softmax(x[0], p.at("scale"), x[1]); }, kRows,
           {1}),
        nn("log_softmax", "log_softmax", [](V x, P) { return log_softmax(x[0]); }, kRows),
        nn("cross_entropy", "cross_entropy", [](V x, P) { return cross_entropy(x[0], x[1]); }, kRows),
        nn("layer_norm_eps1e12", "layer_norm", layer_norm_case, kRows),
        nn("layer_norm_eps1e5", "layer_norm", layer_norm_case, kRows),
        nn("add_layer_norm", "add_layer_norm",
           [](V x, P p) { return add_layer_norm(x[0], x[1], x[2], x[3], p.at("eps")); }, kRows),
    };
    for (OpCase& c : cases) {
        // torch's padding_idx: that row gets no gradient from the lookup, though it is read.
        if (c.name == "embedding_padding_idx") c.gradcheck = false;
        // Rows spread over ±0.05 only (rstd ≈ 35), so h = 1e-2 would be a third of that spread
        // and the central difference's h²·f''' term would dominate. A step of 2e-4 makes that
        // term ~1e-4, and float32 rounding of the weighted sum divided by 2h ~1e-2; gradients
        // here are O(1), so a wrong term still fails by far.
        if (c.name == "layer_norm_eps1e5") c.gradcheck_options = {2e-4f, 2e-2f, 2e-2f};
    }
    return cases;
}

Tensor ints(const Shape& shape, const std::vector<int32_t>& values) { return from_ints(shape, values); }

// Cases the fixtures do not reach: ops without a PyTorch twin here (dropout draws its own
// numbers; distillation's KL has its own fixture in test_distillation), add_inplace, and shapes
// that take the device's other paths: rows longer than a warp or a block, a grid-stride loop
// longer than one pass, every transpose of a batched product, and bf16 products.
std::vector<OpCase> generated_cases() {
    auto rand = [](Shape s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) { return random_tensor(s, seed, lo, hi); };
    std::vector<OpCase> cases = {
        // Not recorded: the output only, from copies of both operands.
        generated("add_inplace", "add_inplace", [=] { return std::vector{rand({2, 3, 5}, 1), rand({2, 3, 5}, 2)}; },
                  [](V x) {
                      Tensor sum = x[0].clone();
                      add_inplace(sum, x[1]);
                      return sum;
                  },
                  kExact, {0, 1}),
        // A fresh generator per call: the same mask on every device and every probe; the
        // device's mask is the CPU's (cuda/counter_hash.h).
        generated("dropout", "dropout", [=] { return std::vector{rand({4, 33}, 3)}; },
                  [](V x) {
                      Rng rng(21);
                      return dropout(x[0], 0.25f, true, rng);
                  },
                  kExact),
        generated("softmax_kl_div_3_classes", "softmax_kl_div",
                  [=] { return std::vector{rand({5, 3}, 4, -6, 6), rand({5, 3}, 5, -6, 6)}; },
                  [](V x) { return softmax_kl_div(x[0], x[1], 1.0f); }, {1e-5f, 1e-6f}, {1}),
        generated("softmax_kl_div_77_classes", "softmax_kl_div",
                  [=] { return std::vector{rand({5, 77}, 6, -6, 6), rand({5, 77}, 7, -6, 6)}; },
                  [](V x) { return softmax_kl_div(x[0], x[1], 4.0f); }, {1e-5f, 1e-6f}, {1}),
        generated("gelu_strided", "gelu", [=] { return std::vector{rand({5000}, 8, -4, 4)}; },
                  [](V x) { return gelu(x[0]); }, {1e-6f, 1e-6f}),
        // Repeated ids: their rows' gradients are atomic adds on the device, in any order.
        generated("embedding_rows_of_33", "embedding",
                  [=] { return std::vector{rand({6, 33}, 9), ints({4}, {5, 0, 5, 2})}; },
                  [](V x) { return embedding(x[0], x[1]); }, {1e-6f, 1e-6f}),
        generated("softmax_rows_of_150", "softmax",
                  [=] {
                      Tensor mask = zeros({150});
                      mask.f32()[149] = mask.f32()[7] = -10000.0f;
                      return std::vector{rand({2, 3, 150}, 10, -3, 3), mask};
                  },
                  [](V x) { return softmax(x[0], 0.5f, x[1]); }, kRows, {1}),
        generated("log_softmax_rows_of_200", "log_softmax", [=] { return std::vector{rand({3, 200}, 11, -3, 3)}; },
                  [](V x) { return log_softmax(x[0]); }, kRows),
        generated("cross_entropy_ignored_row", "cross_entropy",
                  [=] { return std::vector{rand({6, 33}, 12, -3, 3), ints({6}, {0, 3, -100, 1, 2, 32})}; },
                  [](V x) { return cross_entropy(x[0], x[1], -100); }, kRows),
        generated("layer_norm_rows_of_160", "layer_norm",
                  [=] { return std::vector{rand({3, 160}, 13), rand({160}, 14, 0.5f, 1.5f), rand({160}, 15)}; },
                  [](V x) { return layer_norm(x[0], x[1], x[2], 1e-12f); }, kRows),
        generated("add_layer_norm_rows_of_33", "add_layer_norm",
                  [=] { return std::vector{rand({6, 33}, 16), rand({6, 33}, 17), rand({33}, 18), rand({33}, 19)}; },
                  [](V x) { return add_layer_norm(x[0], x[1], x[2], x[3], 1e-12f); }, kRows),
        generated("sum_middle_axis_long", "sum", [=] { return std::vector{rand({3, 700, 5}, 20)}; },
                  [](V x) { return sum(x[0], 1); }, {1e-6f, 1e-6f}),
        generated("matmul_batched_tt", "matmul", [=] { return std::vector{rand({2, 3, 9, 5}, 21), rand({2, 3, 4, 9}, 22)}; },
                  mm(true, true), kProducts),
        generated("matmul_k53", "matmul", [=] { return std::vector{rand({37, 53}, 23), rand({53, 29}, 24)}; },
                  mm(false, false), kProducts),
        generated("linear_bias_rows_of_40", "linear",
                  [=] { return std::vector{rand({4, 10, 40}, 25), rand({7, 40}, 26), rand({7}, 27)}; },
                  [](V x) { return linear(x[0], x[1], x[2]); }, kProducts),
    };
    // bf16 products: attention's batched ones (every transpose), a weight shared by the batch
    // (untransposed, one folded product; transposed, one per entry) and a layer.
    const struct {
        const char* name;
        Shape a, b;
        bool ta, tb;
    } bf16_products[] = {{"matmul_bf16_batched_nn", {2, 3, 5, 9}, {2, 3, 9, 4}, false, false},
                         {"matmul_bf16_batched_nt", {2, 3, 5, 9}, {2, 3, 4, 9}, false, true},
                         {"matmul_bf16_batched_tn", {2, 3, 9, 5}, {2, 3, 9, 4}, true, false},
                         {"matmul_bf16_batched_tt", {2, 3, 9, 5}, {2, 3, 4, 9}, true, true},
                         {"matmul_bf16_shared_b", {3, 5, 40}, {40, 6}, false, false},
                         {"matmul_bf16_shared_b_tn", {2, 3, 9, 5}, {9, 4}, true, false}};
    uint64_t seed = 30;
    for (const auto& p : bf16_products) {
        cases.push_back(generated(p.name, "matmul", [=] { return std::vector{rand(p.a, seed), rand(p.b, seed + 1)}; },
                                  mm(p.ta, p.tb), kProducts));
        seed += 2;
    }
    cases.push_back(generated("linear_bf16", "linear",
                              [=] { return std::vector{rand({4, 10, 40}, 50), rand({7, 40}, 51), rand({7}, 52)}; },
                              [](V x) { return linear(x[0], x[1], x[2]); }, kProducts));
    cases.back().fp32_addends = {2};
    for (OpCase& c : cases)
        if (c.name.find("bf16") != std::string::npos) c.bf16 = true;
    return cases;
}

}  // namespace

const std::vector<OpCase>& op_table() {
    static const std::vector<OpCase> table = [] {
        std::vector<OpCase> all = basic_cases();
        for (std::vector<OpCase> part : {nn_cases(), generated_cases()})
            all.insert(all.end(), part.begin(), part.end());
        return all;
    }();
    return table;
}

std::vector<Tensor> case_inputs(const OpCase& c) {
    return c.fixture.empty() ? c.generate() : fixture_inputs(case_fixture(c));
}

const nlohmann::json& case_fixture(const OpCase& c) { return fixture_file(c.fixture).at(c.name); }

}  // namespace qdq::testing
