// Every op of autograd/ops.h (the table of tests/op_table.cpp), forward and backward, on each
// device:
//  - on the CPU, the output and input gradients against PyTorch where the case is a fixture's
//    (tests/fixtures/ops_basic.json and ops_nn.json, written by make_ops_basic.py and
//    make_ops_nn.py in float64 and rounded once: rtol 1e-5 is a few float32 roundings in another
//    order of operations, atol 1e-6 results that cancel to near zero), and the gradients against
//    central finite differences (tests/support/gradcheck.h gives that tolerance's origin);
//  - on the CUDA device (the emulated one in a QDQ_CUDA=EMULATED build), the output and
//    gradients against the CPU's, within the tolerance the entry states.
// And the table's completeness: an op declared in ops.h without an entry fails here by itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <tuple>

#include "autograd/gemm_bf16.h"
#include "autograd/matmul_precision.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "tests/op_table.h"
#include "tests/support/fixture.h"

using namespace qdq;
using namespace qdq::testing;

namespace qdq {
void PrintTo(Device device, std::ostream* os) { *os << device_name(device); }
namespace testing {
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }
}  // namespace testing
}  // namespace qdq

namespace {

bool is_constant(const OpCase& c, const std::vector<Tensor>& inputs, size_t k) {
    return inputs[k].dtype() != DType::F32 ||
           std::find(c.constant.begin(), c.constant.end(), k) != c.constant.end();
}

// The output and every input's gradient (undefined for the constant ones), on the CPU.
struct CaseRun {
    Tensor out;
    std::vector<Tensor> grads;
};

// The case on `device`: float inputs moved there (ids and labels stay on the CPU, where ops take
// them from a batch's collate), backward from the output gradient w.
CaseRun run_case(const OpCase& c, const std::vector<Tensor>& inputs, const Tensor& w, Device device,
             MatmulPrecision precision) {
    MatmulPrecisionGuard guard(precision);
    std::vector<Tensor> leaves;
    for (size_t k = 0; k < inputs.size(); ++k) {
        const bool floats = inputs[k].dtype() == DType::F32;
        leaves.push_back(floats ? inputs[k].to(device) : inputs[k].clone());
        if (!is_constant(c, inputs, k)) leaves.back().set_requires_grad();
    }
    CaseRun run;
    const Tensor out = c.f(leaves);
    EXPECT_EQ(out.device(), device) << "the output is not on the inputs' device";
    run.out = out.detach().to(Device::CPU);
    if (out.requires_grad()) backward(out, w.to(device));
    for (size_t k = 0; k < leaves.size(); ++k) {
        if (is_constant(c, inputs, k)) {
            run.grads.emplace_back();
            continue;
        }
        EXPECT_TRUE(leaves[k].grad().defined()) << "input " << k << " got no gradient";
        run.grads.push_back(leaves[k].grad().defined() ? leaves[k].grad().to(Device::CPU) : Tensor());
    }
    return run;
}

void expect_runs_close(const CaseRun& actual, const CaseRun& expected, Tolerance t) {
    expect_close(actual.out, expected.out, t.rtol, t.atol, "output");
    for (size_t k = 0; k < expected.grads.size(); ++k)
        if (expected.grads[k].defined() && actual.grads[k].defined())
            expect_close(actual.grads[k], expected.grads[k], t.rtol, t.atol, indexed_name("grad_x", k).c_str());
}

Tensor rounded_to_bf16(const Tensor& t) {
    Tensor out = t.clone();
    for (int64_t i = 0; i < out.numel(); ++i) out.f32()[i] = round_to_bf16(out.f32()[i]);
    return out;
}

// The output gradient: the fixture's, or random (seeded) of the output's shape.
Tensor output_gradient(const OpCase& c, const std::vector<Tensor>& inputs) {
    if (!c.fixture.empty()) return fixture_tensor(case_fixture(c), "w");
    NoGradGuard no_grad;
    return random_tensor(c.f(inputs).shape(), 77);
}

void expect_cpu_matches_pytorch(const OpCase& c, const std::vector<Tensor>& inputs, const Tensor& w) {
    const nlohmann::json& fixture = case_fixture(c);
    CaseRun expected{fixture_tensor(fixture, "out"), {}};
    for (size_t k = 0; k < inputs.size(); ++k) {
        const std::string grad_name = indexed_name("grad_x", k);
        EXPECT_EQ(fixture.contains(grad_name), !is_constant(c, inputs, k))
            << grad_name << ": the table and the fixture disagree on whether it is constant";
        expected.grads.push_back(fixture.contains(grad_name) ? fixture_tensor(fixture, grad_name) : Tensor());
    }
    SCOPED_TRACE("against PyTorch");
    expect_runs_close(run_case(c, inputs, w, Device::CPU, MatmulPrecision::F32), expected, {1e-5f, 1e-6f});
}

// Central differences over the inputs that get a gradient, the others held as they are.
void expect_cpu_gradients_match_finite_differences(const OpCase& c, const std::vector<Tensor>& inputs) {
    std::vector<size_t> varied;
    std::vector<Tensor> probes;
    for (size_t k = 0; k < inputs.size(); ++k)
        if (!is_constant(c, inputs, k)) {
            varied.push_back(k);
            probes.push_back(inputs[k]);
        }
    if (varied.empty()) return;
    auto of_varied = [&](const std::vector<Tensor>& v) {
        std::vector<Tensor> all = inputs;
        for (size_t i = 0; i < varied.size(); ++i) all[varied[i]] = v[i];
        return c.f(all);
    };
    SCOPED_TRACE("against finite differences");
    expect_gradients_match_finite_differences(of_varied, probes, c.gradcheck_options);
}

class OnDevice : public ::testing::TestWithParam<std::tuple<OpCase, Device>> {};

std::string case_name(const ::testing::TestParamInfo<std::tuple<OpCase, Device>>& info) {
    return std::get<0>(info.param).name + "_" + device_name(std::get<1>(info.param));
}

}  // namespace

TEST_P(OnDevice, OutputAndGradientsMatchTheirReference) {
    const auto& [c, device] = GetParam();
    const std::vector<Tensor> inputs = case_inputs(c);
    const Tensor w = output_gradient(c, inputs);
    if (device == Device::CPU) {
        if (c.bf16) GTEST_SKIP() << "the CPU's bf16 products are test_ops_bf16's (FP32 on a CPU without a bf16 kernel)";
        if (!c.fixture.empty()) expect_cpu_matches_pytorch(c, inputs, w);
        if (c.gradcheck) expect_cpu_gradients_match_finite_differences(c, inputs);
        return;
    }
    if (cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    CaseRun cpu;
    if (c.bf16) {
        const auto fp32_addend = [&](size_t k) {
            return std::find(c.fp32_addends.begin(), c.fp32_addends.end(), k) != c.fp32_addends.end();
        };
        std::vector<Tensor> rounded;
        for (size_t k = 0; k < inputs.size(); ++k)
            rounded.push_back(inputs[k].dtype() == DType::F32 && !fp32_addend(k) ? rounded_to_bf16(inputs[k]) : inputs[k]);
        cpu = run_case(c, rounded, rounded_to_bf16(w), Device::CPU, MatmulPrecision::F32);
        if (!c.fp32_addends.empty()) {
            const CaseRun fp32_sums = run_case(c, rounded, w, Device::CPU, MatmulPrecision::F32);
            for (size_t k : c.fp32_addends) cpu.grads[k] = fp32_sums.grads[k];
        }
    } else {
        cpu = run_case(c, inputs, w, Device::CPU, MatmulPrecision::F32);
    }
    const CaseRun gpu = run_case(c, inputs, w, device, c.bf16 ? MatmulPrecision::BF16 : MatmulPrecision::F32);
    SCOPED_TRACE("against the CPU");
    expect_runs_close(gpu, cpu, c.device);
}

INSTANTIATE_TEST_SUITE_P(OpTable, OnDevice,
                         ::testing::Combine(::testing::ValuesIn(op_table()), ::testing::Values(Device::CPU, Device::CUDA)),
                         case_name);

namespace {

// The free functions autograd/ops.h declares: every line that starts a declaration returning a
// Tensor (or void, add_inplace) at namespace scope.
std::set<std::string> ops_declared() {
    std::ifstream in(std::string(QDQ_REPO_DIR) + "/autograd/ops.h");
    EXPECT_TRUE(in) << "cannot read autograd/ops.h";
    std::set<std::string> names;
    const std::regex declaration(R"(^(?:Tensor|void)\s+(\w+)\s*\()");
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, declaration)) names.insert(m[1]);
    return names;
}

}  // namespace

TEST(OpTable, EveryOpOfOpsHHasAnEntryAndEveryEntryAnOp) {
    const std::set<std::string> declared = ops_declared();
    // So that a parser that finds nothing cannot pass: ops.h declares 31 today.
    EXPECT_GE(declared.size(), 31u) << "autograd/ops.h: fewer declarations found than exist";
    std::set<std::string> covered;
    for (const OpCase& c : op_table()) covered.insert(c.op);
    for (const std::string& op : declared)
        EXPECT_TRUE(covered.count(op)) << op << " is declared in autograd/ops.h but has no entry in tests/op_table.cpp";
    for (const std::string& op : covered) EXPECT_TRUE(declared.count(op)) << "entry op " << op << " is not in autograd/ops.h";
}

TEST(OpTable, EveryFixtureCaseHasAnEntry) {
    for (const char* file : {"ops_basic.json", "ops_nn.json"}) {
        const Fixture fixture(file);  // alive through the loop: a range over a temporary's member is not
        for (const auto& [name, json] : fixture.cases().items()) {
            bool found = false;
            for (const OpCase& c : op_table()) found = found || (c.fixture == file && c.name == name);
            EXPECT_TRUE(found) << file << " case " << name << " is not in the table";
        }
    }
}

// Each float input of every entry on the CPU while the others are on the device, and the other
// way round: refused, the error naming the op and both devices.
TEST(OpTable, InputsOnTwoDevicesAreRefusedNamingTheOpAndTheDevices) {
    if (cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    for (const OpCase& c : op_table()) {
        const std::vector<Tensor> inputs = case_inputs(c);
        const auto floats =
            std::count_if(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.dtype() == DType::F32; });
        for (size_t odd = 0; odd < inputs.size() && floats > 1; ++odd) {
            if (inputs[odd].dtype() != DType::F32) continue;
            for (Device others : {Device::CPU, Device::CUDA}) {
                const Device moved = others == Device::CPU ? Device::CUDA : Device::CPU;
                std::vector<Tensor> mixed;
                for (size_t k = 0; k < inputs.size(); ++k)
                    mixed.push_back(inputs[k].dtype() != DType::F32 ? inputs[k] : inputs[k].to(k == odd ? moved : others));
                std::string message = "it ran";
                try {
                    c.f(mixed);
                } catch (const std::runtime_error& e) {
                    message = e.what();
                }
                EXPECT_TRUE(message.find(c.op + ":") != std::string::npos && message.find("cpu") != std::string::npos &&
                            message.find("cuda") != std::string::npos)
                    << c.name << ", input " << odd << " alone on " << device_name(moved) << ": " << message;
            }
        }
    }
}
