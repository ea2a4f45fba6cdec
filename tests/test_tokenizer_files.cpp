// Which tokenizer a run gets: data/tokenizer.h's tokenizer_files (a vocab.txt, a vocab.json with
// its merges, a Hugging Face directory) and the run config's data.vocab, which defaults to
// model.init's directory when model.init is one, and data.do_lower_case, which a directory's
// tokenizer_config.json gives when the config does not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/tokenizer.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "trainers/checkpoint.h"
#include "trainers/run_config.h"
#include "trainers/task.h"

namespace qdq {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::TempDir;

const fs::path kBpeFixture = fs::path(QDQ_FIXTURE_DIR) / "bpe";
constexpr const char* kWordPieceVocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n";

// A Hugging Face directory as RoBERTa's downloads have it (its tokenizer files, no weights).
fs::path write_bpe_dir(const TempDir& dir, const std::string& name) {
    const fs::path folder = dir.path() / name;
    fs::create_directories(folder);
    fs::copy_file(kBpeFixture / "vocab.json", folder / "vocab.json");
    fs::copy_file(kBpeFixture / "merges.txt", folder / "merges.txt");
    return folder;
}

TEST(TokenizerFiles, DirectoryWithVocabJsonAndMergesIsBpe) {
    TempDir dir;
    const fs::path roberta = write_bpe_dir(dir, "roberta");
    const TokenizerFiles files = tokenizer_files(roberta.string());
    EXPECT_EQ(files.kind, TokenizerKind::ByteLevelBpe);
    EXPECT_EQ(files.vocab, (roberta / "vocab.json").string());
    EXPECT_EQ(files.merges, (roberta / "merges.txt").string());
    EXPECT_EQ(files.config, "");
    EXPECT_EQ(load_tokenizer(roberta.string(), true).kind, TokenizerKind::ByteLevelBpe);
    // The vocab.json itself, and Hugging Face's older download names.
    EXPECT_EQ(tokenizer_files((roberta / "vocab.json").string()).merges, (roberta / "merges.txt").string());
    fs::copy_file(roberta / "vocab.json", dir.path() / "roberta-base-vocab.json");
    fs::copy_file(roberta / "merges.txt", dir.path() / "roberta-base-merges.txt");
    EXPECT_EQ(tokenizer_files((dir.path() / "roberta-base-vocab.json").string()).merges,
              (dir.path() / "roberta-base-merges.txt").string());
}

TEST(TokenizerFiles, DirectoryWithVocabTxtIsWordPiece) {
    TempDir dir;
    dir.write("bert/vocab.txt", kWordPieceVocab);
    dir.write("bert/tokenizer_config.json", R"({"do_lower_case": false})");
    const TokenizerFiles files = tokenizer_files((dir.path() / "bert").string());
    EXPECT_EQ(files.kind, TokenizerKind::WordPiece);
    EXPECT_EQ(files.vocab, (dir.path() / "bert" / "vocab.txt").string());
    EXPECT_EQ(files.config, (dir.path() / "bert" / "tokenizer_config.json").string());
    const Tokenizer t = load_tokenizer((dir.path() / "bert").string(), true);
    EXPECT_EQ(t.kind, TokenizerKind::WordPiece);
    EXPECT_EQ(special_token_count(t.special, true), 3);
    EXPECT_EQ(t.mask_id, 4);
}

TEST(TokenizerFiles, MissingFilesAreNamed) {
    TempDir dir;
    const fs::path roberta = write_bpe_dir(dir, "roberta");
    fs::remove(roberta / "merges.txt");
    expect_error([&] { tokenizer_files(roberta.string()); }, {(roberta / "merges.txt").string(), "merges"});
    expect_error([&] { load_tokenizer((roberta / "vocab.json").string(), true); }, {(roberta / "merges.txt").string()});
    dir.write("empty/README.md", "no tokenizer here");
    expect_error([&] { tokenizer_files((dir.path() / "empty").string()); },
                 {(dir.path() / "empty").string(), "vocab.txt", "vocab.json"});
    dir.write("both/vocab.txt", kWordPieceVocab);
    write_bpe_dir(dir, "both");
    expect_error([&] { tokenizer_files((dir.path() / "both").string()); }, {"both", "vocab.txt", "vocab.json"});
    expect_error([&] { tokenizer_files((dir.path() / "absent.txt").string()); }, {"absent.txt"});
}

// A run config with model.init `init` and the data keys `data`; the default vocabulary lives in
// the data dir, as vocab/bert-base-uncased-vocab.txt does in the shared one.
nlohmann::json config_with(const TempDir& dir, const std::string& init, nlohmann::json data) {
    dir.write("data/vocab/bert-base-uncased-vocab.txt", kWordPieceVocab);
    data["data_dir"] = (dir.path() / "data").string();
    return {{"model", {{"init", init}}}, {"data", data}, {"training", {{"output_dir", (dir.path() / "out").string()}}}};
}

TEST(RunConfigTokenizer, UnsetVocabComesFromModelInitsDirectory) {
    TempDir dir;
    const fs::path roberta = write_bpe_dir(dir, "roberta");
    const RunConfig c = parse_run_config(config_with(dir, roberta.string(), nlohmann::json::object()), "run.json", ".");
    EXPECT_EQ(c.data.vocab, roberta.string());
    EXPECT_EQ(task_tokenizer(c, nn::BertConfig{}).kind, TokenizerKind::ByteLevelBpe);
    // Saved and read again, the run keeps its tokenizer.
    const RunConfig again = parse_run_config(run_config_to_json(c), "config.json", ".");
    EXPECT_EQ(again.data.vocab, roberta.string());
    // A set data.vocab wins; a model.init that is a file leaves the default.
    const nlohmann::json named_vocab = {{"vocab", "vocab/bert-base-uncased-vocab.txt"}};
    const RunConfig named = parse_run_config(config_with(dir, roberta.string(), named_vocab), "run.json", ".");
    EXPECT_EQ(task_tokenizer(named, nn::BertConfig{}).kind, TokenizerKind::WordPiece);
    // A tokenizer with more tokens than the model has embeddings is not the model's.
    expect_error([&] { task_tokenizer(named, nn::BertConfig{.vocab_size = 4}); },
                 {"run.json: data.vocab", "tokens, over the model's vocab_size 4"});
    const std::string weights = dir.write("weights.h5", "");
    const RunConfig from_file = parse_run_config(config_with(dir, weights, nlohmann::json::object()), "run.json", ".");
    EXPECT_EQ(from_file.data.vocab, (dir.path() / "data" / "vocab" / "bert-base-uncased-vocab.txt").string());
}

// A model.init that is a checkpoint of a run names its tokenizer in its saved config: a config
// that starts from it without data.vocab (a QAT run from a fine-tuned RoBERTa) reads the text
// as that run did, not with the default vocabulary.
TEST(RunConfigTokenizer, UnsetVocabComesFromModelInitsCheckpoint) {
    TempDir dir;
    const fs::path roberta = write_bpe_dir(dir, "roberta");
    RunConfig fine_tuned = parse_run_config(config_with(dir, roberta.string(), nlohmann::json::object()), "run.json", ".");
    fine_tuned.data.do_lower_case = false;
    const std::string checkpoint = (dir.path() / "model.h5").string();
    save_checkpoint(checkpoint, {{}, {}, {}, fine_tuned});
    const RunConfig qat = parse_run_config(config_with(dir, checkpoint, nlohmann::json::object()), "qat.json", ".");
    EXPECT_EQ(qat.data.vocab, roberta.string());
    EXPECT_EQ(qat.data.do_lower_case, false);
    EXPECT_EQ(task_tokenizer(qat, nn::BertConfig{}).kind, TokenizerKind::ByteLevelBpe);
    // Its tokenizer gone (the checkpoint moved to another machine): an error that says whose it was.
    fs::remove_all(roberta);
    expect_error([&] { parse_run_config(config_with(dir, checkpoint, nlohmann::json::object()), "qat.json", "."); },
                 {"qat.json", "'data.vocab' is unset", checkpoint, roberta.string()});
}

TEST(RunConfigTokenizer, DoLowerCaseFromTokenizerConfig) {
    TempDir dir;
    dir.write("cased/vocab.txt", kWordPieceVocab);
    dir.write("cased/tokenizer_config.json", R"({"do_lower_case": false, "model_max_length": 512})");
    const std::string cased = (dir.path() / "cased").string();
    const auto lower_case = [&](const nlohmann::json& data) {
        return parse_run_config(config_with(dir, cased, data), "run.json", ".").data.do_lower_case.value();
    };
    EXPECT_FALSE(lower_case(nlohmann::json::object()));
    EXPECT_TRUE(lower_case({{"do_lower_case", true}}));
    dir.write("cased/tokenizer_config.json", R"({"do_lower_case": "no"})");
    expect_error([&] { parse_run_config(config_with(dir, cased, nlohmann::json::object()), "run.json", "."); },
                 {"tokenizer_config.json", "do_lower_case"});
}

TEST(RunConfigTokenizer, ErrorsNameTheKeyAndTheFile) {
    TempDir dir;
    dir.write("weights_only/config.json", "{}");
    const std::string weights_only = (dir.path() / "weights_only").string();
    expect_error([&] { parse_run_config(config_with(dir, weights_only, nlohmann::json::object()), "run.json", "."); },
                 {"run.json", "'data.vocab'", "model.init", weights_only});
    const fs::path roberta = write_bpe_dir(dir, "roberta");
    fs::remove(roberta / "merges.txt");
    const std::string weights = dir.write("weights.h5", "");
    const std::string vocab_json = (roberta / "vocab.json").string();
    expect_error([&] { parse_run_config(config_with(dir, weights, {{"vocab", vocab_json}}), "run.json", "."); },
                 {"run.json", "'data.vocab'", (roberta / "merges.txt").string()});
    expect_error([&] { parse_run_config(config_with(dir, weights, {{"vocab", "nowhere.txt"}}), "run.json", "."); },
                 {"'data.vocab' names a missing file", "nowhere.txt"});
}

}  // namespace
}  // namespace qdq
