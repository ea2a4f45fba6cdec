#include "tests/support/gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>

#include "autograd/rng.h"
#include "autograd/tape.h"

namespace qdq::testing {

Tensor random_tensor(const Shape& shape, uint64_t seed, float low, float high) {
    Rng rng(seed);
    Tensor t = empty(shape);
    float* p = t.f32();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = low + (high - low) * rng.uniform();
    return t;
}

static double weighted_sum(const Tensor& y, const Tensor& w) {
    std::vector<float> vy = y.to_vector(), vw = w.to_vector();
    double s = 0;
    for (size_t i = 0; i < vy.size(); ++i) s += (double)vy[i] * vw[i];
    return s;
}

void expect_gradients_match_finite_differences(
    const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
    const GradcheckOptions& options) {
    std::vector<Tensor> leaves;
    for (Tensor& t : inputs) {
        Tensor leaf = t.clone();
        if (leaf.dtype() == DType::F32) leaf.set_requires_grad(true);
        leaves.push_back(leaf);
    }
    Tensor y = f(leaves);
    Tensor w = random_tensor(y.shape(), 12345);
    backward(y, w);

    NoGradGuard no_grad;
    for (size_t k = 0; k < leaves.size(); ++k) {
        if (leaves[k].dtype() != DType::F32) continue;
        Tensor analytic = leaves[k].grad();
        ASSERT_TRUE(analytic.defined()) << "input " << k << " received no gradient";
        std::vector<Tensor> probe = leaves;
        probe[k] = leaves[k].clone();
        float* x = probe[k].f32();
        const float* g = analytic.f32();
        int failures = 0;
        for (int64_t i = 0; i < probe[k].numel(); ++i) {
            float saved = x[i];
            x[i] = saved + options.h;
            double plus = weighted_sum(f(probe), w);
            x[i] = saved - options.h;
            double minus = weighted_sum(f(probe), w);
            x[i] = saved;
            double numeric = (plus - minus) / (2.0 * options.h);
            double tol = options.atol + options.rtol * std::fabs(numeric);
            if (std::fabs(numeric - g[i]) > tol && failures++ < 5)
                ADD_FAILURE() << "input " << k << " element " << i << ": tape gradient " << g[i]
                              << ", finite difference " << numeric;
        }
        EXPECT_EQ(failures, 0) << "input " << k << ": gradient mismatches";
    }
}

void expect_close(const Tensor& actual, const Tensor& expected, float rtol, float atol,
                  const char* what) {
    ASSERT_EQ(shape_str(actual.shape()), shape_str(expected.shape())) << what;
    std::vector<float> a = actual.to_vector(), e = expected.to_vector();
    int failures = 0;
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        double diff = std::fabs((double)a[i] - e[i]);
        worst = std::max(worst, diff / (atol + rtol * std::fabs(e[i])));
        if (!(diff <= atol + rtol * std::fabs(e[i])) && failures++ < 5)
            ADD_FAILURE() << what << " element " << i << ": got " << a[i] << ", expected " << e[i];
    }
    EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << a.size()
                           << " elements outside tolerance (worst at " << worst << "x tolerance)";
}

}  // namespace qdq::testing
