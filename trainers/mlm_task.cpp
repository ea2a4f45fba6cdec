// Masked-LM pretraining: BertForMaskedLM over corpus text packed into full-length sequences
// (data/text_corpus.h), masked as Hugging Face's DataCollatorForLanguageModeling does
// (data/mlm_masking.h), with the head run at the masked positions only
// (BertForMaskedLM::forward_masked).
#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>

#include "autograd/tape.h"
#include "data/loader.h"
#include "data/mlm_masking.h"
#include "data/text_corpus.h"
#include "nn/heads.h"
#include "parallel/communicator.h"
#include "trainers/checkpoint.h"
#include "trainers/progress_bar.h"
#include "trainers/task.h"

namespace qdq {

namespace {

std::vector<int32_t> lengths_of(const PackedSequences& packed) {
    std::vector<int32_t> lengths((size_t)sequence_count(packed));
    for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = sequence_length(packed, (int64_t)i);
    return lengths;
}

class MlmTask : public Task {
public:
    MlmTask(const RunConfig& config, const TaskData& data)
        : config_(config),
          model_config_(task_model_config(config)),
          init_rng_(config.training.seed),
          model_(model_config_, init_rng_),
          tokenizer_(task_tokenizer(config, model_config_)),
          masking_(mlm_masking(tokenizer_, config.data.mlm_probability)) {
        init_task_model(model_, model_.bert, config, data);
        const DataSettings& d = config.data;
        if (data.train) train_ = read_sequences("train_files", d.train_files, d.max_train_examples);
        if (data.eval && d.eval_sets.empty())
            eval_.push_back({"", read_sequences("eval_files", d.eval_files, d.max_eval_examples)});
        if (data.eval)
            for (const EvalSet& set : d.eval_sets)
                eval_.push_back({set.name, read_sequences("eval_files." + set.name, set.files, d.max_eval_examples)});
    }

    nn::Module& model() override { return model_; }
    nn::BertModel& encoder() override { return model_.bert; }
    const nn::BertConfig& model_config() const override { return model_config_; }
    Rng& dropout_rng() override { return model_.dropout_rng; }
    int64_t train_size() const override { return sequence_count(train_); }
    std::vector<int32_t> train_lengths() const override { return lengths_of(train_); }

    Tensor train_loss(const std::vector<int64_t>& indices, Rng& data_rng) override {
        Batch batch = collate_sequences(train_, indices);
        Tensor labels = empty(batch.input_ids.shape(), DType::I32);
        for (int64_t r = 0; r < (int64_t)indices.size(); ++r) mask_row(batch, labels, r, data_rng);
        nn::MaskedLMLogits out = model_.forward_masked(inputs_of(batch), labels);
        return nn::BertForMaskedLM::loss(out.logits, out.labels, label_smoothing());
    }

    // Each evaluation set is masked from a fresh Rng(training.seed) drawn in eval_batches'
    // order, which the batch size does not change: every evaluation masks the same tokens, so
    // eval_loss is comparable between evaluations, and data_rng is left alone. Losses are means
    // over masked tokens (not over batches), so the batch size does not change them either.
    // Named sets (data.eval_files as an object) report "<name>_loss" and so on beside the
    // totals over all of them.
    Metrics evaluate(int64_t batch_size) override {
        const bool was_training = model_.is_training();
        model_.eval();
        NoGradGuard no_grad;
        MaskedScore total;
        Metrics metrics{.task = TaskKind::mlm};
        for (const NamedSequences& set : eval_) {
            const MaskedScore score = score_set(set.sequences, batch_size);
            if (!set.name.empty()) score.write(metrics, set.name + "_", sequence_count(set.sequences));
            total.add(score);
        }
        model_.train(was_training);
        int64_t examples = 0;
        for (const NamedSequences& set : eval_) examples += sequence_count(set.sequences);
        total.write(metrics, "", examples);
        return metrics;
    }

    std::string main_metric() const override { return "eval_loss"; }
    // Pretraining holds out its own text (data.eval_files, named sets): no validation split.
    void select_eval_set(EvalSplit set) override {
        if (set != EvalSplit::Test) throw std::runtime_error("masked-LM tasks have no validation split");
    }

    std::vector<nn::BertInputs> eval_inputs(int64_t) override { throw no_exported_form(); }
    Metrics score(const std::vector<NamedOutputs>&, int64_t) override { throw no_exported_form(); }
    std::vector<NamedOutputs> eval_outputs(const std::vector<nn::BertInputs>&) override { throw no_exported_form(); }
    bool scores_outputs() const override { return false; }

    nlohmann::json predict(const std::string&, int64_t) override {
        throw std::runtime_error(config_.source + ": data.task mlm has no predictions (masked-LM pretraining "
                                                  "labels no examples); use evaluate for its loss");
    }

private:
    // HF's label_smoothing_factor over the masked positions, in training and evaluation alike (its
    // LabelSmoother leaves out the positions labelled -100).
    float label_smoothing() const { return (float)config_.training.label_smoothing_factor; }

    struct NamedSequences {
        std::string name;  // empty: the one unnamed set of eval_files
        PackedSequences sequences;
    };

    // Masked-token sums of one evaluation set.
    struct MaskedScore {
        double loss_sum = 0;
        int64_t masked = 0, correct = 0;

        void add(const MaskedScore& other) {
            loss_sum += other.loss_sum;
            masked += other.masked;
            correct += other.correct;
        }
        // The totals (prefix "") take every task's names for the loss and the example count:
        // eval_loss, eval_examples.
        void write(Metrics& metrics, const std::string& prefix, int64_t examples) const {
            const std::string named = prefix.empty() ? "eval_" : prefix;
            const double loss = masked > 0 ? loss_sum / (double)masked : 0.0;
            metrics.scores[named + "loss"] = loss;
            metrics.scores[prefix + "perplexity"] = std::exp(loss);
            metrics.scores[prefix + "mlm_accuracy"] = masked > 0 ? (double)correct / (double)masked : 0.0;
            metrics.counts[named + "examples"] = examples;
        }
    };

    // Data parallel, each rank runs every N-th batch (every rank masks every batch, to keep the
    // stream in step); each batch's sums travel in a slot of their own, so adding them up in batch
    // order gives one process's numbers bit for bit.
    MaskedScore score_set(const PackedSequences& sequences, int64_t batch_size) {
        Rng rng(config_.training.seed);
        const World& w = world();
        const std::vector<std::vector<int64_t>> batches = eval_batches(lengths_of(sequences), batch_size);
        std::vector<double> losses(batches.size(), 0.0);
        std::vector<int64_t> counts(2 * batches.size(), 0);  // masked, correct
        ProgressBar bar("eval", (int64_t)batches.size());
        for (size_t b = 0; b < batches.size(); ++b) {
            bar.update((int64_t)b);
            Batch batch = collate_sequences(sequences, batches[b]);
            Tensor labels = empty(batch.input_ids.shape(), DType::I32);
            for (int64_t r = 0; r < (int64_t)batches[b].size(); ++r) mask_row(batch, labels, r, rng);
            if ((int)(b % (size_t)w.size) != w.rank) continue;
            nn::MaskedLMLogits out = model_.forward_masked(inputs_of(batch), labels);
            const int64_t M = out.labels.numel(), V = out.logits.size(-1);
            if (M == 0) continue;
            losses[b] = (double)nn::BertForMaskedLM::loss(out.logits, out.labels, label_smoothing()).item() * (double)M;
            const Tensor host_logits = out.logits.cpu();
            const float* logits = host_logits.f32();
            for (int64_t m = 0; m < M; ++m) {
                const float* row = logits + m * V;
                counts[2 * b + 1] += std::max_element(row, row + V) - row == out.labels.i32()[m];
            }
            counts[2 * b] = M;
        }
        allreduce_sum(losses.data(), (int64_t)losses.size());
        allreduce_sum(counts.data(), (int64_t)counts.size());
        MaskedScore score;
        for (size_t b = 0; b < batches.size(); ++b) {
            score.loss_sum += losses[b];
            score.masked += counts[2 * b];
            score.correct += counts[2 * b + 1];
        }
        return score;
    }

    std::runtime_error no_exported_form() const {
        return std::runtime_error(config_.source + ": data.task mlm has no exported form to evaluate elsewhere; "
                                                   "use evaluate for its loss");
    }

    PackedSequences read_sequences(const std::string& key, const std::vector<std::string>& files, int64_t limit) {
        if (files.empty()) throw std::runtime_error(config_.source + ": data." + key + " is empty");
        PackedSequences packed = pack_documents(files, tokenizer_, config_.data.max_seq_length, limit);
        if (sequence_count(packed) == 0)
            throw std::runtime_error(config_.source + ": data." + key + " hold no text to pack");
        return packed;
    }

    Batch collate_sequences(const PackedSequences& packed, const std::vector<int64_t>& indices) const {
        std::vector<Encoding> features;
        features.reserve(indices.size());
        for (int64_t i : indices) features.push_back(sequence_encoding(packed, i));
        std::vector<int64_t> rows(indices.size());
        for (size_t r = 0; r < rows.size(); ++r) rows[r] = (int64_t)r;
        PaddingOptions padding;
        padding.pad_id = tokenizer_.special.pad_id;
        return collate(features, {}, rows, padding);
    }

    // Row r of the batch: [PAD] is special, so padding gets label -100 and draws nothing.
    void mask_row(Batch& batch, Tensor& labels, int64_t r, Rng& rng) const {
        const int64_t T = batch.input_ids.size(1);
        mask_tokens(std::span(batch.input_ids.i32() + r * T, (size_t)T), std::span(labels.i32() + r * T, (size_t)T),
                    masking_, rng);
    }

    static nn::BertInputs inputs_of(const Batch& batch) {
        return {batch.input_ids, batch.token_type_ids, batch.attention_mask};
    }

    RunConfig config_;
    nn::BertConfig model_config_;
    Rng init_rng_;
    nn::BertForMaskedLM model_;
    Tokenizer tokenizer_;
    MlmMasking masking_;
    PackedSequences train_;
    std::vector<NamedSequences> eval_;
};

}  // namespace

std::unique_ptr<Task> make_mlm_task(const RunConfig& config, const TaskData& data) {
    return std::make_unique<MlmTask>(config, data);
}

}  // namespace qdq
