// Writes the models bench/bench_onnx.sh times: a randomly initialised BERT-base-shaped
// BertForSequenceClassification (or the sizes given) exported as float, as QDQ for tensorrt and
// as QDQ for onnxruntime-cpu, every QDQBERT quantizer enabled.
//
//   bench_onnx_export OUT_DIR [--layers N] [--hidden C] [--heads H] [--intermediate I]
//
// Ranges are synthetic: latency does not depend on them (integer kernels cost the same whatever
// the scale), so activations get amax 8 and weights per-channel max|w|.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "onnx/onnx_export.h"
#include "nn/heads.h"

using namespace qdq;

namespace {

int usage() {
    std::fprintf(stderr, "usage: bench_onnx_export OUT_DIR [--layers N] [--hidden C] [--heads H] [--intermediate I]\n");
    return 2;
}

NamedTensors with_ranges(const NamedTensors& state, const nn::BertConfig& c) {
    NamedTensors out = state;
    auto activation = [&](const std::string& key) { out.push_back({key + "._amax", full({}, 8.0f)}); };
    const char* linears[] = {"attention.self.query", "attention.self.key", "attention.self.value",
                             "attention.output.dense", "intermediate.dense", "output.dense"};
    for (int i = 0; i < c.num_hidden_layers; ++i) {
        const std::string k = "bert.encoder.layer." + std::to_string(i) + ".";
        for (const char* l : linears) {
            activation(k + l + "._input_quantizer");
            for (const NamedTensor& t : state) {
                if (t.name != k + l + ".weight") continue;
                const int64_t rows = t.tensor.size(0), cols = t.tensor.size(1);
                Tensor amax = zeros({rows, 1});
                for (int64_t o = 0; o < rows; ++o)
                    for (int64_t j = 0; j < cols; ++j)
                        amax.f32()[o] = std::max(amax.f32()[o], std::fabs(t.tensor.f32()[o * cols + j]));
                out.push_back({k + l + "._weight_quantizer._amax", amax});
            }
        }
        for (const char* m : {"q", "k", "v", "a"}) activation(k + "attention.self.matmul_" + m + "_input_quantizer");
        for (const char* m : {"attention.output", "output"})
            for (const char* a : {"local", "residual"}) activation(k + m + ".add_" + a + "_input_quantizer");
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || (argc - 2) % 2 != 0) return usage();
    const std::filesystem::path dir = argv[1];
    nn::BertConfig config;  // bert-base-uncased sizes
    for (int i = 2; i < argc; i += 2) {
        const std::string flag = argv[i];
        const int value = std::atoi(argv[i + 1]);
        if (flag == "--layers") config.num_hidden_layers = value;
        else if (flag == "--hidden") config.hidden_size = value;
        else if (flag == "--heads") config.num_attention_heads = value;
        else if (flag == "--intermediate") config.intermediate_size = value;
        else return usage();
    }
    std::filesystem::create_directories(dir);
    Rng init(1);
    nn::BertForSequenceClassification model(config, init);
    const NamedTensors state = model.state_dict();
    const NamedTensors quantized = with_ranges(state, config);
    const OnnxHead head = OnnxHead::SequenceClassification;
    export_onnx(state, config, head, {}, (dir / "fp32.onnx").string());
    export_onnx(quantized, config, head, {QdqTarget::TensorRT}, (dir / "qdq-tensorrt.onnx").string());
    export_onnx(quantized, config, head, {QdqTarget::OnnxRuntimeCpu}, (dir / "qdq-onnxruntime-cpu.onnx").string());
    std::printf("wrote fp32.onnx, qdq-tensorrt.onnx, qdq-onnxruntime-cpu.onnx to %s (%d layers, hidden %d)\n",
                dir.c_str(), config.num_hidden_layers, config.hidden_size);
    return 0;
}
