// Finite-difference gradient check for ops with float32 kernels.
#pragma once

#include <functional>
#include <vector>

#include "autograd/tensor.h"

namespace qdq::testing {

struct GradcheckOptions {
    // Central differences in float32: truncation error is h²/6·|f'''| (~2e-5 for h = 1e-2 and
    // the smooth ops here) and rounding error about 1e-7·Σ|w·y|/h (~1e-4 for the ~100-element
    // outputs used); atol/rtol sit an order of magnitude above both, far below the size of a
    // wrong sign, a wrong index or a missing term.
    float h = 1e-2f;
    float atol = 2e-3f;
    float rtol = 1e-2f;
};

// Checks every element of d/d(input) of L = Σ w ⊙ f(inputs), w fixed random, for each float
// input: the tape's gradient against (L(x + h) - L(x - h)) / 2h. f must be deterministic
// (give it a fresh Rng with a fixed seed if it draws random numbers).
void expect_gradients_match_finite_differences(
    const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
    const GradcheckOptions& options = {});

// |actual - expected| <= atol + rtol·|expected|, element by element, with the first few
// mismatches reported by index.
void expect_close(const Tensor& actual, const Tensor& expected, float rtol = 1e-5f,
                  float atol = 1e-6f, const char* what = "");

Tensor random_tensor(const Shape& shape, uint64_t seed, float low = -1.0f, float high = 1.0f);

}  // namespace qdq::testing
