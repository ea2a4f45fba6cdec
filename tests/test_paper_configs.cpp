// The papers' recipes (experiments/paper/) run at their real shapes. Each table's commands run as
// its README gives them, in order, from a copy of experiments/paper/ beside downloads/ and runs/,
// as a user runs them from the repository root: the configs' own paths (the checkpoint, the data
// files by their official names, one stage's output as the next stage's model.init) are what is
// tested. The checkpoints are Hugging Face directories with the public ones' config.json and
// tokenizer files and random weights of their exact shapes (tests/support/hf_checkpoints.h); the
// data files are a few real examples in SQuAD's and GLUE's layouts. Only sizes are overridden:
// two optimizer steps of one example, four training and one evaluation example, two calibration
// examples, no checkpoint kept.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/data.h"
#include "tests/support/hf_checkpoints.h"
#include "tests/support/official_data.h"
#include "tests/support/run_qdqtrain.h"
#include "tests/support/temp_dir.h"
#include "tests/test_onnx_support.h"

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kPaper = fs::path(QDQ_REPO_DIR) / "experiments" / "paper";

// What every command of a table is given beyond its README line: sizes, never shapes.
const std::string kSizes =
    " --set training.max_steps=2 --set training.per_device_train_batch_size=1 --set training.per_device_eval_batch_size=2"
    " --set training.logging_steps=1 --set training.save_total_limit=0 --set data.max_train_examples=4"
    " --set data.max_eval_examples=1";
const char* const kCalibrationSizes = " --set quantization.calibration_examples=2 --sensitivity none";

// A user's working copy: experiments/paper/ as committed, downloads/ with the checkpoints and
// data the table names, runs/ written by the commands.
struct PaperRoot {
    TempDir dir;
    PaperRoot() {
        fs::create_directories(dir.path() / "experiments");
        fs::copy(kPaper, dir.path() / "experiments" / "paper", fs::copy_options::recursive);
    }
    fs::path downloads() const { return dir.path() / "downloads"; }

    // `qdqtrain COMMAND experiments/paper/CONFIG ...` from the root; the test fails with its output
    // unless it exits 0.
    void run(const std::string& command, const std::string& config, const std::string& options) const {
        const Process p = run_command("cd " + dir.path().string() + " && " + QDQTRAIN_PATH + " " + command +
                                      " experiments/paper/" + config + options);
        EXPECT_EQ(p.status, 0) << command << " " << config << options << "\n" << p.output;
    }
    bool exists(const std::string& relative) const { return fs::exists(dir.path() / relative); }
};

void require_shared_data() {
    for (const char* file : {"vocab/bert-base-uncased-vocab.txt", "squad/dev-v1.1.json.gz", "mnli/dev_matched.tsv.gz"}) {
        require_data_file(file);
        if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
    }
}

}  // namespace

// The quant-qdqbert example's table at 128 tokens, and the same recipe as one pipeline command:
// BERT-base through QAT, ONNX export and ONNX Runtime.
TEST(PaperConfigs, QdqbertSquadRunsAtBertBaseShapesThroughOnnxRuntime) {
    require_shared_data();
    if (IsSkipped() || HasFatalFailure()) return;
    QDQ_REQUIRE(onnxruntime);
    PaperRoot root;
    write_hf_checkpoint(root.downloads() / "bert-base-uncased", HfCheckpoint::BertBaseUncased);
    write_official_squad(root.downloads() / "squad");
    root.run("train", "qdqbert_squad/fp32.json", kSizes);
    root.run("calibrate", "qdqbert_squad/ptq.json", kSizes + kCalibrationSizes);
    root.run("calibrate", "qdqbert_squad/qat_calibrate.json", kSizes + kCalibrationSizes);
    root.run("train", "qdqbert_squad/qat.json", kSizes);
    EXPECT_TRUE(root.exists("runs/paper/qdqbert_squad/ptq/percentile-99.99/ranges.h5"));
    EXPECT_TRUE(root.exists("runs/paper/qdqbert_squad/qat/eval_results.json"));

    // The pipeline's QAT runs pipeline.qat_num_train_epochs (2) unless it is 0: then the two steps.
    root.run("pipeline", "qdqbert_squad/pipeline.json",
             kSizes + " --set quantization.calibration_examples=2 --set pipeline.onnx_threads=2"
                      " --set pipeline.qat_num_train_epochs=0");
    EXPECT_TRUE(root.exists("runs/paper/qdqbert_squad/pipeline/results.md"));
    EXPECT_TRUE(root.exists("runs/paper/qdqbert_squad/pipeline/onnx/evaluation.json"));
}

// FasterTransformer's table at 384 tokens: FP32, PTQ, QAT from the calibrated pretrained model,
// and QAT with distillation from the FP32 model.
TEST(PaperConfigs, FasterTransformerSquadRunsAtBertBaseShapes) {
    require_shared_data();
    if (IsSkipped() || HasFatalFailure()) return;
    PaperRoot root;
    write_hf_checkpoint(root.downloads() / "bert-base-uncased", HfCheckpoint::BertBaseUncased);
    write_official_squad(root.downloads() / "squad");
    root.run("train", "fastertransformer_squad/fp32.json", kSizes);
    root.run("calibrate", "fastertransformer_squad/ptq.json", kSizes + kCalibrationSizes);
    root.run("calibrate", "fastertransformer_squad/qat_calibrate.json", kSizes + kCalibrationSizes);
    root.run("train", "fastertransformer_squad/qat.json", kSizes);
    root.run("calibrate", "fastertransformer_squad/kd_calibrate.json", kSizes + kCalibrationSizes);
    root.run("train", "fastertransformer_squad/qat_kd.json", kSizes);
    EXPECT_TRUE(root.exists("runs/paper/fastertransformer_squad/ptq/percentile-99.999/ranges.h5"));
    EXPECT_TRUE(root.exists("runs/paper/fastertransformer_squad/qat_kd/eval_results.json"));
}

// Q8BERT's row: QAT of the GEMMs alone (no attention products, no residual adds), max ranges.
TEST(PaperConfigs, Q8bertSquadRunsAtBertBaseShapes) {
    require_shared_data();
    if (IsSkipped() || HasFatalFailure()) return;
    PaperRoot root;
    write_hf_checkpoint(root.downloads() / "bert-base-uncased", HfCheckpoint::BertBaseUncased);
    write_official_squad(root.downloads() / "squad");
    root.run("train", "q8bert_squad/fp32.json", kSizes);
    root.run("calibrate", "q8bert_squad/qat_calibrate.json", kSizes + kCalibrationSizes);
    root.run("train", "q8bert_squad/qat.json", kSizes);
    EXPECT_TRUE(root.exists("runs/paper/q8bert_squad/qat/eval_results.json"));
}

// BERT-large (whole word masking) at 384 tokens, one example a step: FP32, calibration, QAT.
TEST(PaperConfigs, BertLargeSquadRunsAtBertLargeShapes) {
    require_shared_data();
    if (IsSkipped() || HasFatalFailure()) return;
    PaperRoot root;
    write_hf_checkpoint(root.downloads() / "bert-large-uncased-whole-word-masking", HfCheckpoint::BertLargeUncasedWwm);
    write_official_squad(root.downloads() / "squad");
    root.run("train", "bert_large_squad/fp32.json", kSizes);
    root.run("calibrate", "bert_large_squad/calibrate.json", kSizes + kCalibrationSizes);
    root.run("train", "bert_large_squad/qat.json", kSizes);
    EXPECT_TRUE(root.exists("runs/paper/bert_large_squad/qat/eval_results.json"));
}

// transformer-deploy's table: RoBERTa-base on GLUE's MNLI files, its BPE tokenizer, 256 tokens.
TEST(PaperConfigs, RobertaMnliRunsAtRobertaBaseShapes) {
    require_shared_data();
    if (IsSkipped() || HasFatalFailure()) return;
    PaperRoot root;
    write_hf_checkpoint(root.downloads() / "roberta-base", HfCheckpoint::RobertaBase);
    write_official_mnli(root.downloads() / "glue" / "MNLI");
    root.run("train", "roberta_mnli/fp32.json", kSizes);
    root.run("calibrate", "roberta_mnli/ptq.json", kSizes + kCalibrationSizes);
    root.run("train", "roberta_mnli/qat.json", kSizes);
    EXPECT_TRUE(root.exists("runs/paper/roberta_mnli/ptq/percentile-99.999/ranges.h5"));
    EXPECT_TRUE(root.exists("runs/paper/roberta_mnli/qat/eval_results.json"));
}

// What a paper config must refuse before any training: a key no section has, a SQuAD file in
// another layout than the official one (the JSON lines Hugging Face's datasets export), and a
// checkpoint whose weights do not fit its config.json.
TEST(PaperConfigs, RefuseAMistypedKeyAnotherFileLayoutAndAShapeTheModelCannotLoad) {
    require_shared_data();
    if (IsSkipped() || HasFatalFailure()) return;
    PaperRoot root;
    write_official_squad(root.downloads() / "squad");
    const std::string command = std::string(QDQTRAIN_PATH) + " train experiments/paper/qdqbert_squad/fp32.json";
    auto run = [&](const std::string& options) { return run_command("cd " + root.dir.path().string() + " && " + command + options); };

    write_hf_checkpoint(root.downloads() / "bert-base-uncased", HfCheckpoint::BertTiny);
    Process p = run(kSizes + " --set training.learning_rat=1e-5");
    EXPECT_EQ(p.status, 2) << p.output;
    EXPECT_NE(p.output.find("training.learning_rat"), std::string::npos) << p.output;

    write_squad_as_json_lines(root.downloads() / "squad" / "train-v1.1.json");
    p = run(kSizes);
    EXPECT_NE(p.status, 0) << p.output;
    EXPECT_NE(p.output.find("train-v1.1.json"), std::string::npos) << p.output;

    write_official_squad(root.downloads() / "squad");
    write_mismatched_hf_checkpoint(root.downloads() / "bert-base-uncased");
    p = run(kSizes);
    EXPECT_NE(p.status, 0) << p.output;
    EXPECT_NE(p.output.find("shape"), std::string::npos) << p.output;
}
