// SQuAD v1.1 extractive QA as Hugging Face's run_qa.py runs it: BertForQuestionAnswering over
// "[CLS] question [SEP] context [SEP]" windows (data/squad_features.h, unpadded: batches pad to
// their longest window), the mean of the start and end cross-entropies, and the official v1.1
// exact match and F1 (data/metrics.h) of run_qa.py's postprocessed answers
// (data/squad_postprocess.h), counted over questions, not windows. With a distillation section
// the training loss adds the teacher's on both logits (trainers/distillation.h).
//
// The evaluation set is data.eval_files, or with data.squad_eval_fraction > 0 the articles that
// split_squad_by_article sets aside from data.train_files (eval_files must then be empty: two
// sources for one evaluation set would leave a reader of the config guessing which was used).
// max_train_examples and max_eval_examples count questions (example_subset's, so not all from
// the file's first articles) and apply after the split. A validation split (data.validation_fraction)
// sets aside articles of the training part in the same way; max_eval_examples applies to it too.
#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "autograd/tape.h"
#include "data/loader.h"
#include "data/metrics.h"
#include "data/parallel_examples.h"
#include "data/squad_features.h"
#include "data/squad_postprocess.h"
#include "data/squad_reader.h"
#include "nn/heads.h"
#include "trainers/checkpoint.h"
#include "trainers/distillation.h"
#include "trainers/task.h"

namespace qdq {

namespace {

// Questions of one or more files, and the file each came from (errors found later, when the
// question is windowed, name it).
struct SquadFiles {
    std::vector<SquadExample> examples;
    std::unordered_map<std::string, std::string> file_of;  // question id → path
};

SquadFiles read_files(const std::vector<std::string>& files) {
    SquadFiles out;
    for (const std::string& file : files) {
        SquadData data = read_squad(file);
        for (SquadExample& e : data.examples) {
            // A v2 question without an answer would train towards [CLS] and score 0 whatever is
            // predicted: the v1.1 task cannot do it justice, so it refuses rather than mislead.
            if (e.is_impossible)
                throw std::runtime_error(file + ": question " + e.id +
                                         " is unanswerable (SQuAD v2); this task is SQuAD v1.1");
            out.file_of.emplace(e.id, file);
            out.examples.push_back(std::move(e));
        }
    }
    return out;
}

struct Features {
    std::vector<SquadExample> examples;  // the questions
    std::vector<SquadWindow> windows;    // model inputs, each naming its question
    std::vector<int32_t> lengths;        // tokens of each window
};

// The windows of example_subset's `limit` questions (-1: all).
Features make_features(const RunConfig& config, const Tokenizer& tokenizer,
                       std::vector<SquadExample> all, int64_t limit, const SquadFiles& files) {
    std::vector<SquadExample> examples;
    for (size_t i : example_subset(all.size(), limit)) examples.push_back(std::move(all[i]));
    SquadFeatureOptions options;
    options.max_seq_length = config.data.max_seq_length;
    options.doc_stride = config.data.doc_stride;
    options.pad_to_max_length = false;
    Features out;
    out.windows = features_in_parallel<SquadWindow>((int64_t)examples.size(), [&](int64_t i, std::vector<SquadWindow>& windows) {
        try {
            append_squad_windows(tokenizer, examples[(size_t)i], (int32_t)i, options, windows);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(files.file_of.at(examples[(size_t)i].id) + ": " + e.what() + " (" + config.source +
                                     ": data.max_seq_length " + std::to_string(options.max_seq_length) +
                                     ", data.doc_stride " + std::to_string(options.doc_stride) + ")");
        }
    });
    for (const SquadWindow& w : out.windows) out.lengths.push_back((int32_t)w.encoding.ids.size());
    out.examples = std::move(examples);
    return out;
}

// collate() takes Encodings: a batch's windows are copied into one (without the offsets, which
// only postprocessing reads), a cost that vanishes next to the forward pass.
Batch collate_windows(const std::vector<SquadWindow>& windows, const std::vector<int64_t>& indices,
                      int32_t pad_id) {
    std::vector<Encoding> batch;
    batch.reserve(indices.size());
    for (int64_t i : indices) {
        const Encoding& e = windows.at((size_t)i).encoding;
        batch.push_back({e.ids, e.token_type_ids, e.attention_mask, {}, {}});
    }
    std::vector<int64_t> rows(indices.size());
    std::iota(rows.begin(), rows.end(), 0);
    PaddingOptions padding;
    padding.pad_id = pad_id;
    return collate(batch, {}, rows, padding);
}

class SquadTask : public Task {
public:
    SquadTask(const RunConfig& config, const TaskData& data)
        : config_(config),
          model_config_(task_model_config(config)),
          init_rng_(config.training.seed),
          model_(model_config_, init_rng_),
          tokenizer_(task_tokenizer(config, model_config_)) {
        init_task_model(model_, model_.bert, config, data);
        if (data.train && config.distillation) teacher_ = make_teacher<nn::BertForQuestionAnswering>(config, model_config_);
        const DataSettings& d = config.data;
        const bool split = d.squad_eval_fraction > 0, validation = d.validation_fraction > 0;
        if (split && !d.eval_files.empty())
            throw ConfigError(config.source +
                              ": data.squad_eval_fraction > 0 takes the evaluation set from "
                              "data.train_files; data.eval_files must then be empty");
        const bool read_train = data.train || (data.eval && (split || validation));
        if (read_train && d.train_files.empty()) throw ConfigError(config.source + ": data.train_files is empty");
        if (data.eval && !split && d.eval_files.empty())
            throw ConfigError(config.source + ": data.eval_files is empty");

        SquadFiles files;
        std::vector<SquadExample> test;
        if (read_train) {
            files = read_files(d.train_files);
            std::vector<SquadExample> training = std::move(files.examples);
            if (split) {
                SquadSplit parts = split_squad_by_article(training, d.squad_eval_fraction, d.squad_split_seed);
                check_part(parts.train, data.train, "training");
                check_part(parts.eval, data.eval, "evaluation");
                training = std::move(parts.train);
                test = std::move(parts.eval);
            }
            if (validation) {
                SquadSplit parts = split_squad_by_article(training, d.validation_fraction, d.validation_seed);
                if (parts.train.empty() || parts.eval.empty())
                    throw ConfigError(config.source + ": data.validation_fraction " +
                                      std::to_string(d.validation_fraction) + " leaves no article for " +
                                      (parts.eval.empty() ? "validation" : "training"));
                training = std::move(parts.train);
                if (data.eval) hold_validation(config, std::move(parts.eval), files);
            }
            if (data.train) train_ = make_features(config, tokenizer_, std::move(training), d.max_train_examples, files);
        }
        if (data.eval) {
            if (!split) {
                files = read_files(d.eval_files);
                test = std::move(files.examples);
            }
            evals_.active = make_features(config, tokenizer_, std::move(test), d.max_eval_examples, files);
            evals_.has_validation = validation;
            if (validation) evals_.select(EvalSplit::Validation);
        }
    }

    nn::Module& model() override { return model_; }
    nn::BertModel& encoder() override { return model_.bert; }
    const nn::BertConfig& model_config() const override { return model_config_; }
    Rng& dropout_rng() override { return model_.dropout_rng; }
    int64_t train_size() const override { return (int64_t)train_.windows.size(); }
    std::vector<int32_t> train_lengths() const override { return train_.lengths; }

    Tensor train_loss(const std::vector<int64_t>& indices, Rng&) override {
        Batch batch = collate_windows(train_.windows, indices, tokenizer_.special.pad_id);
        std::vector<int32_t> starts, ends;
        for (int64_t i : indices) {
            starts.push_back(train_.windows[(size_t)i].start_position);
            ends.push_back(train_.windows[(size_t)i].end_position);
        }
        const Shape rows = {(int64_t)indices.size()};
        const nn::BertInputs in = inputs_of(batch);
        const nn::SpanLogits logits = model_.forward(in);
        const Tensor loss = nn::BertForQuestionAnswering::loss(logits, from_ints(rows, starts), from_ints(rows, ends));
        if (!teacher_) return loss;
        const nn::SpanLogits teacher_logits = teacher_forward(*teacher_, in);
        return distillation_loss(*config_.distillation, loss, {logits.start, logits.end},
                                 {teacher_logits.start, teacher_logits.end});
    }

    Metrics evaluate(int64_t batch_size) override {
        return score(eval_outputs(eval_inputs(batch_size)), batch_size);
    }

    std::vector<nn::BertInputs> eval_inputs(int64_t batch_size) override { return input_batches(evals_.active, batch_size); }

    Metrics score(const std::vector<NamedOutputs>& outputs, int64_t batch_size) override {
        const std::vector<SquadPrediction> predicted = answers(evals_.active, batch_size, outputs);
        std::unordered_map<std::string, std::string> by_id;
        for (size_t i = 0; i < predicted.size(); ++i) by_id[evals_.active.examples[i].id] = predicted[i].text;
        const SquadEvaluation e = squad_v1_evaluate(evals_.active.examples, by_id);
        return {.task = TaskKind::squad,
                .scores = {{"exact_match", e.score.exact_match}, {"f1", e.score.f1}},
                .counts = {{"eval_examples", e.total}, {"eval_windows", (int64_t)evals_.active.windows.size()}}};
    }

    std::string main_metric() const override { return "f1"; }
    void select_eval_set(EvalSplit set) override { evals_.select(set); }

    nlohmann::json predict(const std::string& path, int64_t batch_size) override {
        SquadFiles files = read_files({path});
        const Features data = make_features(config_, tokenizer_, std::move(files.examples), -1, files);
        const std::vector<SquadPrediction> predicted =
            answers(data, batch_size, eval_outputs(input_batches(data, batch_size)));
        nlohmann::json out = nlohmann::json::object();
        for (size_t i = 0; i < predicted.size(); ++i) out[data.examples[i].id] = predicted[i].text;
        return out;
    }

    std::vector<NamedOutputs> eval_outputs(const std::vector<nn::BertInputs>& batches) override {
        return run_eval_model(model_, batches, [&](const nn::BertInputs& in) {
            const nn::SpanLogits logits = model_.forward(in);
            return NamedOutputs{{"start_logits", logits.start}, {"end_logits", logits.end}};
        });
    }

private:
    // The validation articles as EvalSplit::Validation, and in halves by article for the budget.
    void hold_validation(const RunConfig& config, std::vector<SquadExample> validation, const SquadFiles& files) {
        const DataSettings& d = config.data;
        SquadSplit halves = split_squad_by_article(validation, 0.5, ~d.validation_seed);
        evals_.has_halves = !halves.train.empty() && !halves.eval.empty();
        const auto features = [&](std::vector<SquadExample> examples) {
            return make_features(config, tokenizer_, std::move(examples), d.max_eval_examples, files);
        };
        evals_.held[(size_t)EvalSplit::ValidationRanking] = features(std::move(halves.eval));
        evals_.held[(size_t)EvalSplit::ValidationChecking] = features(std::move(halves.train));
        evals_.held[(size_t)EvalSplit::Validation] = features(std::move(validation));
    }

    void check_part(const std::vector<SquadExample>& part, bool needed, const char* what) const {
        if (needed && part.empty())
            throw ConfigError(config_.source + ": data.squad_eval_fraction " +
                              std::to_string(config_.data.squad_eval_fraction) +
                              " leaves no article of data.train_files for " + what);
    }

    static nn::BertInputs inputs_of(const Batch& batch) {
        return {batch.input_ids, batch.token_type_ids, batch.attention_mask};
    }

    std::vector<nn::BertInputs> input_batches(const Features& data, int64_t batch_size) const {
        std::vector<nn::BertInputs> out;
        for (const std::vector<int64_t>& indices : eval_batches(data.lengths, batch_size))
            out.push_back(inputs_of(collate_windows(data.windows, indices, tokenizer_.special.pad_id)));
        return out;
    }

    // One answer per question of `data`, in question order, from the outputs for
    // input_batches(data, batch_size).
    std::vector<SquadPrediction> answers(const Features& data, int64_t batch_size,
                                         const std::vector<NamedOutputs>& outputs) const {
        const std::vector<std::vector<int64_t>> batches = eval_batches(data.lengths, batch_size);
        check_outputs(outputs, batches, {"start_logits", "end_logits"});
        const int64_t T = config_.data.max_seq_length;
        // squad_predictions takes each row's n_best_size highest logits over all T positions
        // before it drops those outside the context, so a position past the window's end must
        // rank below every real one, or it takes a candidate's place: -inf, where 0 (or the
        // -100 and the batch's padding logits of run_qa.py) can crowd out a window's answer
        // when its logits are low, and make the answer depend on the batch it was run in.
        std::vector<float> start(data.windows.size() * (size_t)T, -std::numeric_limits<float>::infinity());
        std::vector<float> end(start);
        for (size_t b = 0; b < batches.size(); ++b) {
            const Tensor& start_logits = outputs[b].at("start_logits");
            const Tensor& end_logits = outputs[b].at("end_logits");
            const int64_t width = start_logits.size(1);  // the batch's longest window
            for (size_t r = 0; r < batches[b].size(); ++r) {
                const size_t w = (size_t)batches[b][r], length = (size_t)data.lengths[w];
                if ((int64_t)length > width || end_logits.size(1) != width)
                    throw std::invalid_argument("score: batch " + std::to_string(b) + "'s logits are " +
                                                std::to_string(width) + " wide, short of its windows");
                std::copy_n(start_logits.f32() + (int64_t)r * width, length, start.begin() + w * (size_t)T);
                std::copy_n(end_logits.f32() + (int64_t)r * width, length, end.begin() + w * (size_t)T);
            }
        }
        return squad_predictions(data.examples, data.windows, start, end, T);
    }

    RunConfig config_;
    nn::BertConfig model_config_;
    Rng init_rng_;
    nn::BertForQuestionAnswering model_;
    std::unique_ptr<nn::BertForQuestionAnswering> teacher_;  // with a distillation section, for training
    Tokenizer tokenizer_;
    Features train_;
    EvalSets<Features> evals_;
};

}  // namespace

std::unique_ptr<Task> make_squad_task(const RunConfig& config, const TaskData& data) {
    return std::make_unique<SquadTask>(config, data);
}

}  // namespace qdq
