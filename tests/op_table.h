// One table of every op of autograd/ops.h: each entry names the op it runs, how to make its
// inputs (a PyTorch fixture's case, or generated) and how to call it. tests/test_op_table.cpp
// runs every entry forward and backward on each device; a declared op without an entry fails
// there by itself.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/tensor.h"
#include "tests/support/gradcheck.h"

namespace qdq::testing {

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

// |actual − expected| <= atol + rtol·|expected|, element by element.
struct Tolerance {
    float rtol, atol;
};

struct OpCase {
    std::string name;  // the test's name; with a fixture, also its case there
    std::string op;    // the function of autograd/ops.h the case runs
    // "ops_basic.json" or "ops_nn.json" (tests/fixtures): the inputs x0, x1, ..., the output
    // gradient w, and PyTorch's output and input gradients for case `name`. Empty: `generate`
    // makes the inputs, and the output gradient is random.
    std::string fixture;
    std::function<std::vector<Tensor>()> generate;
    OpFn f;
    // How far the device's output and gradients may be from the CPU's. The default: float
    // kernels that round alike, a few ulps apart where the two sides' libm or order of sums
    // differ. Copies, gathers and masks are exact.
    Tolerance device{1e-6f, 1e-6f};
    // Float inputs held constant (masks, a teacher's logits); int32 inputs always are. Every
    // other input must get a gradient.
    std::vector<size_t> constant;
    // Central differences on the CPU, for the inputs that get a gradient; off where that
    // gradient is by definition not the derivative (padding_idx).
    bool gradcheck = true;
    GradcheckOptions gradcheck_options;
    // The product runs under MatmulPrecision::BF16. Its reference on every device is then the
    // CPU's FP32 product of the operands and the output gradient rounded to bf16 (what a bf16
    // product computes, cuda/bf16_math.h), not the CPU's own bf16 product: that is FP32 on a
    // CPU without a bf16 kernel (or under QDQ_CPU=avx2).
    bool bf16 = false;
    // Inputs such a product adds in FP32 after it (linear's bias, as the CPU adds it): the
    // reference neither rounds them nor the output gradient their own gradient sums.
    std::vector<size_t> fp32_addends;
};

const std::vector<OpCase>& op_table();

// The inputs of a case, on the CPU, as the table makes them.
std::vector<Tensor> case_inputs(const OpCase& c);
// A fixture case's JSON (c.fixture must be set), its file read once.
const nlohmann::json& case_fixture(const OpCase& c);

}  // namespace qdq::testing
