// `qdqtrain export` (stages/export.h) on the one-layer model of tests/support/tiny_task.h:
// what it writes, and the configs and checkpoints it must refuse, each with the key or quantizer
// at fault. Needs neither the shared data nor node (tests/test_onnx_tasks.cpp runs exports in
// ONNX Runtime).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "tests/support/run_files.h"
#include "tests/support/run_qdqtrain.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/task.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

void save_model(Task& task, const RunFiles& run) {
    Checkpoint c;
    c.model = task.model().state_dict();
    c.config = run.config;
    save_checkpoint(run.checkpoint, c);
}

// The float run's weights under a quantizing config, every range 1: what export reads from a
// calibrated checkpoint (the values matter to tests/test_onnx_tasks.cpp, not here).
RunFiles with_ranges(const TempDir& dir, const RunFiles& fp32) {
    nlohmann::json raw = run_config_to_json(fp32.config);
    raw["quantization"] = {{"input", {{"calib_method", "max"}}}, {"calibrator", "max"}};
    const RunFiles qdq = write_run(dir, "qdq.json", raw, (dir.path() / "qdq.h5").string());
    std::unique_ptr<Task> task = make_task(qdq.config, {false, false});
    load_model_weights(task->model(), fp32.checkpoint);
    for (auto& [name, q] : task->model().named_quantizers())
        for (int64_t i = 0; i < q->amax.numel(); ++i) q->amax.f32()[i] = 1.0f;
    save_model(*task, qdq);
    return qdq;
}

Process export_command(const RunFiles& run, const std::string& out, const std::string& extra) {
    return run_qdqtrain("export " + run.config_path + " --checkpoint " + run.checkpoint + " --out " + out + extra);
}

// Quantizers QuantizeLinear cannot express: exit 2 before anything is loaded, naming the key.
void expect_unsupported_quantizers_refused(const TempDir& dir, const nlohmann::json& raw, const RunFiles& qdq,
                                           const std::string& out) {
    struct Unsupported {
        nlohmann::json quantization;
        const char* key;
        const char* why;
    };
    const Unsupported unsupported[] = {
        {{{"input", {{"calib_method", "max"}, {"num_bits", 4}}}}, "quantization.input.num_bits is 4", "8-bit"},
        {{{"input", {{"calib_method", "max"}, {"unsigned", true}}}}, "quantization.input.unsigned is true", "8-bit"},
        {{{"input", {{"calib_method", "max"}}}, {"weight", {{"axis", 0}, {"narrow_range", true}}}},
         "quantization.weight.narrow_range is true", "narrow_range false"},
        {{{"input", {{"calib_method", "max"}}}, {"weight", {{"axis", 1}}}}, "quantization.weight.axis is 1",
         "per output row"},
    };
    for (const Unsupported& u : unsupported) {
        nlohmann::json bad = raw;
        bad["quantization"] = u.quantization;
        bad["quantization"]["calibrator"] = "max";
        const Process p = export_command(write_run(dir, "bad.json", bad, qdq.checkpoint), out, "");
        EXPECT_EQ(p.status, 2) << p.output;
        EXPECT_NE(p.output.find(u.key), std::string::npos) << p.output;
        EXPECT_NE(p.output.find(u.why), std::string::npos) << p.output;
    }
}

}  // namespace

TEST(ExportCommand, ExportsFloatAndQdqAndRejectsWhatOnnxCannotHold) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    RunFiles fp32 = write_run(dir, "fp32.json", raw, (dir.path() / "float.h5").string());
    save_model(*make_task(fp32.config, {false, false}), fp32);
    const RunFiles qdq = with_ranges(dir, fp32);

    const std::string out = (dir.path() / "out.onnx").string();
    Process p = export_command(fp32, out, "");
    EXPECT_EQ(p.status, 0) << p.output;
    EXPECT_NE(p.output.find("\"quantizers\":0"), std::string::npos) << p.output;
    // One layer: 6 Linears × (input, weight) + 4 attention matmul inputs + 4 residual addends.
    p = export_command(qdq, out, " --target onnxruntime-cpu");
    EXPECT_EQ(p.status, 0) << p.output;
    EXPECT_NE(p.output.find("\"quantizers\":20"), std::string::npos) << p.output;

    p = export_command(fp32, out, " --target tensorrt-fp16");
    EXPECT_EQ(p.status, 2) << p.output;
    EXPECT_NE(p.output.find("--target"), std::string::npos) << p.output;
    for (const char* count : {"0", "3x", "many", "3000000000"}) {
        p = export_command(qdq, out, std::string(" --check --check-examples ") + count);
        EXPECT_EQ(p.status, 2) << p.output;
        EXPECT_NE(p.output.find("--check-examples must be a whole number from 1 to 2147483647; got '" + std::string(count) + "'"),
                  std::string::npos)
            << p.output;
    }
    p = run_qdqtrain("export " + fp32.config_path + " --checkpoint " + fp32.checkpoint);
    EXPECT_EQ(p.status, 2) << p.output;
    EXPECT_NE(p.output.find("missing --out"), std::string::npos) << p.output;

    expect_unsupported_quantizers_refused(dir, raw, qdq, out);
    // PACT inputs (learn_amax) are exported with their clip before each QuantizeLinear
    // (onnx/onnx_export.h): its bounds are initializers named after the quantizer.
    const auto holds_clip = [&](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        return bytes.find("_input_quantizer.clip_min") != std::string::npos;
    };
    EXPECT_FALSE(holds_clip(out));
    nlohmann::json pact = run_config_to_json(qdq.config);
    pact["quantization"]["input"]["learn_amax"] = true;
    p = export_command(write_run(dir, "pact.json", pact, qdq.checkpoint), out, "");
    EXPECT_EQ(p.status, 0) << p.output;
    EXPECT_TRUE(holds_clip(out));
    // A float checkpoint under a quantizing config has no ranges; a calibrated one under a float
    // config would lose them.
    p = export_command({qdq.config_path, fp32.checkpoint, {}}, out, "");
    EXPECT_EQ(p.status, 1) << p.output;
    EXPECT_NE(p.output.find("has no range"), std::string::npos) << p.output;
    p = export_command({fp32.config_path, qdq.checkpoint, {}}, out, "");
    EXPECT_EQ(p.status, 1) << p.output;
    EXPECT_NE(p.output.find("export would drop them"), std::string::npos) << p.output;
    nlohmann::json mlm = raw;
    mlm["data"]["task"] = "mlm";
    p = export_command(write_run(dir, "mlm.json", mlm, fp32.checkpoint), out, "");
    EXPECT_EQ(p.status, 2) << p.output;
    EXPECT_NE(p.output.find("data.task 'mlm'"), std::string::npos) << p.output;

    // model.init is where the fine-tuning started (a pretrained encoder without the classifier);
    // the export reads only --checkpoint, so nothing is reported missing from model.init.
    const std::string encoder_path = (dir.path() / "encoder.h5").string();
    Checkpoint encoder;
    for (const NamedTensor& t : make_task(fp32.config, {false, false})->model().state_dict())
        if (!t.name.starts_with("classifier.")) encoder.model.push_back(t);
    encoder.config = fp32.config;
    save_checkpoint(encoder_path, encoder);
    nlohmann::json started = raw;
    started["model"]["init"] = encoder_path;
    const RunFiles from_encoder = write_run(dir, "from_encoder.json", started, fp32.checkpoint);
    p = export_command(from_encoder, out, "");
    EXPECT_EQ(p.status, 0) << p.output;
    EXPECT_EQ(p.output.find("newly initialized"), std::string::npos) << p.output;
}
