// `qdqtrain save-pretrained`: a task model written as a Hugging Face directory reloads into the
// same logits here, and a PyTorch BERT that is not this project's (the fixture script's) fed
// the directory computes them too. The weights are the masked-LM fixture's, far from any
// initialisation, so a tensor under a wrong name or transposed changes the logits visibly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "autograd/tape.h"
#include "json/json_file.h"
#include "nn/heads.h"
#include "nn/pretrained.h"
#include "stages/hf_export.h"
#include "tests/support/temp_dir.h"
#include "trainers/run_config.h"

namespace qdq {
namespace {

using testing::TempDir;

const std::string kFixtures = QDQ_FIXTURE_DIR;
const std::string kWeights = kFixtures + "/bert_tiny/mlm.safetensors";
const std::string kVocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n";

RunConfig mlm_config(const TempDir& dir, const nlohmann::json& quantization = nullptr) {
    dir.write("vocab.txt", kVocab);
    nlohmann::json raw = {
        {"model", {{"config", kFixtures + "/bert_tiny/config.json"}}},
        {"data", {{"task", "mlm"}, {"data_dir", dir.path().string()}, {"vocab", "vocab.txt"}, {"do_lower_case", false}, {"max_seq_length", 32}}},
        {"training", {{"output_dir", (dir.path() / "out").string()}}}};
    if (!quantization.is_null()) raw["quantization"] = quantization;
    return parse_run_config(raw, "run.json", ".");
}

// Two rows of nine tokens, the second padded after six.
nn::BertInputs test_inputs() {
    std::vector<int32_t> ids(18), mask(18, 1);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (int32_t)(1 + (i * 37) % 98);
    for (size_t t = 6; t < 9; ++t) mask[9 + t] = 0, ids[9 + t] = 0;
    return {from_ints({2, 9}, ids), Tensor(), from_ints({2, 9}, mask)};
}

// The logits of the weights at `path` in a model shaped as `config_path` says (a Hugging Face
// directory or its config.json).
Tensor logits_of(const std::string& config_path, const std::string& path) {
    Rng init(7);
    nn::BertForMaskedLM model(nn::load_pretrained_config(config_path), init);
    const nn::LoadReport report = nn::load_pretrained_weights(model, path);
    EXPECT_TRUE(report.missing.empty() && report.unexpected.empty()) << path << report.summary();
    model.eval();
    NoGradGuard no_grad;
    return model.forward(test_inputs());
}

Tensor logits_of(const std::string& directory) { return logits_of(directory, directory); }

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SavePretrained, TheDirectoryReloadsToTheSameLogits) {
    TempDir dir;
    const std::string out = (dir.path() / "hf").string();
    const nlohmann::json summary = save_task_pretrained(mlm_config(dir), kWeights, out);
    EXPECT_EQ(summary["architecture"], "BertForMaskedLM");
    EXPECT_EQ(logits_of(out).to_vector(), logits_of(kFixtures + "/bert_tiny", kWeights).to_vector());

    const nlohmann::json config = read_json_file(out + "/config.json");
    EXPECT_EQ(config["architectures"], nlohmann::json::array({"BertForMaskedLM"}));
    EXPECT_EQ(config["model_type"], "bert");
    EXPECT_EQ(read_text(out + "/vocab.txt"), kVocab);
    const nlohmann::json tokenizer = read_json_file(out + "/tokenizer_config.json");
    EXPECT_EQ(tokenizer["tokenizer_class"], "BertTokenizer");
    EXPECT_EQ(tokenizer["do_lower_case"], false);
}

// A run with RoBERTa's tokenizer (data.vocab a vocab.json) writes its BPE files, not a vocab.txt.
TEST(SavePretrained, ARobertaTokenizerTravelsAsVocabJsonAndMerges) {
    TempDir dir;
    RunConfig config = mlm_config(dir);
    const std::string vocab = R"({"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, "c": 5, "a": 6, "t": 7, "ca": 8, "cat": 9})";
    const std::string merges = "#version: 0.2\nc a\nca t\n";
    config.data.vocab = dir.write("bpe/vocab.json", vocab);
    dir.write("bpe/merges.txt", merges);
    const std::string out = (dir.path() / "hf").string();
    const nlohmann::json summary = save_task_pretrained(config, kWeights, out);
    EXPECT_EQ(read_text(out + "/vocab.json"), vocab);
    EXPECT_EQ(read_text(out + "/merges.txt"), merges);
    EXPECT_FALSE(std::filesystem::exists(out + "/vocab.txt"));
    EXPECT_EQ(read_json_file(out + "/tokenizer_config.json")["tokenizer_class"], "RobertaTokenizer");
    EXPECT_EQ(summary["files"], nlohmann::json::array({"config.json", "model.safetensors", "vocab.json", "merges.txt",
                                                       "tokenizer_config.json"}));
}

// Debian's python3-torch is under /usr/bin/python3 (a pyenv python3 earlier in PATH has no
// torch). CI must run this test: there a missing torch is a failure, elsewhere a skip.
bool have_torch() {
    return std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0;
}

// Ours against PyTorch's BERT (the fixture script's) on the logits of the Hugging Face directory
// `hf` for the test inputs: the largest |ours - PyTorch| (infinity when the script fails) and the
// largest |logit|.
struct TorchComparison {
    float largest_difference = INFINITY;
    float largest_logit = 0;
};

TorchComparison compare_with_torch(const TempDir& dir, const std::string& hf) {
    const nn::BertInputs in = test_inputs();
    nlohmann::json inputs = {{"input_ids", nlohmann::json::array()}, {"attention_mask", nlohmann::json::array()}};
    for (int64_t b = 0; b < 2; ++b) {
        inputs["input_ids"].push_back(std::vector<int32_t>(in.input_ids.i32() + b * 9, in.input_ids.i32() + b * 9 + 9));
        inputs["attention_mask"].push_back(
            std::vector<int32_t>(in.attention_mask.i32() + b * 9, in.attention_mask.i32() + b * 9 + 9));
    }
    write_json_file(dir.write("inputs.json", ""), inputs);
    const std::string command = "cd '" + kFixtures + "' && /usr/bin/python3 bert_mlm_logits.py '" + hf + "' '" +
                                (dir.path() / "inputs.json").string() + "' '" +
                                (dir.path() / "torch.json").string() + "'";
    if (std::system(command.c_str()) != 0) {
        ADD_FAILURE() << command;
        return {};
    }
    const nlohmann::json torch = read_json_file((dir.path() / "torch.json").string());
    const Tensor ours = logits_of(hf);
    EXPECT_EQ(torch["shape"], nlohmann::json(ours.shape()));
    const std::vector<float> theirs = torch["logits"].get<std::vector<float>>(), mine = ours.to_vector();
    if (theirs.size() != mine.size()) return {};
    TorchComparison c{0, 0};
    for (size_t i = 0; i < mine.size(); ++i) {
        c.largest_difference = std::max(c.largest_difference, std::fabs(mine[i] - theirs[i]));
        c.largest_logit = std::max(c.largest_logit, std::fabs(mine[i]));
    }
    return c;
}

void skip_without_torch() {
    if (have_torch()) return;
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "no /usr/bin/python3 with torch; CI=true, so this is a failure";
    GTEST_SKIP() << "no /usr/bin/python3 with torch (Debian: apt-get install python3-torch)";
}

TEST(SavePretrained, APyTorchBertFedTheDirectoryComputesTheSameLogits) {
    skip_without_torch();
    if (IsSkipped() || HasFatalFailure()) return;
    TempDir dir;
    const std::string out = (dir.path() / "hf").string();
    save_task_pretrained(mlm_config(dir), kWeights, out);
    EXPECT_LE(compare_with_torch(dir, out).largest_difference, 1e-4f);
}

// The committed starting model: its Hugging Face directory holds the weights of its model.h5,
// and PyTorch's BERT reads the same model from it.
const std::string kCommitted = std::string(QDQ_REPO_DIR) + "/experiments/pretrained/bert_mini";

TEST(CommittedPretrainedModel, ItsHuggingFaceDirectoryHoldsTheWeightsOfItsModelFile) {
    EXPECT_EQ(logits_of(kCommitted + "/hf").to_vector(), logits_of(kCommitted + "/hf", kCommitted + "/model.h5").to_vector());
}

TEST(CommittedPretrainedModel, APyTorchBertFedItsDirectoryComputesTheSameLogits) {
    skip_without_torch();
    if (IsSkipped() || HasFatalFailure()) return;
    TempDir dir;
    // Its logits reach about ten, and two FP32 programs that sum in different orders differ in
    // the last bits of each: 1e-4 is relative to the largest logit here.
    const TorchComparison c = compare_with_torch(dir, kCommitted + "/hf");
    EXPECT_LE(c.largest_difference, 1e-4f * std::max(1.0f, c.largest_logit)) << "largest |logit| " << c.largest_logit;
}

TEST(SavePretrained, AQuantizedConfigIsRefused) {
    TempDir dir;
    const RunConfig config = mlm_config(dir, {{"calibrator", "max"}});
    try {
        save_task_pretrained(config, kWeights, (dir.path() / "hf").string());
        ADD_FAILURE() << "a quantized config was written";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("run.json: quantization"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "hf"));
}

// A run's folder (its config.json a run config) is refused: the run's config would be lost.
TEST(SavePretrained, ARunsFolderIsRefused) {
    TempDir dir;
    const RunConfig config = mlm_config(dir);
    const std::string run = (dir.path() / "run").string(), saved = run + "/config.json";
    std::filesystem::create_directories(run);
    write_json_file(saved, run_config_to_json(config));
    try {
        save_task_pretrained(config, kWeights, run);
        ADD_FAILURE() << "wrote over a run's config.json";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(run + " is a run's folder"), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_json_file(saved), run_config_to_json(config));
}

}  // namespace
}  // namespace qdq
