// A classification model's label order (nn/bert_config.h, trainers/classification_labels.h), as
// Hugging Face's run_glue.py takes it from a checkpoint's config.json. The reference is the same
// model unpermuted: model B is model A with its classifier's rows permuted (a 3-cycle, so that no
// class keeps its id and an inverted mapping differs from the right one) and a config.json written
// here as transformers writes one, whose id2label names the rows as permuted. Scored through the
// task, B must give A's accuracy exactly and A's predicted label names, on the eval set, the
// validation split and in predictions; without the id2label, or with names that are not the data
// set's, it must not. The gold labels are A's own predictions, so A scores 1 and a model read in
// the wrong order 0: no tolerance is needed but the eval loss's, whose terms B sums in another
// class order (1e-6 relative: a few float roundings of a loss near 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>

#include "autograd/tape.h"
#include "io/safetensors.h"
#include "json/json_file.h"
#include "nn/heads.h"
#include "nn/pretrained.h"
#include "stages/hf_export.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "trainers/checkpoint.h"
#include "trainers/distillation.h"
#include "trainers/resume.h"
#include "trainers/task.h"

namespace qdq {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::expect_error;
using testing::TempDir;

const std::vector<std::string> kNli = {"entailment", "neutral", "contradiction"};  // the data set's order
// Model B's class ids: entailment 2, neutral 0, contradiction 1, named in capitals as
// roberta-large-mnli names its own.
const std::vector<int> kModelId = {2, 0, 1};
const json kPermutedId2label = {{"0", "NEUTRAL"}, {"1", "CONTRADICTION"}, {"2", "ENTAILMENT"}};
const json kPermutedLabel2id = {{"NEUTRAL", 0}, {"CONTRADICTION", 1}, {"ENTAILMENT", 2}};
const char* const kWords[] = {"a",       "man",     "dog", "is",   "not", "sleeping",
                              "running", "outside", "the", "park", "cat", "eats"};

nn::BertConfig tiny_model_config() {
    nn::BertConfig c;
    c.vocab_size = 5 + (int)std::size(kWords);
    c.hidden_size = 16;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 2;
    c.intermediate_size = 32;
    c.max_position_embeddings = 32;
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0;  // training losses compared too
    c.initializer_range = 0.5f;  // logits far enough apart that predictions vary between examples
    c.num_labels = 3;
    return c;
}

std::string sentence(int seed, int length) {
    std::string s;
    for (int k = 0; k < length; ++k) {
        if (k) s += ' ';
        s += kWords[(size_t)(seed * 7 + k * 5 + k * k) % std::size(kWords)];
    }
    return s;
}

// A tab-separated row per pair; with `gold`, a gold_label column of those names.
std::string pairs_file(int count, const std::vector<std::string>& gold = {}) {
    std::string rows = gold.empty() ? "pairID\tsentence1\tsentence2\n" : "pairID\tsentence1\tsentence2\tgold_label\n";
    for (int i = 0; i < count; ++i) {
        rows += 'p';  // the id, "p<i>"
        rows += std::to_string(i) + "\t" + sentence(i, 3 + i % 5) + "\t" + sentence(i * 3 + 1, 2 + i % 4);
        if (!gold.empty()) rows += "\t" + gold[(size_t)i];
        rows += "\n";
    }
    return rows;
}

class ModelLabelOrder : public ::testing::Test {
protected:
    static constexpr int kPairs = 40;

    void SetUp() override {
        std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
        for (const char* word : kWords) vocab += std::string(word) + "\n";
        dir_.write("vocab.txt", vocab);
        dir_.write("inputs.tsv", pairs_file(kPairs));
        dir_.write("labelled.tsv", "");  // the run config's files must exist; A's predictions fill it below
        Rng init(11);
        nn::BertForSequenceClassification a(tiny_model_config(), init);
        nn::save_pretrained(a, tiny_model_config(), model_a());
        write_model_b(a.state_dict());
        // A's predictions are the gold labels: A scores 1, and a model read in another order 0.
        const json predicted = make(model_a(), false)->predict((dir_.path() / "inputs.tsv").string(), 8);
        for (const json& p : predicted) gold_.push_back(kNli.at(p.at("label").get<size_t>()));
        dir_.write("labelled.tsv", pairs_file(kPairs, gold_));
        ASSERT_GE(std::set<std::string>(gold_.begin(), gold_.end()).size(), 2u) << "A predicts one class for all";
    }

    std::string model_a() const { return (dir_.path() / "a").string(); }
    std::string model_b() const { return (dir_.path() / "b").string(); }

    // A's weights with the classifier's row for data set class d at kModelId[d], and config.json
    // as transformers writes a fine-tuned model's: id2label and label2id, no num_labels.
    void write_model_b(const NamedTensors& weights) const {
        NamedTensors permuted;
        for (const NamedTensor& t : weights) {
            Tensor copy = t.tensor.clone();
            if (t.name == "classifier.weight" || t.name == "classifier.bias") {
                const int64_t width = t.tensor.numel() / 3;
                for (size_t d = 0; d < 3; ++d)
                    std::copy_n(t.tensor.f32() + (int64_t)d * width, width, copy.f32() + kModelId[d] * width);
            }
            permuted.push_back({t.name, copy});
        }
        fs::create_directories(model_b());
        save_safetensors(model_b() + "/model.safetensors", permuted, {{"format", "pt"}});
        json config = nn::bert_config_to_json(tiny_model_config());
        config.erase("num_labels");
        config["id2label"] = kPermutedId2label;
        config["label2id"] = kPermutedLabel2id;
        write_json_file(model_b() + "/config.json", config);
    }

    // B's config.json with its label maps replaced by `id2label` (none when null).
    void rename_b_labels(const json& id2label) const {
        json config = read_json_file(model_b() + "/config.json");
        config.erase("label2id");
        config.erase("id2label");
        if (!id2label.is_null()) config["id2label"] = id2label;
        write_json_file(model_b() + "/config.json", config);
    }

    RunConfig run_config(const std::string& init, double validation_fraction = 0) const {
        json data = {{"dataset", "nli"},           {"data_dir", dir_.path().string()}, {"vocab", "vocab.txt"},
                     {"train_files", "labelled.tsv"}, {"eval_files", "labelled.tsv"},   {"max_seq_length", 32}};
        if (validation_fraction > 0) data["validation_fraction"] = validation_fraction;
        return parse_run_config({{"model", {{"init", init}}},
                                 {"data", data},
                                 {"training", {{"output_dir", (dir_.path() / "out").string()}, {"seed", 3}}}},
                                "run.json", ".");
    }

    std::unique_ptr<Task> make(const std::string& init, bool with_data, double validation_fraction = 0) const {
        return make_task(run_config(init, validation_fraction), {.train = with_data, .eval = with_data});
    }

    // The predicted names of predict()'s output, by the model's `names` for its class ids.
    static std::vector<std::string> predicted_names(const json& predictions, const std::vector<std::string>& names) {
        std::vector<std::string> out;
        for (const json& p : predictions) out.push_back(names.at(p.at("label").get<size_t>()));
        return out;
    }

    TempDir dir_;
    std::vector<std::string> gold_;  // A's predictions for inputs.tsv, in file order
};

TEST_F(ModelLabelOrder, APermutedCheckpointScoresAsTheUnpermutedOne) {
    const Metrics a = make(model_a(), true)->evaluate(8);
    ASSERT_EQ(a.scores.at("accuracy"), 1.0);
    ::testing::internal::CaptureStderr();
    std::unique_ptr<Task> b = make(model_b(), true);
    const std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find(model_b() + " sets the order of the labels (NEUTRAL 0, CONTRADICTION 1, ENTAILMENT 2)"),
              std::string::npos) << said;
    const Metrics scored = b->evaluate(8);
    EXPECT_EQ(scored.scores.at("accuracy"), 1.0);
    EXPECT_EQ(scored.counts.at("eval_examples"), kPairs);
    EXPECT_NEAR(scored.scores.at("eval_loss"), a.scores.at("eval_loss"), 1e-6 * a.scores.at("eval_loss"));

    // Predictions: B's class ids, named as A names its own.
    const json predicted = b->predict((dir_.path() / "inputs.tsv").string(), 8);
    const std::vector<std::string> model_names = {"neutral", "contradiction", "entailment"};
    EXPECT_EQ(predicted_names(predicted, model_names), gold_);
    for (size_t i = 0; i < predicted.size(); ++i) {
        EXPECT_EQ(predicted[i].at("label_name"), gold_[i]);
        const size_t d = (size_t)(std::find(kNli.begin(), kNli.end(), gold_[i]) - kNli.begin());
        EXPECT_EQ(predicted[i].at("label"), kModelId[d]);
    }
}

TEST_F(ModelLabelOrder, TrainingAndTheValidationSplitUseTheModelsIds) {
    std::unique_ptr<Task> a = make(model_a(), true, 0.25), b = make(model_b(), true, 0.25);
    EXPECT_EQ(b->evaluate(8).scores.at("accuracy"), 1.0);  // the validation set, out of labelled.tsv's training rows
    std::vector<int64_t> all(a->train_size());
    std::iota(all.begin(), all.end(), 0);
    Rng unused(0);
    const double loss_a = a->train_loss(all, unused).item(), loss_b = b->train_loss(all, unused).item();
    clear_tape();
    EXPECT_NEAR(loss_b, loss_a, 1e-6 * loss_a);
}

TEST_F(ModelLabelOrder, WithoutNamesOrWithOtherNamesTheDataSetsOrderIsKept) {
    rename_b_labels(nullptr);
    EXPECT_EQ(make(model_b(), true)->evaluate(8).scores.at("accuracy"), 0.0);
    EXPECT_EQ(make(model_b(), true, 0.25)->evaluate(8).scores.at("accuracy"), 0.0);
    // Hugging Face's default names are no names.
    rename_b_labels({{"0", "LABEL_0"}, {"1", "LABEL_1"}, {"2", "LABEL_2"}});
    EXPECT_EQ(make(model_b(), true)->evaluate(8).scores.at("accuracy"), 0.0);

    rename_b_labels({{"0", "maybe"}, {"1", "no"}, {"2", "yes"}});
    ::testing::internal::CaptureStderr();
    std::unique_ptr<Task> b = make(model_b(), true);
    const std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find("warning: " + model_b() +
                        " names the labels maybe 0, no 1, yes 2, which are not the data set's"),
              std::string::npos)
        << said;
    EXPECT_EQ(b->evaluate(8).scores.at("accuracy"), 0.0);
    EXPECT_EQ(b->model_config().label_names, kNli);
    const json predicted = b->predict((dir_.path() / "inputs.tsv").string(), 8);
    ASSERT_EQ(predicted.size(), gold_.size());
    for (size_t i = 0; i < predicted.size(); ++i) {
        EXPECT_EQ(predicted[i].at("label_name"), kNli.at(predicted[i].at("label").get<size_t>()));
        EXPECT_NE(predicted[i].at("label_name"), gold_[i]);
    }
}

// What the run keeps names the labels by the model's ids, with the data set's names: save-pretrained's
// config.json (read back by transformers, and here as a model.init that scores as A does) and model.h5.
TEST_F(ModelLabelOrder, SavedModelsNameTheLabelsInTheModelsOrder) {
    const std::string out = (dir_.path() / "hf").string();
    save_task_pretrained(run_config(model_b()), model_b(), out);
    const json config = read_json_file(out + "/config.json");
    EXPECT_EQ(config.at("id2label"), json({{"0", "neutral"}, {"1", "contradiction"}, {"2", "entailment"}}));
    EXPECT_EQ(config.at("label2id"), json({{"neutral", 0}, {"contradiction", 1}, {"entailment", 2}}));
    EXPECT_EQ(make(out, true)->evaluate(8).scores.at("accuracy"), 1.0);

    save_task_pretrained(run_config(model_a()), model_a(), out);
    EXPECT_EQ(read_json_file(out + "/config.json").at("id2label"),
              json({{"0", "entailment"}, {"1", "neutral"}, {"2", "contradiction"}}));

    std::unique_ptr<Task> b = make(model_b(), false);
    nn::save_hdf5(b->model(), b->model_config(), out + "/model.h5");
    EXPECT_EQ(nn::load_pretrained_config(out + "/model.h5").label_names,
              std::vector<std::string>({"neutral", "contradiction", "entailment"}));
}

// A run saved before labels were named resumes under a config naming the data set's order, but not
// under one that orders them otherwise: its model was trained in the data set's order.
TEST_F(ModelLabelOrder, ANamelessSavedConfigIsTheDataSetsOrder) {
    const RunConfig in_order = saved_run_config(run_config(model_a()), *make(model_a(), false));
    ASSERT_EQ(in_order.model.config->label_names, kNli);
    RunConfig nameless = in_order;
    nameless.model.config->label_names.clear();
    check_resumable(nameless, in_order, "checkpoint-4.h5");
    const RunConfig permuted = saved_run_config(run_config(model_b()), *make(model_b(), false));
    expect_error([&] { check_resumable(nameless, permuted, "checkpoint-4.h5"); }, {"checkpoint-4.h5", "id2label"});
}

TEST_F(ModelLabelOrder, ATeacherOrderingTheLabelsOtherwiseIsRefused) {
    RunConfig config = run_config(model_a());
    config.distillation = DistillationSettings{};
    config.distillation->teacher = model_b();
    const nn::BertConfig student = make(model_a(), false)->model_config();
    expect_error([&] { teacher_model_config(config, student); },
                 {"run.json", "distillation.teacher", model_b(), "orders the labels otherwise"});
    config.distillation->teacher = model_a();
    EXPECT_EQ(teacher_model_config(config, student).label_names, kNli);
}

// eval, predict, export and save-pretrained --checkpoint under a config whose model orders the
// labels otherwise (A's, the data set's): the checkpoint is read in its own order, as
// from_pretrained reads a checkpoint's id2label.
TEST_F(ModelLabelOrder, ACheckpointIsReadInItsOwnLabelOrder) {
    const std::string checkpoint = (dir_.path() / "b.h5").string();
    {
        std::unique_ptr<Task> b = make(model_b(), false);
        nn::save_hdf5(b->model(), b->model_config(), checkpoint);
    }
    const RunConfig config = run_config(model_a());
    const auto load_b = [&](nn::Module& model) { load_model_weights(model, checkpoint); };
    const RunConfig for_b = config_for_checkpoint(config, checkpoint);
    EXPECT_EQ(for_b.model.init, checkpoint);
    EXPECT_EQ(make_task(for_b, {.train = false}, load_b)->evaluate(8).scores.at("accuracy"), 1.0);
    // Read in the config's order, B's classes are scored as others: A's predictions are never B's.
    EXPECT_EQ(make_task(config, {.train = false}, load_b)->evaluate(8).scores.at("accuracy"), 0.0);

    const std::string out = (dir_.path() / "hf").string();
    save_task_pretrained(config, checkpoint, out);
    EXPECT_EQ(read_json_file(out + "/config.json").at("id2label"),
              json({{"0", "neutral"}, {"1", "contradiction"}, {"2", "entailment"}}));
    // A checkpoint in the config's own order leaves the config as it is.
    EXPECT_EQ(config_for_checkpoint(config, model_a()).model.init, config.model.init);
}

// config.json's label maps: names by id, HF's default names as none, and each error naming the
// file and the key.
TEST(LabelNames, Id2labelAndLabel2idNameTheClassesById) {
    using nn::bert_config_from_json;
    const std::vector<std::string> permuted = {"NEUTRAL", "CONTRADICTION", "ENTAILMENT"};
    EXPECT_EQ(bert_config_from_json({{"id2label", kPermutedId2label}}, "config.json").label_names, permuted);
    EXPECT_EQ(bert_config_from_json({{"label2id", kPermutedLabel2id}}, "config.json").label_names, permuted);
    const nn::BertConfig both =
        bert_config_from_json({{"id2label", kPermutedId2label}, {"label2id", kPermutedLabel2id}, {"num_labels", 3}},
                              "c");
    EXPECT_EQ(both.label_names, permuted);
    EXPECT_EQ(both.num_labels, 3);
    const json hf_defaults = {{"0", "LABEL_0"}, {"1", "LABEL_1"}, {"2", "LABEL_2"}};
    const nn::BertConfig defaults = bert_config_from_json({{"id2label", hf_defaults}}, "c");
    EXPECT_TRUE(defaults.label_names.empty());
    EXPECT_EQ(defaults.num_labels, 3);
    // Written as transformers writes them, and read back.
    const json written = nn::bert_config_to_json(both);
    EXPECT_EQ(written.at("id2label"), kPermutedId2label);
    EXPECT_EQ(written.at("label2id"), kPermutedLabel2id);
    EXPECT_EQ(bert_config_from_json(written, "c").label_names, permuted);
    EXPECT_FALSE(nn::bert_config_to_json(defaults).contains("id2label"));
}

TEST(LabelNames, BadMapsAreRefusedNamingTheFileAndKey) {
    const auto refused = [](const json& j, const std::string& key, const std::string& what) {
        expect_error([&] { nn::bert_config_from_json(j, "config.json", "model.config"); },
                     {"config.json", "'model.config." + key + "'", what});
    };
    refused({{"id2label", {"a", "b"}}}, "id2label", "must be an object");
    refused({{"id2label", {{"0", "a"}, {"2", "b"}}}}, "id2label", "ids must be 0..1, each once");
    refused({{"id2label", {{"0", "a"}, {"01", "b"}}}}, "id2label", "\"01\"");
    refused({{"id2label", {{"0", "a"}, {"one", "b"}}}}, "id2label", "\"one\"");
    refused({{"id2label", {{"0", "a"}, {"1", 2}}}}, "id2label", "not a string");
    refused({{"id2label", {{"0", "a"}, {"1", "a"}}}}, "id2label", "names two labels 'a'");
    refused({{"id2label", {{"0", "a"}, {"1", "b"}}}, {"num_labels", 3}}, "id2label", "num_labels is 3");
    refused({{"label2id", {{"a", 0}, {"b", 0}}}}, "label2id", "ids must be 0..1");
    refused({{"label2id", {{"a", 0}, {"b", "1"}}}}, "label2id", "'b'");
    refused({{"label2id", {{"a", 0}, {"b", 2}}}}, "label2id", "ids must be 0..1");
    refused({{"id2label", {{"0", "a"}, {"1", "b"}}}, {"label2id", {{"a", 1}, {"b", 0}}}}, "label2id", "id2label");
    refused({{"id2label", {{"0", "a"}, {"1", "b"}}}, {"label2id", {{"a", 0}}}}, "label2id", "id2label");
}

}  // namespace
}  // namespace qdq
