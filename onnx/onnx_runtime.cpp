#include "onnx/onnx_runtime.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "autograd/cpu_level.h"

namespace qdq {

namespace {

constexpr const char* kX64QuantPrecision = "session.x64quantprecision";
constexpr const char* kMatMulNBitsAccuracy = "session.qdq_matmulnbits_accuracy_level";

struct CommandResult {
    int status;
    std::string output;  // stdout and stderr
};

CommandResult run_command(const std::string& command) {
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return {-1, "popen failed"};
    std::string output;
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// Streamed rather than built as a nlohmann::json tree: a full IMDB test set is ten million ids.
void write_input(std::ostream& out, const char* name, const Tensor& t, const Shape& shape, int32_t fill) {
    out << '"' << name << "\":{\"dims\":[" << shape[0] << ',' << shape[1] << "],\"data\":[";
    const int64_t n = shape_numel(shape);
    for (int64_t i = 0; i < n; ++i) out << (i ? "," : "") << (t.defined() ? t.i32()[i] : fill);
    out << "]}";
}

void write_feeds(const std::string& path, const std::vector<nn::BertInputs>& feeds) {
    std::ofstream out(path);
    if (!out) throw std::runtime_error(path + ": cannot write");
    out << '[';
    for (size_t i = 0; i < feeds.size(); ++i) {
        const nn::BertInputs& f = feeds[i];
        const Shape& shape = f.input_ids.shape();
        if (shape.size() != 2) throw std::invalid_argument("run_onnxruntime: input_ids must be [batch, sequence]");
        out << (i ? ",{" : "{");
        write_input(out, "input_ids", f.input_ids, shape, 0);
        out << ',';
        write_input(out, "attention_mask", f.attention_mask, shape, 1);
        out << ',';
        write_input(out, "token_type_ids", f.token_type_ids, shape, 0);
        out << '}';
    }
    out << ']';
    if (!out.flush()) throw std::runtime_error(path + ": write failed");
}

// The little-endian float32 values run_model.js writes beside its outputs file.
std::vector<float> read_floats(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw std::runtime_error(path + ": cannot read");
    std::vector<float> values((size_t)in.tellg() / sizeof(float));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(values.data()), (std::streamsize)(values.size() * sizeof(float)));
    if (!in) throw std::runtime_error(path + ": read failed");
    return values;
}

}  // namespace

std::string onnxruntime_dir() { return QDQ_ONNXRUNTIME_DIR; }

std::string node_command() {
    const char* set = std::getenv("QDQ_NODE");
    return set && *set ? set : "node";
}

std::string onnxruntime_unavailable() {
    const std::string module = onnxruntime_dir() + "/node_modules/onnxruntime-node";
    if (run_command(node_command() + " -e " + quoted("require(\"" + module + "\")")).status == 0) return "";
    return node_command() + " with onnxruntime-node is missing (scripts/setup.sh installs it into " +
           onnxruntime_dir() + "/node_modules with npm ci --ignore-scripts)";
}

std::string onnxruntime_integer_kernels() {
    if (cpu_features().vnni) return "u8s8 (VNNI: exact with ONNX Runtime's defaults)";
    return std::string("u8u8 (") + kX64QuantPrecision + "=1: no VNNI at CPU level " + cpu_level_name(cpu_level()) +
           ", where u8s8 saturates)";
}

OnnxRuntimeResult run_onnxruntime(const std::string& model_path, const std::vector<nn::BertInputs>& feeds,
                                  const OnnxRuntimeOptions& options) {
    if (feeds.empty()) throw std::invalid_argument("run_onnxruntime: no feeds");
    const std::string feeds_path = model_path + ".feeds.json", outputs_path = model_path + ".outputs.json";
    write_feeds(feeds_path, feeds);
    std::string command = node_command() + " " + quoted(onnxruntime_dir() + "/run_model.js") + " " +
                          quoted(model_path) + " " + quoted(feeds_path) + " " + quoted(outputs_path) + " --threads " +
                          std::to_string(options.threads) + " --warmup " + std::to_string(options.warmup_runs) +
                          " --optimization " + quoted(options.optimization);
    if (!options.optimized_path.empty()) command += " --optimized " + quoted(options.optimized_path);
    bool precision_set = false, accuracy_set = false;
    for (const std::string& entry : options.session_config) {
        command += " --config " + quoted(entry);
        precision_set = precision_set || entry.starts_with(std::string(kX64QuantPrecision) + "=");
        accuracy_set = accuracy_set || entry.starts_with(std::string(kMatMulNBitsAccuracy) + "=");
    }
    if (!precision_set && !cpu_features().vnni) command += " --config " + std::string(kX64QuantPrecision) + "=1";
    if (!accuracy_set) command += " --config " + std::string(kMatMulNBitsAccuracy) + "=1";
    const CommandResult r = run_command(command);
    std::filesystem::remove(feeds_path);
    if (r.status != 0) {
        const std::string why = onnxruntime_unavailable();
        throw std::runtime_error(model_path + ": ONNX Runtime failed: " + (why.empty() ? r.output : why));
    }
    std::ifstream in(outputs_path);
    const nlohmann::json j = nlohmann::json::parse(in);
    in.close();
    const std::vector<float> values = read_floats(outputs_path + ".f32");
    std::filesystem::remove(outputs_path);
    std::filesystem::remove(outputs_path + ".f32");
    OnnxRuntimeResult result;
    for (const auto& feed : j.at("outputs")) {
        std::map<std::string, Tensor> out;
        for (const auto& [name, t] : feed.items()) {
            const Shape shape = t.at("dims").get<Shape>();
            const size_t offset = t.at("offset").get<size_t>(), n = (size_t)shape_numel(shape);
            if (offset + n > values.size()) throw std::runtime_error(outputs_path + ".f32: shorter than its outputs");
            out[name] = from_vector(shape, std::vector<float>(values.begin() + offset, values.begin() + offset + n));
        }
        result.outputs.push_back(std::move(out));
    }
    result.milliseconds = j.at("milliseconds").get<std::vector<double>>();
    return result;
}

}  // namespace qdq
