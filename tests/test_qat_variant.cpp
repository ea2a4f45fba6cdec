// pipeline.qat_variants: each variant's config is the file's with its keys set, checked when
// the file is read, written back with the resolved config; bad names, keys and values are
// errors that name the file, the variant and the key.
#include <gtest/gtest.h>

#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/qat_variant.h"
#include "trainers/run_config.h"

using namespace qdq;
using qdq::testing::expect_error;
using qdq::testing::TempDir;
using qdq::testing::tiny_config;
using qdq::testing::write_task_files;

namespace {

nlohmann::json pipeline_config(const TempDir& dir) {
    nlohmann::json raw = tiny_config(dir, "pipe");
    raw["quantization"] = {{"calibration_examples", 16}};
    raw["pipeline"] = {{"qat_variants",
                        {{"kd", {{"distillation.alpha", 0.25}, {"distillation.temperature", 2}}},
                         {"lsq", {{"quantization.input.learn_step_size", true}, {"pipeline.qat_learning_rate_ratio", 0.5}}}}}};
    return raw;
}

}  // namespace

TEST(QatVariant, ConfigIsTheFilesWithItsKeysSet) {
    TempDir dir;
    write_task_files(dir);
    const RunConfig config = parse_run_config(pipeline_config(dir), "pipe.json", ".");
    ASSERT_EQ(config.pipeline.qat_variants.size(), 2u);
    EXPECT_FALSE(config.distillation);

    const RunConfig kd = qat_variant_config(config, config.pipeline.qat_variants[0]);
    EXPECT_EQ(config.pipeline.qat_variants[0].name, "kd");
    ASSERT_TRUE(kd.distillation);
    EXPECT_EQ(kd.distillation->alpha, 0.25);
    EXPECT_EQ(kd.distillation->temperature, 2);
    EXPECT_TRUE(kd.distillation->teacher.empty());  // the pipeline's FP32 model, as for its own QAT
    EXPECT_TRUE(kd.pipeline.qat_variants.empty());
    EXPECT_FALSE(kd.quantization->input.learn_step_size);

    const RunConfig lsq = qat_variant_config(config, config.pipeline.qat_variants[1]);
    EXPECT_TRUE(lsq.quantization->input.learn_step_size);
    EXPECT_FALSE(lsq.quantization->weight.learn_step_size);
    EXPECT_EQ(lsq.pipeline.qat_learning_rate_ratio, 0.5);
    EXPECT_EQ(kd.pipeline.qat_learning_rate_ratio, config.pipeline.qat_learning_rate_ratio);
    EXPECT_FALSE(lsq.distillation);
    // Everything else is the file's.
    EXPECT_EQ(lsq.training.output_dir, config.training.output_dir);
    EXPECT_EQ(lsq.data.train_files, config.data.train_files);

    // The resolved config keeps the variants, and reads back to the same ones.
    const nlohmann::json written = run_config_to_json(config);
    EXPECT_EQ(written["pipeline"]["qat_variants"], pipeline_config(dir)["pipeline"]["qat_variants"]);
    const RunConfig reread = parse_run_config(written, "config.json", ".");
    ASSERT_EQ(reread.pipeline.qat_variants.size(), 2u);
    EXPECT_EQ(reread.pipeline.qat_variants[1].settings, config.pipeline.qat_variants[1].settings);
    // A config without variants writes none.
    EXPECT_FALSE(run_config_to_json(parse_run_config(tiny_config(dir, "x"), "x.json", "."))["pipeline"].contains(
        "qat_variants"));
}

TEST(QatVariant, BadVariantsAreErrorsNamingFileVariantAndKey) {
    TempDir dir;
    write_task_files(dir);
    auto with = [&](const nlohmann::json& variants) {
        nlohmann::json raw = pipeline_config(dir);
        raw["pipeline"]["qat_variants"] = variants;
        return raw;
    };
    auto parse = [](const nlohmann::json& raw) { parse_run_config(raw, "pipe.json", "."); };
    expect_error([&] { parse(with({{"Bad Name", nlohmann::json::object()}})); },
                 {"pipe.json", "pipeline.qat_variants", "'Bad Name'"});
    expect_error([&] { parse(with(nlohmann::json::array())); }, {"pipe.json", "pipeline.qat_variants", "object"});
    expect_error([&] { parse(with({{"kd", 0.5}})); }, {"pipe.json", "pipeline.qat_variants.kd", "object"});
    // The FP32 model and the calibration are shared: their keys are not a variant's to set.
    expect_error([&] { parse(with({{"long", {{"data.max_seq_length", 32}}}})); },
                 {"pipe.json", "pipeline.qat_variants.long", "data.max_seq_length"});
    expect_error([&] { parse(with({{"m", {{"model.init", "x.h5"}}}})); },
                 {"pipe.json", "pipeline.qat_variants.m", "model.init"});
    // What the pipeline sets itself, and what would change the shared calibration, are refused.
    expect_error([&] { parse(with({{"o", {{"training.output_dir", "x"}}}})); },
                 {"pipeline.qat_variants.o", "training.output_dir", "qat_<name>"});
    expect_error([&] { parse(with({{"lr", {{"training.learning_rate", 1e-3}}}})); },
                 {"pipeline.qat_variants.lr", "training.learning_rate", "pipeline.qat_learning_rate_ratio"});
    expect_error([&] { parse(with({{"b", {{"training.bf16", true}}}})); }, {"pipeline.qat_variants.b", "training.bf16"});
    expect_error([&] { parse(with({{"c", {{"quantization.calibrator", "max"}}}})); },
                 {"pipeline.qat_variants.c", "quantization.calibrator", "share the calibrated quantizers"});
    expect_error([&] { parse(with({{"a", {{"quantization.weight.axis", 1}}}})); },
                 {"pipeline.qat_variants.a", "quantization.weight.axis"});
    expect_error([&] { parse(with({{"p", {{"pipeline.sensitivity", "none"}}}})); },
                 {"pipeline.qat_variants.p", "pipeline.sensitivity"});
    // Values are checked as the file's own keys are, when the file is read.
    expect_error([&] { parse(with({{"lsq", {{"quantization.input.learn_step_size", "yes"}}}})); },
                 {"pipe.json", "pipeline.qat_variants.lsq", "learn_step_size"});
    expect_error([&] { parse(with({{"kd", {{"distillation.alpha", 2}}}})); },
                 {"pipe.json", "pipeline.qat_variants.kd", "distillation.alpha"});
    expect_error([&] { parse(with({{"typo", {{"training.learning_rat", 1e-3}}}})); },
                 {"pipe.json", "pipeline.qat_variants.typo", "learning_rat"});
}
