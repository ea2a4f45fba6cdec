// Sequence classification (IMDB, MNLI/SNLI, SICK, RTE, SST-2): BertForSequenceClassification
// over "[CLS] a [SEP] (b [SEP])", cross-entropy loss, accuracy. The number of labels comes from
// the data set preset, as run_glue.py takes it from the data set, whatever config.json says.
#include <algorithm>
#include <cmath>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "data/classification_features.h"
#include "data/imdb_reader.h"
#include "data/loader.h"
#include "data/metrics.h"
#include "nn/heads.h"
#include "trainers/checkpoint.h"
#include "trainers/task.h"

namespace qdq {

namespace {

ClassificationOptions preset_options(const std::string& dataset) {
    if (dataset == "nli") return nli_options();
    if (dataset == "headerless_nli") return headerless_nli_options();
    if (dataset == "sick") return sick_options();
    if (dataset == "rte") return rte_options();
    if (dataset == "sst2") return sst2_options();
    if (dataset == "imdb") return imdb_jsonl_options();
    throw std::runtime_error("data.dataset: unknown classification preset '" + dataset + "'");
}

ClassificationData read_examples(const std::string& dataset, const std::string& path, bool labelled) {
    if (dataset == "imdb") return read_imdb(path, labelled);
    ClassificationOptions options = preset_options(dataset);
    options.labelled = labelled;
    return read_classification(path, options);
}

struct Examples {
    std::vector<TextExample> examples;
    std::vector<Encoding> encodings;
    std::vector<int32_t> labels, lengths;
};

Examples read_files(const RunConfig& config, const std::vector<std::string>& files, int64_t limit,
                    const WordPieceTokenizer& tokenizer, bool labelled) {
    std::vector<TextExample> all;
    for (const std::string& file : files) {
        ClassificationData data = read_examples(config.data.dataset, file, labelled);
        for (TextExample& e : data.examples) all.push_back(std::move(e));
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

nn::BertInputs inputs_of(const Batch& batch) {
    return {batch.input_ids, batch.token_type_ids, batch.attention_mask};
}

class ClassificationTask : public Task {
public:
    ClassificationTask(const RunConfig& config, const TaskData& data)
        : config_(config),
          model_config_(with_labels(task_model_config(config), config.data.dataset)),
          init_rng_(config.training.seed),
          model_(model_config_, init_rng_),
          tokenizer_(task_tokenizer(config)) {
        init_task_model(model_, model_.bert, config);
        const DataSettings& d = config.data;
        if (data.train) {
            if (d.train_files.empty()) throw std::runtime_error(config.source + ": data.train_files is empty");
            train_ = read_files(config, d.train_files, d.max_train_examples, tokenizer_, true);
        }
        if (data.eval) {
            if (d.eval_files.empty()) throw std::runtime_error(config.source + ": data.eval_files is empty");
            eval_ = read_files(config, d.eval_files, d.max_eval_examples, tokenizer_, true);
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
        return nn::BertForSequenceClassification::loss(model_.forward(inputs_of(batch)), batch.labels);
    }

    nlohmann::json evaluate(int64_t batch_size) override {
        std::vector<int32_t> predicted;
        double loss_sum = 0;
        run_batches(eval_, batch_size, predicted, nullptr, &loss_sum);
        ClassificationMetrics m = classification_metrics(eval_.labels, predicted, model_config_.num_labels);
        return {{"accuracy", m.accuracy},
                {"eval_loss", eval_.labels.empty() ? 0.0 : loss_sum / (double)eval_.labels.size()},
                {"eval_examples", m.total}};
    }

    std::string main_metric() const override { return "accuracy"; }

    nlohmann::json predict(const std::string& path, int64_t batch_size) override {
        Examples data = read_files(config_, {path}, -1, tokenizer_, false);
        std::vector<int32_t> predicted;
        std::vector<std::vector<float>> probabilities;
        run_batches(data, batch_size, predicted, &probabilities, nullptr);
        nlohmann::json out = nlohmann::json::array();
        for (size_t i = 0; i < predicted.size(); ++i)
            out.push_back({{"id", data.examples[i].id}, {"label", predicted[i]}, {"probabilities", probabilities[i]}});
        return out;
    }

private:
    static nn::BertConfig with_labels(nn::BertConfig c, const std::string& dataset) {
        c.num_labels = (int)preset_options(dataset).label_names.size();
        return c;
    }

    PaddingOptions padding() const {
        PaddingOptions p;
        p.pad_id = tokenizer_.pad_id;
        return p;
    }

    // Argmax per example (in example order); softmax probabilities and the summed loss on request.
    void run_batches(const Examples& data, int64_t batch_size, std::vector<int32_t>& predicted,
                     std::vector<std::vector<float>>* probabilities, double* loss_sum) {
        const bool was_training = model_.is_training();
        model_.eval();
        NoGradGuard no_grad;
        const int64_t n = (int64_t)data.encodings.size(), labels = model_config_.num_labels;
        predicted.assign((size_t)n, 0);
        if (probabilities) probabilities->assign((size_t)n, {});
        for (const std::vector<int64_t>& indices : eval_batches(data.lengths, batch_size)) {
            Batch batch = collate(data.encodings, loss_sum ? data.labels : std::vector<int32_t>{}, indices, padding());
            Tensor logits = model_.forward(inputs_of(batch));
            if (loss_sum)
                *loss_sum += (double)nn::BertForSequenceClassification::loss(logits, batch.labels).item() *
                             (double)indices.size();
            const float* l = logits.f32();
            for (size_t r = 0; r < indices.size(); ++r) {
                const float* row = l + (int64_t)r * labels;
                predicted[(size_t)indices[r]] = (int32_t)(std::max_element(row, row + labels) - row);
                if (probabilities) {
                    const float top = *std::max_element(row, row + labels);
                    std::vector<float> p((size_t)labels);
                    float total = 0;
                    for (int64_t k = 0; k < labels; ++k) total += p[(size_t)k] = std::exp(row[k] - top);
                    for (float& v : p) v /= total;
                    (*probabilities)[(size_t)indices[r]] = std::move(p);
                }
            }
        }
        model_.train(was_training);
    }

    RunConfig config_;
    nn::BertConfig model_config_;
    Rng init_rng_;
    nn::BertForSequenceClassification model_;
    WordPieceTokenizer tokenizer_;
    Examples train_, eval_;
};

}  // namespace

std::unique_ptr<Task> make_classification_task(const RunConfig& config, const TaskData& data) {
    return std::make_unique<ClassificationTask>(config, data);
}

}  // namespace qdq
