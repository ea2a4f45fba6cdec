// Sequence classification (IMDB, MNLI/SNLI, SICK, RTE, SST-2): BertForSequenceClassification
// over "[CLS] a [SEP] (b [SEP])", cross-entropy loss, accuracy. The number of labels comes from
// the data set preset, as run_glue.py takes it from the data set, whatever config.json says.
// Their order is the model's when its config names the data set's labels in another order
// (trainers/classification_labels.h): every example's label, in training, evaluation and the
// validation split alike, is the model's class id, so that evaluate(), score() of ONNX Runtime's
// outputs and predict() all compare and report the model's ids; the line saying so is printed
// when the task is made. The task's model config (model_config(): what model.h5, checkpoints and
// save-pretrained keep) names the labels by those ids, with the data set's names.
// With a distillation section the training loss adds the teacher's (trainers/distillation.h).
#include <algorithm>
#include <cmath>
#include <iostream>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "data/classification_features.h"
#include "data/imdb_reader.h"
#include "data/loader.h"
#include "data/metrics.h"
#include "nn/heads.h"
#include "trainers/checkpoint.h"
#include "trainers/classification_labels.h"
#include "trainers/distillation.h"
#include "trainers/task.h"

namespace qdq {

namespace {

ClassificationData read_examples(ClassificationDataset dataset, const std::string& path, bool labelled) {
    if (dataset == ClassificationDataset::imdb) return read_imdb(path, labelled);
    ClassificationOptions options = dataset_preset(dataset);
    options.labelled = labelled;
    return read_classification(path, options);
}

struct Examples {
    std::vector<TextExample> examples;
    std::vector<Encoding> encodings;
    std::vector<int32_t> labels, lengths;
};

// The examples of `files`, their labels the model's class ids (`order`).
Examples read_files(const RunConfig& config, const std::vector<std::string>& files, int64_t limit,
                    const Tokenizer& tokenizer, bool labelled, const LabelOrder& order) {
    std::vector<TextExample> all;
    for (const std::string& file : files) {
        ClassificationData data = read_examples(config.data.dataset, file, labelled);
        for (TextExample& e : data.examples) {
            if (e.label >= 0 && !order.model_ids.empty()) e.label = order.model_ids[(size_t)e.label];
            all.push_back(std::move(e));
        }
    }
    Examples out;
    for (size_t i : example_subset(all.size(), limit)) out.examples.push_back(std::move(all[i]));
    out.encodings = classification_encodings(tokenizer, out.examples, config.data.max_seq_length);
    for (size_t i = 0; i < out.examples.size(); ++i) {
        out.labels.push_back(out.examples[i].label);
        out.lengths.push_back((int32_t)out.encodings[i].ids.size());
    }
    return out;
}

// The examples at `indices` of `all`, in that order.
Examples take(const Examples& all, const std::vector<size_t>& indices) {
    Examples out;
    for (size_t i : indices) {
        out.examples.push_back(all.examples[i]);
        out.encodings.push_back(all.encodings[i]);
        out.labels.push_back(all.labels[i]);
        out.lengths.push_back(all.lengths[i]);
    }
    return out;
}

nn::BertInputs inputs_of(const Batch& batch) {
    return {batch.input_ids, batch.token_type_ids, batch.attention_mask};
}

// Whose config the model's label names come from, for the message about them.
std::string model_config_source(const RunConfig& config) {
    return config.model.config ? config.source + " (model.config)" : config.model.init;
}

class ClassificationTask : public Task {
public:
    ClassificationTask(const RunConfig& config, const TaskData& data)
        : ClassificationTask(config, data, task_model_config(config)) {}

    ClassificationTask(const RunConfig& config, const TaskData& data, const nn::BertConfig& given)
        : config_(config),
          labels_(label_order(given.label_names, dataset_preset(config.data.dataset).label_names,
                              model_config_source(config))),
          model_config_(with_labels(given, labels_)),
          init_rng_(config.training.seed),
          model_(model_config_, init_rng_),
          tokenizer_(task_tokenizer(config, model_config_)) {
        std::cerr << labels_.message;  // one write: under mpirun a line in pieces may be split
        init_task_model(model_, model_.bert, config, data);
        const DataSettings& d = config.data;
        const bool split = d.validation_fraction > 0;
        if (data.train || (data.eval && split)) {
            if (d.train_files.empty()) throw ConfigError(config.source + ": data.train_files is empty");
            Examples all = read_files(config, d.train_files, d.max_train_examples, tokenizer_, true, labels_);
            if (split) {
                const SplitIndices parts = validation_split(all.examples.size(), d.validation_fraction, d.validation_seed);
                const ValidationHalves halves = validation_halves(parts.validation, d.validation_seed);
                evals_.held[(size_t)EvalSplit::Validation] = take(all, parts.validation);
                evals_.held[(size_t)EvalSplit::ValidationRanking] = take(all, halves.ranking);
                evals_.held[(size_t)EvalSplit::ValidationChecking] = take(all, halves.checking);
                evals_.has_halves = !halves.ranking.empty();
                train_ = take(all, parts.train);
            } else {
                train_ = std::move(all);
            }
            if (data.train && config.distillation)
                teacher_ = make_teacher<nn::BertForSequenceClassification>(config, model_config_);
        }
        if (data.eval) {
            if (d.eval_files.empty()) throw ConfigError(config.source + ": data.eval_files is empty");
            evals_.active = read_files(config, d.eval_files, d.max_eval_examples, tokenizer_, true, labels_);
            evals_.has_validation = split;
            if (split) evals_.select(EvalSplit::Validation);
        }
    }

    nn::Module& model() override { return model_; }
    nn::BertModel& encoder() override { return model_.bert; }
    const nn::BertConfig& model_config() const override { return model_config_; }
    Rng& dropout_rng() override { return model_.dropout_rng; }
    int64_t train_size() const override { return (int64_t)train_.encodings.size(); }
    std::vector<int32_t> train_lengths() const override { return train_.lengths; }

    Tensor train_loss(const std::vector<int64_t>& indices, Rng&) override {
        Batch batch = collate(train_.encodings, train_.labels, indices, padding());
        const nn::BertInputs in = inputs_of(batch);
        const Tensor logits = model_.forward(in);
        const Tensor loss = nn::BertForSequenceClassification::loss(logits, batch.labels, label_smoothing());
        if (!teacher_) return loss;
        return distillation_loss(*config_.distillation, loss, {logits}, {teacher_forward(*teacher_, in)});
    }

    Metrics evaluate(int64_t batch_size) override {
        return score(eval_outputs(eval_inputs(batch_size)), batch_size);
    }

    std::vector<nn::BertInputs> eval_inputs(int64_t batch_size) override { return input_batches(evals_.active, batch_size); }

    Metrics score(const std::vector<NamedOutputs>& outputs, int64_t batch_size) override {
        const std::vector<std::vector<int64_t>> batches = eval_batches(evals_.active.lengths, batch_size);
        check_outputs(outputs, batches, {"logits"});
        NoGradGuard no_grad;
        std::vector<int32_t> predicted(evals_.active.labels.size());
        double loss_sum = 0;
        for (size_t b = 0; b < batches.size(); ++b) {
            const Tensor& logits = outputs[b].at("logits");
            std::vector<int32_t> labels;
            for (int64_t i : batches[b]) labels.push_back(evals_.active.labels[(size_t)i]);
            const Tensor loss =
                nn::BertForSequenceClassification::loss(logits, from_ints({(int64_t)labels.size()}, labels), label_smoothing());
            loss_sum += (double)loss.item() * (double)labels.size();
            for (size_t r = 0; r < batches[b].size(); ++r) predicted[(size_t)batches[b][r]] = argmax_row(logits, r);
        }
        ClassificationMetrics m = classification_metrics(evals_.active.labels, predicted, model_config_.num_labels);
        const size_t n = evals_.active.labels.size();
        return {.task = TaskKind::classification,
                .scores = {{"accuracy", m.accuracy}, {"eval_loss", n == 0 ? 0.0 : loss_sum / (double)n}},
                .counts = {{"eval_examples", m.total}}};
    }

    std::string main_metric() const override { return "accuracy"; }
    void select_eval_set(EvalSplit set) override { evals_.select(set); }

    nlohmann::json predict(const std::string& path, int64_t batch_size) override {
        Examples data = read_files(config_, {path}, -1, tokenizer_, false, labels_);
        const std::vector<std::vector<int64_t>> batches = eval_batches(data.lengths, batch_size);
        const std::vector<NamedOutputs> outputs = eval_outputs(input_batches(data, batch_size));
        nlohmann::json out = nlohmann::json::array();
        std::vector<int32_t> predicted(data.examples.size());
        std::vector<std::vector<float>> probabilities(data.examples.size());
        for (size_t b = 0; b < batches.size(); ++b)
            for (size_t r = 0; r < batches[b].size(); ++r) {
                const Tensor& logits = outputs[b].at("logits");
                predicted[(size_t)batches[b][r]] = argmax_row(logits, r);
                probabilities[(size_t)batches[b][r]] = softmax_row(logits, r);
            }
        // "label" is the model's class id, the index into "probabilities"; "label_name" says which it is.
        for (size_t i = 0; i < predicted.size(); ++i)
            out.push_back({{"id", data.examples[i].id},
                           {"label", predicted[i]},
                           {"label_name", labels_.names[(size_t)predicted[i]]},
                           {"probabilities", probabilities[i]}});
        return out;
    }

    std::vector<NamedOutputs> eval_outputs(const std::vector<nn::BertInputs>& batches) override {
        return run_eval_model(model_, batches, [&](const nn::BertInputs& in) {
            return NamedOutputs{{"logits", model_.forward(in)}};
        });
    }

private:
    static nn::BertConfig with_labels(nn::BertConfig c, const LabelOrder& labels) {
        c.num_labels = (int)labels.names.size();
        c.label_names = labels.names;
        return c;
    }

    // HF's label_smoothing_factor, in the training loss and the evaluation loss alike (its
    // Trainer smooths compute_loss, which prediction_step calls too).
    float label_smoothing() const { return (float)config_.training.label_smoothing_factor; }

    PaddingOptions padding() const {
        PaddingOptions p;
        p.pad_id = tokenizer_.special.pad_id;
        return p;
    }

    std::vector<nn::BertInputs> input_batches(const Examples& data, int64_t batch_size) const {
        std::vector<nn::BertInputs> out;
        for (const std::vector<int64_t>& indices : eval_batches(data.lengths, batch_size))
            out.push_back(inputs_of(collate(data.encodings, {}, indices, padding())));
        return out;
    }

    static int32_t argmax_row(const Tensor& logits, size_t r) {
        const int64_t labels = logits.size(1);
        const float* row = logits.f32() + (int64_t)r * labels;
        return (int32_t)(std::max_element(row, row + labels) - row);
    }

    static std::vector<float> softmax_row(const Tensor& logits, size_t r) {
        const int64_t labels = logits.size(1);
        const float* row = logits.f32() + (int64_t)r * labels;
        const float top = *std::max_element(row, row + labels);
        std::vector<float> p((size_t)labels);
        float total = 0;
        for (int64_t k = 0; k < labels; ++k) total += p[(size_t)k] = std::exp(row[k] - top);
        for (float& v : p) v /= total;
        return p;
    }

    RunConfig config_;
    LabelOrder labels_;
    nn::BertConfig model_config_;
    Rng init_rng_;
    nn::BertForSequenceClassification model_;
    std::unique_ptr<nn::BertForSequenceClassification> teacher_;  // with a distillation section, for training
    Tokenizer tokenizer_;
    Examples train_;
    EvalSets<Examples> evals_;
};

}  // namespace

std::unique_ptr<Task> make_classification_task(const RunConfig& config, const TaskData& data) {
    return std::make_unique<ClassificationTask>(config, data);
}

}  // namespace qdq
