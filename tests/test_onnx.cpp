// Exports judged by programs no one here wrote: ONNX Runtime's CPU provider (onnxruntime-node,
// through onnx/onnx_runtime.h) runs them, and python3-onnx's checker reads them.
//   float exports against the framework's own eval forward (nn/heads.h);
//   QDQ exports against reference_forward, the same forward fake-quantized at QDQBERT's points
//   (tests/test_onnx_support.cpp), with synthetic ranges: per-tensor activations that clip,
//   per-channel weights whose channels differ by up to 8×, one per-tensor weight, two
//   quantizers disabled.
// Without node or python3-onnx these tests skip, except under CI=true, where they fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include <onnx/onnx_pb.h>

#include "tests/support/gradcheck.h"
#include "tests/support/temp_dir.h"
#include "tests/test_onnx_support.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

struct Case {
    const char* name;
    OnnxHead head;
};
const Case kHeads[] = {{"seqcls", OnnxHead::SequenceClassification}, {"qa", OnnxHead::QuestionAnswering}};

std::vector<const char*> output_names(OnnxHead head) {
    if (head == OnnxHead::SequenceClassification) return {"logits"};
    return {"start_logits", "end_logits"};
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
    std::vector<float> x = a.to_vector(), y = b.to_vector();
    float m = 0;
    for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
    return m;
}

// ORT's outputs for `inputs` against `expected`, output by output, within |Δ| ≤ atol + rtol·|e|;
// returns the largest |Δ| seen.
float expect_onnxruntime_matches(const std::string& model, OnnxHead head, const nn::BertInputs& inputs,
                                 const std::vector<Tensor>& expected, float rtol, float atol, const std::string& what) {
    std::map<std::string, Tensor> got = run_onnxruntime(model, {inputs}).outputs.at(0);
    std::vector<const char*> names = output_names(head);
    float worst = 0;
    for (size_t i = 0; i < names.size(); ++i) {
        EXPECT_TRUE(got.count(names[i])) << what << ": ORT gave no " << names[i];
        if (!got.count(names[i])) continue;
        expect_close(got[names[i]], expected[i], rtol, atol, (what + " " + names[i]).c_str());
        worst = std::max(worst, max_abs_diff(got[names[i]], expected[i]));
    }
    return worst;
}

}  // namespace

// The float graph is nn/bert.cpp op for op, but ORT fuses LayerNorm, GELU and the residual adds
// into its own kernels and sums in other orders: float32 rounding then differs by ~1e-6
// relative per op; 1e-4 absolute and relative is that with a wide margin, and far below the
// effect of any wrong op (a missing mask, a swapped transpose: O(0.1) on these weights).
// Two sequence lengths through one file check that nothing was fixed at export.
TEST(OnnxRuntime, FloatExportMatchesTheFrameworkOnPaddedBatches) {
    QDQ_REQUIRE(onnxruntime);
    TempDir dir;
    const nn::BertConfig config = tiny_bert_config();
    for (const Case& c : kHeads) {
        NamedTensors state = random_bert_state(config, c.head, 11);
        const std::string path = (dir.path() / (std::string(c.name) + ".onnx")).string();
        export_onnx(state, config, c.head, {}, path);
        for (int64_t T : {7, 12}) {
            nn::BertInputs batch = padded_batch(config, 3, T, 100 + T);
            float worst = expect_onnxruntime_matches(path, c.head, batch, framework_forward(state, config, c.head, batch),
                                                     1e-4f, 1e-4f, std::string(c.name) + " T=" + std::to_string(T));
            std::printf("[ fp32 %s T=%lld ] max |ORT - framework| = %.3g\n", c.name, (long long)T, worst);
        }
    }
}

// Integer kernels reproduce Q/DQ exactly up to float rounding (measured here: 1e-6). But a value
// that float rounding in ORT's fused LayerNorm, Softmax or GELU moves across a rounding boundary
// (x/scale at k + ½) lands one quantum away, and on these weights one such flip moves its batch
// row's logits by up to 0.1 (measured by nudging each amax by 1e-5). Flips are rare (~1e-5 of the
// quantized values: none in the Release build here, one in the ASan build) and depend on the
// CPU's kernels and the compiler, so the budget is per batch row: each row within 1e-4 (float
// rounding with a wide margin), except at most one row of eight per run, which must stay within
// 0.5. A wrong scale, axis or zero point, or a missing pair, moves nearly every row by 0.02 or more.
TEST(OnnxRuntime, QdqExportMatchesTheFakeQuantReference) {
    QDQ_REQUIRE(onnxruntime);
    TempDir dir;
    const nn::BertConfig config = tiny_bert_config();
    constexpr int64_t B = 8;
    for (const Case& c : kHeads) {
        NamedTensors state = random_bert_state(config, c.head, 21);
        NamedTensors quantized = with_synthetic_ranges(state, config, c.head, padded_batch(config, 4, 12, 7));
        nn::BertInputs batch = padded_batch(config, B, 9, 8);
        std::vector<Tensor> reference = reference_forward(quantized, config, c.head, batch);
        // The ranges matter: fake quantization moves the outputs far beyond the budget.
        std::vector<Tensor> unquantized = framework_forward(state, config, c.head, batch);
        EXPECT_GT(max_abs_diff(reference[0], unquantized[0]), 0.1f) << c.name;
        for (QdqTarget target : {QdqTarget::TensorRT, QdqTarget::OnnxRuntimeCpu}) {
            const std::string what = std::string(c.name) + " " + qdq_target_name(target);
            const std::string path = (dir.path() / (what + ".onnx")).string();
            export_onnx(quantized, config, c.head, {target}, path);
            // The tensorrt file keeps Q/DQ on a weight whose input is float (layer 1's
            // attention.output.dense here), which ORT's default MatMulNBits accuracy level 4
            // would run with the input quantized on the fly: run_onnxruntime sets level 1
            // (float), ONNX's meaning, as the pipeline's and export --check's scoring run it.
            std::map<std::string, Tensor> got = run_onnxruntime(path, {batch}).outputs.at(0);
            std::vector<float> row_error(B, 0.0f);
            std::vector<const char*> names = output_names(c.head);
            for (size_t i = 0; i < names.size(); ++i) {
                ASSERT_TRUE(got.count(names[i])) << what << ": ORT gave no " << names[i];
                ASSERT_EQ(got[names[i]].shape(), reference[i].shape()) << what << " " << names[i];
                std::vector<float> g = got[names[i]].to_vector(), r = reference[i].to_vector();
                const size_t per_row = g.size() / B;
                for (size_t j = 0; j < g.size(); ++j)
                    row_error[j / per_row] = std::max(row_error[j / per_row], std::fabs(g[j] - r[j]));
            }
            int inexact = 0;
            for (int64_t b = 0; b < B; ++b) {
                inexact += row_error[b] > 1e-4f;
                EXPECT_LE(row_error[b], 0.5f) << what << " row " << b;
            }
            EXPECT_LE(inexact, 1) << what << ": rows off by more than float rounding";
            std::printf("[ qdq %s ] max |ORT - reference| = %.3g, rows beyond 1e-4: %d of %lld\n", what.c_str(),
                        *std::max_element(row_error.begin(), row_error.end()), inexact, (long long)B);
        }
    }
}

// ORT's CPU fusions for the onnxruntime-cpu target: every encoder MatMul (the six Linears and both
// attention products) must run as an integer kernel. The ORT-optimized graph is saved and read
// back; its op types are printed for the record.
TEST(OnnxRuntime, CpuTargetLeavesNoFloatMatMulInTheEncoder) {
    QDQ_REQUIRE(onnxruntime);
    TempDir dir;
    const nn::BertConfig config = tiny_bert_config();
    NamedTensors state = random_bert_state(config, OnnxHead::QuestionAnswering, 31);
    // Every quantizer on: a disabled one would leave its MatMul float by design.
    NamedTensors quantized =
        with_synthetic_ranges(state, config, OnnxHead::QuestionAnswering, padded_batch(config, 2, 8, 9), {});
    const std::string path = (dir.path() / "qa_cpu.onnx").string(), optimized = (dir.path() / "qa_cpu.opt.onnx").string();
    export_onnx(quantized, config, OnnxHead::QuestionAnswering, {QdqTarget::OnnxRuntimeCpu}, path);
    OnnxRuntimeOptions runtime;
    runtime.optimized_path = optimized;
    run_onnxruntime(path, {padded_batch(config, 2, 8, 10)}, runtime);

    onnx::ModelProto model;
    std::ifstream in(optimized, std::ios::binary);
    ASSERT_TRUE(model.ParseFromIstream(&in)) << "cannot read ORT's optimized model " << optimized;
    std::map<std::string, int> ops;
    for (const onnx::NodeProto& node : model.graph().node()) {
        ops[(node.domain().empty() ? "" : node.domain() + ".") + node.op_type()]++;
        // qa_outputs stays float, as QDQBERT leaves it; anything else float is an encoder MatMul.
        const bool head = node.name().starts_with("qa_outputs");
        if (!head && (node.op_type() == "MatMul" || node.op_type() == "FusedMatMul" || node.op_type() == "Gemm"))
            ADD_FAILURE() << "float " << node.op_type() << " '" << node.name() << "' left in the optimized graph";
    }
    std::string listing;
    for (const auto& [op, n] : ops) listing += " " + op + "×" + std::to_string(n);
    std::printf("[ ORT-optimized onnxruntime-cpu QDQ graph ]%s\n", listing.c_str());
    EXPECT_GT(ops["com.microsoft.MatMulIntegerToFloat"] + ops["QLinearMatMul"] + ops["com.microsoft.QLinearMatMul"] +
                  ops["MatMulInteger"] + ops["com.microsoft.DynamicQuantizeMatMul"],
              0)
        << "no integer MatMul kernel at all:" << listing;
}

// The python3-onnx checker with full_check (strict shape inference) on every kind of export: a
// malformed graph fails here even where node is missing.
TEST(PythonOnnx, CheckerAcceptsEveryExport) {
    QDQ_REQUIRE(python_onnx);
    TempDir dir;
    const nn::BertConfig config = tiny_bert_config();
    for (const Case& c : kHeads) {
        NamedTensors state = random_bert_state(config, c.head, 41);
        NamedTensors quantized = with_synthetic_ranges(state, config, c.head, padded_batch(config, 2, 6, 1));
        const std::pair<std::string, const NamedTensors*> exports[] = {{"fp32", &state}, {"qdq", &quantized}};
        for (const auto& [kind, s] : exports) {
            for (QdqTarget target : {QdqTarget::TensorRT, QdqTarget::OnnxRuntimeCpu}) {
                const std::string path =
                    (dir.path() / (std::string(c.name) + "." + kind + "." + qdq_target_name(target) + ".onnx")).string();
                export_onnx(*s, config, c.head, {target}, path);
                EXPECT_EQ(python_onnx_check(path), "") << path;
            }
        }
    }
}

// The checker must be able to fail: a graph whose node reads a value nothing produces.
TEST(PythonOnnx, CheckerRejectsABrokenGraph) {
    QDQ_REQUIRE(python_onnx);
    TempDir dir;
    const nn::BertConfig config = tiny_bert_config();
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(
        export_onnx_bytes(random_bert_state(config, OnnxHead::QuestionAnswering, 1), config, OnnxHead::QuestionAnswering, {})));
    model.mutable_graph()->mutable_node(3)->set_input(0, "no_such_value");
    const std::string path = (dir.path() / "broken.onnx").string();
    std::ofstream(path, std::ios::binary) << model.SerializeAsString();
    EXPECT_NE(python_onnx_check(path), "");
}
