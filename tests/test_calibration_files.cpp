// What a calibration leaves on disk (stages/calibrate.h): the float weights once, in model.h5, and
// each method's quantizer state alone in <method>/ranges.h5, which names ../model.h5 for the rest
// (trainers/checkpoint.h). The reference a method's file must reproduce is the model calibrate
// held when it saved that method: its state right after calibrate for the last method, and for
// every method the ranges calibrate reported for it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "io/hdf5_weights.h"
#include "qdqbert/calibration.h"
#include "stages/calibrate.h"
#include "stages/export.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/trainer.h"

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

namespace {

// The tiny task at a width where the weights outweigh HDF5's fixed cost per dataset (about
// 800 bytes), as they do in any real model, so that the files' sizes compare what they hold.
nlohmann::json float_config(const TempDir& dir, const std::string& out) {
    nlohmann::json c = tiny_config(dir, out);
    c["model"]["config"]["hidden_size"] = 64;
    c["model"]["config"]["intermediate_size"] = 256;
    return c;
}

nlohmann::json quantized_config(const TempDir& dir, const std::string& out) {
    return qdq::testing::with_quantization(float_config(dir, out));
}

RunConfig parse(const nlohmann::json& raw) { return parse_run_config(raw, "test.json", "."); }

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), (size_t)a.numel() * 4) == 0;
}

// The names of a saved file's model tensors ("model.<key>" in the file), and their data's bytes.
std::set<std::string> model_keys(const std::string& path, size_t* bytes = nullptr) {
    std::set<std::string> keys;
    for (const NamedTensor& t : load_hdf5_weights(path).tensors) {
        EXPECT_TRUE(t.name.starts_with("model.")) << path << ": " << t.name;
        keys.insert(t.name.substr(6));
        if (bytes) *bytes += (size_t)t.tensor.numel() * 4;
    }
    return keys;
}

}  // namespace

TEST(CalibrationFiles, OneModelAndEachMethodsRangesThatLoadToTheCalibratedModel) {
    TempDir dir;
    write_task_files(dir);
    RunConfig fp32 = parse(float_config(dir, "fp32"));
    ASSERT_EQ(train(fp32, *make_task(fp32, {true, true}), {}).status, TrainStatus::finished);
    nlohmann::json raw = quantized_config(dir, "calib");
    raw["model"]["init"] = (dir.path() / "fp32" / "model.h5").string();
    const RunConfig config = parse(raw);
    std::unique_ptr<Task> task = make_task(config, {true, true});
    const CalibrationResult result = calibrate(config, *task, {.sensitivity = Sensitivity::none, .all_methods = true});
    ASSERT_EQ(result.methods.size(), 6u);
    // Without a sweep the model is left as the last method saved it.
    NamedTensors calibrated = task->model().state_dict();
    for (NamedTensor& t : calibrated) t.tensor = t.tensor.clone();
    std::set<std::string> quantizer_keys;
    for (const auto& [name, q] : task->model().named_quantizers()) quantizer_keys.insert(name + "._amax");
    ASSERT_EQ(quantizer_keys.size(), 20u);

    const fs::path out = dir.path() / "calib";
    int models = 0;
    for (const auto& entry : fs::recursive_directory_iterator(out)) models += entry.path().filename() == "model.h5";
    EXPECT_EQ(models, 1);
    size_t model_bytes = 0;
    const std::set<std::string> weights = model_keys((out / "model.h5").string(), &model_bytes);
    EXPECT_EQ(weights.size() + quantizer_keys.size(), calibrated.size());
    for (const std::string& key : quantizer_keys) EXPECT_FALSE(weights.count(key)) << key;
    EXPECT_FALSE(checkpoint_run_config((out / "model.h5").string()).value().quantization);

    const auto quantizers = task->model().named_quantizers();
    for (const CalibratedMethod& m : result.methods) {
        EXPECT_EQ(fs::path(m.checkpoint), out / m.name / "ranges.h5");
        size_t range_bytes = 0;
        EXPECT_EQ(model_keys(m.checkpoint, &range_bytes), quantizer_keys) << m.name;
        EXPECT_LT(50 * range_bytes, model_bytes) << m.name;
        EXPECT_LT(8 * fs::file_size(m.checkpoint), fs::file_size(out / "model.h5")) << m.name;
        EXPECT_EQ(fs::path(checkpoint_weights_file(m.checkpoint)), out / "model.h5") << m.name;

        // A fresh quantized model from the ranges file alone holds the ranges calibrate reported.
        std::unique_ptr<Task> fresh = make_task(parse(quantized_config(dir, "eval")), {.train = false, .eval = true, .weights = false});
        load_model_weights(fresh->model(), m.checkpoint);
        check_calibrated(fresh->model(), m.name);
        const auto loaded = fresh->model().named_quantizers();
        for (size_t i = 0; i < loaded.size(); ++i) {
            ASSERT_EQ(loaded[i].first, result.quantizers[i].name);
            if (result.quantizers[i].methods.count(m.name))
                EXPECT_EQ(loaded[i].second->amax.item(), (float)result.quantizers[i].methods.at(m.name).amax)
                    << m.name << " " << loaded[i].first;
            else
                EXPECT_TRUE(same_bits(loaded[i].second->amax, quantizers[i].second->amax)) << m.name << " " << loaded[i].first;
        }
        if (&m != &result.methods.back()) continue;
        // The last method: every tensor, weights and ranges, as calibrate held them.
        const NamedTensors state = fresh->model().state_dict();
        ASSERT_EQ(state.size(), calibrated.size());
        for (size_t i = 0; i < state.size(); ++i) {
            ASSERT_EQ(state[i].name, calibrated[i].name);
            EXPECT_TRUE(same_bits(state[i].tensor, calibrated[i].tensor)) << state[i].name;
        }
        EXPECT_EQ(fresh->evaluate(16), m.metrics);
        // The export reads the two files as one checkpoint: every quantizer has its range.
        const nlohmann::json exported =
            export_task_onnx(parse(quantized_config(dir, "eval")), m.checkpoint, (dir.path() / "m.onnx").string(), QdqTarget::TensorRT);
        EXPECT_EQ(exported["quantizers"], 20);
    }

    // Without the model beside it, a ranges file is no model: the error names both files.
    fs::create_directories(dir.path() / "moved" / "max");
    const fs::path moved = dir.path() / "moved" / "max" / "ranges.h5";
    fs::copy_file(out / "max" / "ranges.h5", moved);
    std::unique_ptr<Task> fresh = make_task(parse(quantized_config(dir, "eval")), {.train = false, .weights = false});
    expect_error([&] { load_model_weights(fresh->model(), moved.string()); },
                 {moved.string(), (dir.path() / "moved" / "model.h5").string(), "could not be read"});
}

// The format itself on hand-made files: the named file's model tensors with the partial file's on
// top, the partial file's config, and errors that name both files.
TEST(PartialCheckpoint, LoadsOverTheFileItNamesAndFailsNamingBoth) {
    TempDir dir;
    const std::string base = (dir.path() / "model.h5").string();
    fs::create_directories(dir.path() / "max");
    const std::string ranges = (dir.path() / "max" / "ranges.h5").string();
    RunConfig base_config, ranges_config;
    base_config.model.init = ranges_config.model.init = "model.h5";
    base_config.training.seed = 1;
    ranges_config.training.seed = 2;
    save_checkpoint(base, {{{"w", from_vector({2}, {1.0f, 2.0f})}, {"q._amax", full({}, 9.0f)}}, {}, {}, base_config});
    save_checkpoint(ranges, {{{"q._amax", full({}, 3.0f)}, {"k._amax", full({}, 4.0f)}}, {}, {}, ranges_config, "../model.h5"});

    const Checkpoint whole = load_checkpoint(ranges);
    EXPECT_EQ(whole.config.training.seed, 2u);
    EXPECT_TRUE(whole.weights.empty());
    ASSERT_EQ(whole.model.size(), 3u);
    EXPECT_EQ(whole.model[0].name, "w");
    EXPECT_EQ(whole.model[0].tensor.to_vector(), (std::vector<float>{1.0f, 2.0f}));
    EXPECT_EQ(whole.model[1].name, "q._amax");
    EXPECT_EQ(whole.model[1].tensor.item(), 3.0f);
    EXPECT_EQ(whole.model[2].name, "k._amax");
    EXPECT_EQ(checkpoint_weights_file(ranges), fs::path(base).lexically_normal().string());
    EXPECT_EQ(checkpoint_weights_file(base), "");
    EXPECT_FALSE(nlohmann::json::parse(load_hdf5_config(base)).contains("weights"));  // a whole file as before

    // The named file names yet another: refused, not followed (a chain may close into a loop).
    save_checkpoint(base, {{}, {}, {}, base_config, "max/ranges.h5"});
    expect_error([&] { load_checkpoint(ranges); }, {ranges, base, "names yet another file"});
    // Not a checkpoint, or missing.
    std::ofstream(base) << "not HDF5";
    expect_error([&] { load_checkpoint(ranges); }, {ranges, base, "could not be read"});
    fs::remove(base);
    expect_error([&] { load_checkpoint(ranges); }, {ranges, base, "could not be read"});
}
