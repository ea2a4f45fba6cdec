// Elementwise, scalar, reduce and shape ops, each checked two ways:
//  - its tape gradient against central finite differences (tests/support/gradcheck.h gives
//    the tolerance's origin);
//  - its output and input gradients against PyTorch (fixtures/ops_basic.json, written by
//    fixtures/make_ops_basic.py). rtol 1e-5 allows a few float32 roundings of difference in
//    order of operations; atol 1e-6 covers results that cancel to near zero.
// Then bad inputs: each must throw an error that names the op and the shapes involved.
#include <gtest/gtest.h>

#include <omp.h>

#include <functional>
#include <string>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "tests/support/fixture.h"
#include "tests/support/gradcheck.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct OpCase {
    const char* name;  // the case in ops_basic.json; its inputs are x0, x1, ...
    OpFn f;
};

const std::vector<OpCase>& op_cases() {
    using V = const std::vector<Tensor>&;
    static const std::vector<OpCase> cases = {
        {"add_same", [](V x) { return add(x[0], x[1]); }},
        {"add_bcast_last", [](V x) { return add(x[0], x[1]); }},
        {"add_bcast_both", [](V x) { return add(x[0], x[1]); }},
        {"sub_same", [](V x) { return sub(x[0], x[1]); }},
        {"sub_bcast", [](V x) { return sub(x[0], x[1]); }},
        {"sub_bcast_first", [](V x) { return sub(x[0], x[1]); }},
        {"mul_same", [](V x) { return mul(x[0], x[1]); }},
        {"mul_bcast_last", [](V x) { return mul(x[0], x[1]); }},
        {"mul_bcast_both", [](V x) { return mul(x[0], x[1]); }},
        {"mul_one_element", [](V x) { return mul(x[0], x[1]); }},
        {"div_same", [](V x) { return div(x[0], x[1]); }},
        {"div_bcast_divisor", [](V x) { return div(x[0], x[1]); }},
        {"div_bcast_last", [](V x) { return div(x[0], x[1]); }},
        {"div_bcast_both", [](V x) { return div(x[0], x[1]); }},
        {"add_scalar", [](V x) { return add_scalar(x[0], 0.75f); }},
        {"mul_scalar", [](V x) { return mul_scalar(x[0], -1.5f); }},
        {"pow_square", [](V x) { return pow_scalar(x[0], 2.0f); }},
        {"pow_cube", [](V x) { return pow_scalar(x[0], 3.0f); }},
        {"pow_zero", [](V x) { return pow_scalar(x[0], 0.0f); }},
        {"pow_sqrt", [](V x) { return pow_scalar(x[0], 0.5f); }},
        {"pow_negative", [](V x) { return pow_scalar(x[0], -1.5f); }},
        {"sum_axis0", [](V x) { return sum(x[0], 0); }},
        {"sum_axis1_keepdim", [](V x) { return sum(x[0], 1, true); }},
        {"sum_last", [](V x) { return sum(x[0], -1); }},
        {"mean_axis1", [](V x) { return mean(x[0], 1); }},
        {"mean_last_keepdim", [](V x) { return mean(x[0], -1, true); }},
        {"sum_all", [](V x) { return sum_all(x[0]); }},
        {"mean_all", [](V x) { return mean_all(x[0]); }},
        {"reshape_infer", [](V x) { return reshape(x[0], {4, -1}); }},
        {"reshape_flat", [](V x) { return reshape(x[0], {24}); }},
        {"transpose_outer", [](V x) { return transpose(x[0], 0, 2); }},
        {"transpose_last2", [](V x) { return transpose(x[0], -1, -2); }},
        {"permute_4d", [](V x) { return permute(x[0], {2, 0, 3, 1}); }},
        {"permute_keep_last", [](V x) { return permute(x[0], {1, 0, 2}); }},
        {"split_heads", [](V x) { return split_heads(x[0], 2); }},
        {"merge_heads", [](V x) { return merge_heads(x[0]); }},
        {"slice_middle", [](V x) { return slice(x[0], 1, 1, 3); }},
        {"slice_first", [](V x) { return slice(x[0], 0, 1, 2); }},
        {"slice_last", [](V x) { return slice(x[0], -1, 0, 2); }},
        {"concat_first", [](V x) { return concat(x, 0); }},
        {"concat_middle", [](V x) { return concat(x, 1); }},
        {"concat_last", [](V x) { return concat(x, -1); }},
    };
    return cases;
}

const Fixture& ops_fixture() {
    static const Fixture fixture("ops_basic.json");
    return fixture;
}

void PrintTo(const OpCase& op, std::ostream* os) { *os << op.name; }

class OpCaseTest : public ::testing::TestWithParam<OpCase> {};

std::string case_name(const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; }

}  // namespace

// The fixture's inputs keep divisors and the bases of fractional or negative powers at
// magnitude >= 0.5, so h = 1e-2 never crosses a singularity.
TEST_P(OpCaseTest, GradientMatchesFiniteDifferences) {
    const OpCase& op = GetParam();
    expect_gradients_match_finite_differences(op.f, fixture_inputs(ops_fixture().at(op.name)));
}

TEST_P(OpCaseTest, OutputAndGradientsMatchPyTorch) {
    const OpCase& op = GetParam();
    const nlohmann::json& c = ops_fixture().at(op.name);
    std::vector<Tensor> inputs = fixture_inputs(c);
    for (Tensor& x : inputs) x.set_requires_grad();
    Tensor out = op.f(inputs);
    expect_close(out, fixture_tensor(c, "out"), 1e-5f, 1e-6f, "out");
    backward(out, fixture_tensor(c, "w"));
    for (size_t k = 0; k < inputs.size(); ++k) {
        std::string grad_name = indexed_name("grad_x", k);
        ASSERT_TRUE(inputs[k].grad().defined()) << grad_name << " was not computed";
        expect_close(inputs[k].grad(), fixture_tensor(c, grad_name), 1e-5f, 1e-6f,
                     grad_name.c_str());
    }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpCaseTest, ::testing::ValuesIn(op_cases()), case_name);

TEST(OpsFixture, EveryFixtureCaseHasATestCase) {
    for (const auto& [name, c] : ops_fixture().cases().items()) {
        bool found = false;
        for (const OpCase& op : op_cases()) found = found || name == op.name;
        EXPECT_TRUE(found) << "fixture case " << name << " is not run by any test";
    }
}

TEST(OpsShape, ReshapeIsAViewOnTheSameStorage) {
    Tensor a = from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor b = reshape(a, {3, -1});
    EXPECT_EQ(shape_str(b.shape()), "[3, 2]");
    EXPECT_EQ(b.f32(), a.f32());
    a.f32()[5] = 60;
    EXPECT_EQ(b.to_vector()[5], 60);
}

TEST(OpsReduce, FullReductionsGiveAZeroDimTensor) {
    Tensor a = from_vector({2, 2}, {1, 2, 3, 4});
    EXPECT_EQ(sum_all(a).dim(), 0);
    EXPECT_EQ(sum_all(a).item(), 10);
    EXPECT_EQ(mean_all(a).dim(), 0);
    EXPECT_EQ(mean_all(a).item(), 2.5);
}

// A sum longer than one parallel block: the blocks must be combined, none dropped or
// counted twice. Every term and partial sum is an exact integer, so equality is exact.
TEST(OpsReduce, LongSumsCoverEveryBlock) {
    const int64_t n = 100003;
    std::vector<float> v((size_t)n);
    for (int64_t i = 0; i < n; ++i) v[(size_t)i] = (float)(i % 7);
    Tensor a = from_vector({n}, v);
    double expected = 0;
    for (float x : v) expected += x;
    EXPECT_EQ(sum_all(a).item(), (float)expected);
    EXPECT_EQ(sum(reshape(a, {1, n}), 1).item(), (float)expected);
}

// Inputs above the parallel grain, with four threads forced even on a small machine, so
// chunks start mid-row and mid-segment; the reference is a plain serial loop here.
TEST(OpsParallel, LargeInputsSplitAcrossThreadsMatchSimpleLoops) {
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(4);

    Tensor a = random_tensor({3, 700, 50}, 1).set_requires_grad();
    Tensor w = random_tensor({3, 50}, 2);
    Tensor s = sum(a, 1);
    backward(s, w);
    const float* pa = a.f32();
    std::vector<float> expected_sum(150), expected_grad((size_t)a.numel());
    for (int64_t o = 0; o < 3; ++o)
        for (int64_t i = 0; i < 50; ++i) {
            double acc = 0;
            for (int64_t k = 0; k < 700; ++k) {
                acc += pa[(o * 700 + k) * 50 + i];
                expected_grad[(size_t)((o * 700 + k) * 50 + i)] = w.f32()[o * 50 + i];
            }
            expected_sum[(size_t)(o * 50 + i)] = (float)acc;
        }
    expect_close(s, from_vector({3, 50}, expected_sum), 1e-6f, 1e-6f, "sum");
    expect_close(a.grad(), from_vector(a.shape(), expected_grad), 0, 0, "sum grad");

    Tensor b = random_tensor({40, 30, 32}, 3).set_requires_grad();
    Tensor t = transpose(b, 0, 2);
    Tensor wt = random_tensor(t.shape(), 4);
    backward(t, wt);
    std::vector<float> expected_t((size_t)t.numel()), expected_gb((size_t)b.numel());
    for (int64_t i = 0; i < 40; ++i)
        for (int64_t j = 0; j < 30; ++j)
            for (int64_t k = 0; k < 32; ++k) {
                expected_t[(size_t)((k * 30 + j) * 40 + i)] = b.f32()[(i * 30 + j) * 32 + k];
                expected_gb[(size_t)((i * 30 + j) * 32 + k)] = wt.f32()[(k * 30 + j) * 40 + i];
            }
    expect_close(t, from_vector(t.shape(), expected_t), 0, 0, "transpose");
    expect_close(b.grad(), from_vector(b.shape(), expected_gb), 0, 0, "transpose grad");

    Tensor c = random_tensor({300, 130}, 5).set_requires_grad();
    Tensor sl = slice(c, 1, 10, 120);
    Tensor ws = random_tensor(sl.shape(), 6);
    backward(sl, ws);
    std::vector<float> expected_sl((size_t)sl.numel()), expected_gc((size_t)c.numel(), 0.0f);
    for (int64_t r = 0; r < 300; ++r)
        for (int64_t k = 10; k < 120; ++k) {
            expected_sl[(size_t)(r * 110 + k - 10)] = c.f32()[r * 130 + k];
            expected_gc[(size_t)(r * 130 + k)] = ws.f32()[r * 110 + k - 10];
        }
    expect_close(sl, from_vector(sl.shape(), expected_sl), 0, 0, "slice");
    expect_close(c.grad(), from_vector(c.shape(), expected_gc), 0, 0, "slice grad");

    omp_set_num_threads(saved_threads);
}

namespace {

// Runs f, which must throw std::runtime_error whose message contains every one of `words`.
void expect_error(const std::function<void()>& f, const std::vector<std::string>& words) {
    try {
        f();
    } catch (const std::runtime_error& e) {
        std::string message = e.what();
        for (const std::string& w : words)
            EXPECT_NE(message.find(w), std::string::npos)
                << "'" << message << "' lacks '" << w << "'";
        return;
    }
    ADD_FAILURE() << "no std::runtime_error thrown (expected one mentioning " << words[0] << ")";
}

}  // namespace

TEST(OpsErrors, ElementwiseShapesThatDoNotBroadcast) {
    Tensor a = zeros({2, 3}), b = zeros({4});
    expect_error([&] { add(a, b); }, {"[2, 3]", "[4]"});
    expect_error([&] { sub(a, b); }, {"[2, 3]", "[4]"});
    expect_error([&] { mul(a, zeros({3, 3})); }, {"[2, 3]", "[3, 3]"});
    expect_error([&] { div(a, zeros({2, 2})); }, {"[2, 3]", "[2, 2]"});
}

TEST(OpsErrors, ReduceAxisOutOfRange) {
    Tensor a = zeros({2, 3});
    expect_error([&] { sum(a, 2); }, {"sum", "[2, 3]"});
    expect_error([&] { sum(a, -3); }, {"sum", "[2, 3]"});
    expect_error([&] { mean(a, 5, true); }, {"mean", "[2, 3]"});
    expect_error([&] { sum(zeros({}), 0); }, {"sum", "[]"});
}

TEST(OpsErrors, ReshapeToAShapeOfAnotherSize) {
    Tensor a = zeros({2, 3});
    expect_error([&] { reshape(a, {4, 2}); }, {"reshape", "[2, 3]", "[4, 2]"});
    expect_error([&] { reshape(a, {4, -1}); }, {"reshape", "[2, 3]", "[4, -1]"});
    expect_error([&] { reshape(a, {-1, -1}); }, {"reshape", "[2, 3]", "[-1, -1]"});
    expect_error([&] { reshape(a, {-2, -3}); }, {"reshape", "[2, 3]", "[-2, -3]"});
    expect_error([&] { reshape(a, {0, -1}); }, {"reshape", "[2, 3]", "[0, -1]"});
}

TEST(OpsErrors, TransposeAndPermuteAxes) {
    Tensor a = zeros({2, 3, 4});
    expect_error([&] { transpose(a, 0, 3); }, {"transpose", "[2, 3, 4]"});
    expect_error([&] { transpose(a, -4, 1); }, {"transpose", "[2, 3, 4]"});
    expect_error([&] { permute(a, {0, 1}); }, {"permute", "[0, 1]", "[2, 3, 4]"});
    expect_error([&] { permute(a, {0, 1, 1}); }, {"permute", "[0, 1, 1]", "[2, 3, 4]"});
    expect_error([&] { permute(a, {0, 1, 3}); }, {"permute", "[0, 1, 3]", "[2, 3, 4]"});
}

TEST(OpsErrors, HeadsNeedTheirRanks) {
    expect_error([&] { split_heads(zeros({2, 3, 10}), 4); }, {"split_heads", "[2, 3, 10]"});
    expect_error([&] { split_heads(zeros({2, 12}), 4); }, {"split_heads", "[2, 12]"});
    expect_error([&] { split_heads(zeros({2, 3, 8}), 0); }, {"split_heads", "[2, 3, 8]"});
    expect_error([&] { merge_heads(zeros({2, 3, 8})); }, {"merge_heads", "[2, 3, 8]"});
}

TEST(OpsErrors, SliceOutsideTheAxis) {
    Tensor a = zeros({2, 4});
    expect_error([&] { slice(a, 1, 2, 5); }, {"slice", "[2, 4]"});
    expect_error([&] { slice(a, 1, 3, 2); }, {"slice", "[2, 4]"});
    expect_error([&] { slice(a, 1, -1, 2); }, {"slice", "[2, 4]"});
    expect_error([&] { slice(a, 2, 0, 1); }, {"slice", "[2, 4]"});
}

TEST(OpsErrors, ConcatPartsThatDoNotFit) {
    expect_error([&] { concat({}, 0); }, {"concat"});
    Tensor a = zeros({2, 3});
    expect_error([&] { concat({a, zeros({2, 4})}, 0); }, {"concat", "[2, 3]", "[2, 4]"});
    expect_error([&] { concat({a, zeros({2, 3, 1})}, 1); }, {"concat", "[2, 3]", "[2, 3, 1]"});
    expect_error([&] { concat({a, a}, 2); }, {"concat", "[2, 3]"});
}
