// The pipeline on the tiny task: every stage's output where pipeline.h says, the QAT stage
// derived from the FP32 config as documented, the table's rows, and a rerun that redoes nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/pipeline.h"
#include "trainers/pipeline_report.h"

using namespace qdq;
using qdq::testing::TempDir;
using qdq::testing::tiny_config;
using qdq::testing::write_task_files;
namespace fs = std::filesystem;

TEST(Pipeline, RunsEveryStageAndARerunRedoesNothing) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "pipe");
    raw["quantization"] = {{"calibration_examples", 16}};
    raw["pipeline"] = {{"calibration", "percentile-99.99"}, {"qat_learning_rate_ratio", 0.05}};
    RunConfig config = parse_run_config(raw, "pipe.json", ".");

    RunConfig qat = qat_stage_config(config, "x.h5");
    EXPECT_DOUBLE_EQ(qat.training.learning_rate, 0.05 * config.training.learning_rate);
    EXPECT_EQ(qat.model.init, "x.h5");
    EXPECT_EQ(qat.training.output_dir, (dir.path() / "pipe" / "qat").string());
    EXPECT_TRUE(fp32_stage_config(config).quantization.is_null());
    EXPECT_EQ(calibrate_stage_config(config).model.init, (dir.path() / "pipe" / "fp32" / "model.h5").string());

    PipelineOutcome first = run_pipeline(config);
    ASSERT_TRUE(first.finished);
    const fs::path out = dir.path() / "pipe";
    for (const char* file : {"fp32/model.h5", "calibrate/calibration.json", "calibrate/percentile-99.99/model.h5",
                             "qat/model.h5", "onnx/model_fp32.onnx", "onnx/model_int8.onnx", "results.json",
                             "results.md", "plots/metric_by_stage.svg", "plots/fp32_loss.svg",
                             "plots/fp32_eval.svg", "plots/qat_loss.svg"})
        EXPECT_TRUE(fs::exists(out / file)) << file;
    EXPECT_EQ(first.results["qat_from"], "percentile-99.99");
    // QAT started from the calibrated checkpoint: its config names it.
    EXPECT_EQ(load_checkpoint(list_checkpoints((out / "qat").string()).back()).config["model"]["init"],
              (out / "calibrate" / "percentile-99.99" / "model.h5").string());
    const nlohmann::json rows = pipeline_rows(first.results);
    ASSERT_EQ(rows.size(), 8u);  // FP32, six PTQ methods, QAT
    EXPECT_EQ(rows[0]["model"], "FP32");
    EXPECT_EQ(rows[7]["model"], "QAT (from percentile-99.99)");
    for (const char* key : {"fp32_accuracy", "ptq_accuracy", "qat_accuracy"})
        EXPECT_TRUE(first.results["summary"].contains(key)) << key;

    // What the export cannot write is refused before any training.
    nlohmann::json four_bit = raw;
    four_bit["quantization"]["input"] = {{"num_bits", 4}, {"calib_method", "histogram"}};
    four_bit["training"]["output_dir"] = (dir.path() / "four_bit").string();
    EXPECT_THROW(run_pipeline(parse_run_config(four_bit, "pipe.json", ".")), std::invalid_argument);
    EXPECT_FALSE(fs::exists(dir.path() / "four_bit" / "fp32"));

    const auto written = fs::last_write_time(out / "qat" / "model.h5");
    PipelineOutcome second = run_pipeline(config);
    EXPECT_EQ(fs::last_write_time(out / "qat" / "model.h5"), written);
    EXPECT_EQ(second.results["summary"], first.results["summary"]);
}
