// Running an exported model in ONNX Runtime's CPU provider, the runtime users deploy with and the
// judge of every export: through onnx/onnxruntime/run_model.js and the onnxruntime-node that
// scripts/setup.sh installs there (Debian packages no ONNX Runtime for C or C++). Feeds and
// outputs travel as JSON files beside the model, removed afterwards.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "nn/bert.h"

namespace qdq {

struct OnnxRuntimeOptions {
    int threads = 1;                          // intra-op threads; 0: ORT's default, one per core
    int warmup_runs = 0;                      // untimed runs of the first feed before the timed ones
    std::string optimized_path;               // where to save the graph ORT ran, after its fusions
    // "key=value" session config entries. Unless one sets session.x64quantprecision, it is set
    // to 1 where cpu_features().vnni is false: without VNNI, ONNX Runtime's u8·s8 integer MatMul
    // adds pairs of products in 16 bits (VPMADDUBSW) and saturates, which moved the Q/DQ models'
    // logits by up to 2.5 on an AVX2 CPU; the entry makes it run u8·u8 kernels, exact and slower.
    // With VNNI the u8·s8 kernels sum in 32 bits, exact, and the entry would only slow them:
    // INT8 took 0.79× of FP32's time at BERT-mini with it, 0.52× without (docs/BENCHMARKS.md).
    // Unless one sets session.qdq_matmulnbits_accuracy_level, it is set to 1: a tensorrt file's
    // quantized weight whose input is float becomes MatMulNBits, which at ORT's default level 4
    // quantizes that input on the fly, a quantization the model never did (onnx/onnx_export.h);
    // at 1 it computes in float, as ONNX defines the graph.
    std::vector<std::string> session_config;
    // The graph optimization level: "all" (as deployed) down to "disabled", every node as ONNX
    // defines it.
    std::string optimization = "all";
};

struct OnnxRuntimeResult {
    std::vector<std::map<std::string, Tensor>> outputs;  // one per feed, by output name
    std::vector<double> milliseconds;                    // session.run's wall time per feed
};

// Runs the feeds one after another in one session. Undefined token_type_ids are zeros and an
// undefined attention_mask ones, as in the framework. Throws with node's own message when the
// run fails, and with onnxruntime_unavailable()'s when it cannot start.
OnnxRuntimeResult run_onnxruntime(const std::string& model_path, const std::vector<nn::BertInputs>& feeds,
                                  const OnnxRuntimeOptions& options = {});

// Empty when node can load onnxruntime-node, else why not and how to fix it.
std::string onnxruntime_unavailable();

// Which integer MatMul kernels run_onnxruntime gets by default on this CPU, for --version.
std::string onnxruntime_integer_kernels();

// onnx/onnxruntime in the source tree: run_model.js and its node_modules.
std::string onnxruntime_dir();

// The shell command that starts node: QDQ_NODE when set, else "node" from PATH. The suite sets it
// to node under an x86 emulator whose CPU lacks VNNI and AVX-512, so that ONNX Runtime runs the
// integer kernels of an AVX2-only CPU on any machine (tests/CMakeLists.txt).
std::string node_command();

}  // namespace qdq
