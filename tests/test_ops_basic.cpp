// Elementwise, scalar, reduce and shape ops: what the op table (tests/op_table.cpp, run on
// every device against PyTorch, finite differences and the CPU by test_op_table) does not
// reach: views, zero-dim results, long and parallel inputs against simple loops, and bad inputs,
// each of which must throw an error that names the op and the shapes involved.
#include <gtest/gtest.h>


#include <functional>
#include <string>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "tests/support/gradcheck.h"
#include "tests/support/thread_count.h"

using namespace qdq;
using namespace qdq::testing;

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
    const qdq::testing::ThreadCount threads(4);

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

// Broadcasts of one operand over the other's shape, a bias-like vector, one value, and one that
// repeats over a middle dim, each side, above the parallel grain with four threads so that
// chunks start mid-row: every element against the index arithmetic done here.
TEST(OpsParallel, BroadcastsMatchIndexArithmetic) {
    const qdq::testing::ThreadCount threads(4);
    const Tensor x = random_tensor({5, 301, 67}, 3);
    struct Op {
        const char* name;
        std::function<Tensor(const Tensor&, const Tensor&)> op;
        std::function<float(float, float)> f;
    };
    const Op ops[] = {{"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, [](float a, float b) { return a + b; }},
                      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, [](float a, float b) { return a - b; }},
                      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, [](float a, float b) { return a * b; }},
                      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, [](float a, float b) { return a / b; }}};
    // Each small shape with the index of x's element (i, j, k) it pairs with.
    const std::pair<Shape, std::function<int64_t(int64_t, int64_t, int64_t)>> smalls[] = {
        {{67}, [](int64_t, int64_t, int64_t k) { return k; }},
        {{1, 1, 67}, [](int64_t, int64_t, int64_t k) { return k; }},
        {{1}, [](int64_t, int64_t, int64_t) { return (int64_t)0; }},
        {{}, [](int64_t, int64_t, int64_t) { return (int64_t)0; }},
        {{301, 1}, [](int64_t, int64_t j, int64_t) { return j; }},
        {{5, 1, 67}, [](int64_t i, int64_t, int64_t k) { return i * 67 + k; }}};
    for (const auto& [shape, index] : smalls) {
        const Tensor v = add(random_tensor(shape, 4), full(shape, 2.0f));  // no division by ~0
        const float* pv = v.f32();
        for (const Op& o : ops)
            for (bool small_first : {false, true}) {
                const std::vector<float> y = (small_first ? o.op(v, x) : o.op(x, v)).to_vector();
                const float* px = x.f32();
                for (int64_t i = 0, e = 0; i < 5; ++i)
                    for (int64_t j = 0; j < 301; ++j)
                        for (int64_t k = 0; k < 67; ++k, ++e) {
                            const float a = px[e], b = pv[index(i, j, k)];
                            ASSERT_EQ(y[(size_t)e], small_first ? o.f(b, a) : o.f(a, b))
                                << o.name << " " << shape_str(shape) << (small_first ? " first" : " second") << " at " << e;
                        }
            }
    }}

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
