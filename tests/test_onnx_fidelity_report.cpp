// The fidelity report (stages/onnx_fidelity.h) on a trained IMDB classifier exported for ONNX
// Runtime (tests/support/onnx_task_runs.h): clean, then with a scale nudged by one ulp, with one
// 5% off and with a Q/DQ pair taken out of the exported graph. Only the clean report runs again
// under an emulated AVX2 CPU (tests/CMakeLists.txt), where ONNX Runtime is 40 times slower: it is
// the one that depends on ONNX Runtime's kernels; the edited graphs test the report's reading.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>

#include <onnx/onnx_pb.h>

#include "onnx/onnx_probe.h"
#include "onnx/onnx_runtime.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/bert.h"
#include "stages/onnx_fidelity.h"
#include "tests/support/data.h"
#include "tests/support/onnx_task_runs.h"
#include "tests/test_onnx_support.h"
#include "trainers/trainer.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

// The exported model rewritten by `edit` into `out`.
std::string edited_model(const std::string& in_path, const std::string& out, const std::function<void(onnx::GraphProto&)>& edit) {
    onnx::ModelProto model;
    std::ifstream in(in_path, std::ios::binary);
    EXPECT_TRUE(model.ParseFromIstream(&in)) << in_path;
    edit(*model.mutable_graph());
    std::ofstream written(out, std::ios::binary);
    EXPECT_TRUE(model.SerializeToOstream(&written)) << out;
    return out;
}

// The exported model with the float scale of `quantizer` (its Q and DQ share it) set to
// change(scale), into `out`.
std::string with_scale(const std::string& model, const std::string& out, const std::string& quantizer,
                       const std::function<float(float)>& change) {
    return edited_model(model, out, [&](onnx::GraphProto& g) {
        for (onnx::TensorProto& t : *g.mutable_initializer())
            if (t.name() == quantizer + ".scale") {
                std::string& raw_bytes = *t.mutable_raw_data();
                float scale;
                std::memcpy(&scale, raw_bytes.data(), sizeof scale);
                scale = change(scale);
                std::memcpy(raw_bytes.data(), &scale, sizeof scale);
            }
    });
}

// Every Linear whose output a quantizer takes directly (Q, K, V into the attention products, both
// dense layers into their residual's addend), fed ONNX Runtime's own input codes from the
// deployed probe `probed`: the framework's integer product, rounded as QuantizeLinear rounds
// (x / scale), gives ONNX Runtime's codes element for element. Its MatMulIntegerToFloat and the
// framework's product are then the same float32 numbers; float products of the fake-quantized
// operands are not, and would move codes wherever a product lies within their rounding of a tie.
void expect_integer_products_are_onnx_runtimes(Task& task, const OnnxRuntimeResult& probed) {
    struct Product {
        const nn::Linear* linear;
        std::string input, output;  // quantizer names as the graph has them
        const TensorQuantizer* output_quantizer;
        bool heads, transposed;     // split into heads; the key, quantized after its transpose
    };
    std::vector<Product> products;
    nn::BertModel& encoder = task.encoder();
    for (size_t l = 0; l < encoder.layers.size(); ++l) {
        const nn::BertLayer& layer = *encoder.layers[l];
        const std::string at = "layer." + std::to_string(l) + ".";
        const nn::BertSelfAttention& sa = layer.self_attention;
        products.push_back({&sa.query, at + "attention.self.query._input_quantizer", at + "attention.self.matmul_q_input_quantizer",
                            sa.matmul_q_input_quantizer, true, false});
        products.push_back({&sa.key, at + "attention.self.key._input_quantizer", at + "attention.self.matmul_k_input_quantizer",
                            sa.matmul_k_input_quantizer, true, true});
        products.push_back({&sa.value, at + "attention.self.value._input_quantizer", at + "attention.self.matmul_v_input_quantizer",
                            sa.matmul_v_input_quantizer, true, false});
        products.push_back({&layer.attention_output.dense, at + "attention.output.dense._input_quantizer",
                            at + "attention.output.add_local_input_quantizer", layer.attention_output.add_local_input_quantizer,
                            false, false});
        products.push_back({&layer.output.dense, at + "output.dense._input_quantizer", at + "output.add_local_input_quantizer",
                            layer.output.add_local_input_quantizer, false, false});
    }
    const std::string deployed = ".dequantize.deployed";
    NoGradGuard no_grad;
    int64_t compared = 0;
    for (const Product& p : products) {
        ASSERT_NE(p.output_quantizer, nullptr) << p.output;
        const float scale = p.output_quantizer->amax.to_vector()[0] / 127.0f;  // as the export writes it
        for (const auto& outputs : probed.outputs) {
            Tensor y = p.linear->forward(outputs.at(p.input + deployed));
            if (p.heads) y = split_heads(y, task.model_config().num_attention_heads);
            if (p.transposed) y = transpose(y, -1, -2);
            const std::vector<float> ours = y.to_vector(), theirs = outputs.at(p.output + deployed).to_vector();
            ASSERT_EQ(ours.size(), theirs.size()) << p.output;
            int64_t moved = 0;
            for (size_t i = 0; i < ours.size(); ++i)
                moved += std::clamp(std::nearbyint(ours[i] / scale), -128.0f, 127.0f) != std::nearbyint(theirs[i] / scale);
            EXPECT_EQ(moved, 0) << p.output << " of " << ours.size();
            compared += (int64_t)ours.size();
        }
    }
    EXPECT_GT(compared, 0);
}

// The trained IMDB classifier, max-calibrated and exported for onnxruntime-cpu.
struct ExportedClassifier {
    TempDir dir;
    RunFiles fp32, qdq;
    std::unique_ptr<Task> task;
    std::string model;
};

void export_classifier(ExportedClassifier& e) {
    e.fp32 = imdb_run(e.dir, 64);
    std::unique_ptr<Task> trained = make_task(e.fp32.config, {true, true});
    ASSERT_EQ(train(e.fp32.config, *trained).status, TrainStatus::finished);
    e.task = calibrated_task(e.dir, e.fp32, e.qdq);
    e.model = export_run(e.dir, e.qdq, "qdq", "onnxruntime-cpu");
}

const FidelityOptions kOptions{.examples = 64, .batch_size = 32};
constexpr double kMaxSteps = 3;
constexpr int64_t kMovedPerMillion = 5000;  // of any quantizer's codes
constexpr int64_t kEmbeddingTiesPerMillion = 10;

}  // namespace

// The clean report: the model's 40 quantizers are where the export put them, with the very
// scales, and the codes agree, as defined and as deployed, but for float rounding's ties (a
// handful of elements, one step, amplified by the quantizers after them to at most kMaxSteps);
// the labels are the framework's. How many ties there are depends on the trained model, which
// the build's own float rounding changes: the release build moved none of the embeddings'
// LayerNorm codes and at most 0.002% of a quantizer's (one step), the sanitizer build 2 there
// and then up to 0.12% (a little over two steps). The bounds leave room for that; a scale 5%
// off moved 26% of its quantizer's codes.
TEST(OnnxTasks, FidelityReportAgreesWithTheDeployedModel) {
    for (const char* file : {kVocab, kImdbTrain, kImdbTest}) QDQ_REQUIRE_DATA_FILE(file);
    QDQ_REQUIRE(onnxruntime);
    QDQ_REQUIRE(python_onnx);
    ExportedClassifier e;
    ASSERT_NO_FATAL_FAILURE(export_classifier(e));
    const FidelityReport clean = check_onnx_fidelity(*e.task, e.model, kOptions);
    std::printf("%s", fidelity_markdown(clean).c_str());
    EXPECT_EQ(clean.examples, 64);
    EXPECT_EQ(clean.quantizers.size(), 40u);
    EXPECT_TRUE(clean.missing.empty());
    ASSERT_FALSE(clean.quantizers.empty());
    EXPECT_LE(clean.quantizers[0].as_defined.moved * 1000000, kEmbeddingTiesPerMillion * clean.quantizers[0].elements)
        << "the embeddings' LayerNorm output, before any quantized product: float rounding's ties only";
    int computed = 0;
    for (const QuantizerFidelity& q : clean.quantizers) {
        EXPECT_EQ(q.scale_ulps, 0) << q.name;
        std::vector<StepAgreement> ways{q.as_defined};
        if (q.as_deployed) ways.push_back(*q.as_deployed);
        for (const StepAgreement& a : ways) {
            EXPECT_LE(a.max_steps, kMaxSteps) << q.name;
            EXPECT_LE(a.moved * 1000000, kMovedPerMillion * q.elements) << q.name;
        }
        computed += q.as_deployed.has_value();
        EXPECT_EQ(q.as_deployed.has_value(), !q.name.ends_with("_weight_quantizer")) << q.name;
    }
    EXPECT_EQ(computed, 28) << "per layer: six Linear inputs, the attention products' four, two Add & Norms' two addends";
    for (const std::vector<OutputFidelity>* outputs : {&clean.probe, &clean.deployed}) {
        ASSERT_EQ(outputs->size(), 1u);
        EXPECT_EQ(outputs->at(0).argmax_agree, 64);
    }

    // The deployed probe reads the codes beside ONNX Runtime's fused kernels without changing
    // them: its outputs are the exported model's, bit for bit.
    std::vector<nn::BertInputs> batches = e.task->eval_inputs(32);
    batches.resize(2);
    const std::string probe = (e.dir.path() / "probe.onnx").string();
    EXPECT_EQ(write_probe(e.model, probe, ProbeKind::AsDeployed).size(), 28u);
    const OnnxRuntimeResult probed = run_onnxruntime(probe, batches, {});
    const OnnxRuntimeResult exported = run_onnxruntime(e.model, batches, {});
    for (size_t b = 0; b < batches.size(); ++b)
        EXPECT_EQ(probed.outputs[b].at("logits").to_vector(), exported.outputs[b].at("logits").to_vector()) << "batch " << b;
    expect_integer_products_are_onnx_runtimes(*e.task, probed);
}

// A scale one ulp off and a Q/DQ pair dropped are each found and named; a scale 5% off, as a
// wrong calibration would leave it, moves far more codes than the clean report's bound.
TEST(OnnxTasks, FidelityReportFindsAScaleOneUlpOffAndADroppedPair) {
    for (const char* file : {kVocab, kImdbTrain, kImdbTest}) QDQ_REQUIRE_DATA_FILE(file);
    QDQ_REQUIRE(onnxruntime);
    QDQ_REQUIRE(python_onnx);
    ExportedClassifier e;
    ASSERT_NO_FATAL_FAILURE(export_classifier(e));
    const std::string nudged = "layer.1.intermediate.dense._input_quantizer";
    const std::string one_ulp = with_scale(e.model, (e.dir.path() / "one_ulp.onnx").string(), nudged,
                                           [](float scale) { return std::nextafter(scale, INFINITY); });
    const FidelityReport off = check_onnx_fidelity(*e.task, one_ulp, kOptions);
    for (const QuantizerFidelity& q : off.quantizers) EXPECT_EQ(q.scale_ulps, q.name == nudged ? 1 : 0) << q.name;

    const std::string wrong = with_scale(e.model, (e.dir.path() / "wrong_scale.onnx").string(), nudged,
                                         [](float scale) { return scale * 1.05f; });
    for (const QuantizerFidelity& q : check_onnx_fidelity(*e.task, wrong, kOptions).quantizers) {
        if (q.name != nudged) continue;
        EXPECT_GT(q.as_defined.moved * 1000000, 10 * kMovedPerMillion * q.elements) << q.name;
    }

    // The residual's addend of layer 0's attention output passed on unquantized: its Q and DQ
    // gone, their consumer reading the Q's input.
    const std::string dropped = "layer.0.attention.output.add_residual_input_quantizer";
    const std::string without = edited_model(e.model, (e.dir.path() / "dropped.onnx").string(), [&](onnx::GraphProto& g) {
        std::string source;
        for (const onnx::NodeProto& node : g.node())
            if (node.name() == dropped + ".quantize") source = node.input(0);
        ASSERT_FALSE(source.empty());
        google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
        for (const onnx::NodeProto& node : g.node())
            if (!node.name().starts_with(dropped + ".")) *kept.Add() = node;
        for (onnx::NodeProto& node : kept)
            for (std::string& input : *node.mutable_input())
                if (input == dropped + ".dequantize") input = source;
        g.mutable_node()->Swap(&kept);
    });
    const FidelityReport gone = check_onnx_fidelity(*e.task, without, kOptions);
    EXPECT_EQ(gone.missing, std::vector<std::string>{dropped});
    EXPECT_EQ(gone.quantizers.size(), 39u);
}
