#include "trainers/task.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <stdexcept>

#include "autograd/tape.h"
#include "nn/init.h"
#include "nn/pretrained.h"
#include "qdqbert/qdq_placement.h"
#include "trainers/checkpoint.h"
#include "trainers/classification_labels.h"
#include "trainers/progress_bar.h"
#include "trainers/run_device.h"

namespace qdq {

nn::BertConfig model_file_config(const std::string& path) {
    if (const std::optional<RunConfig> run = checkpoint_run_config(path)) {
        if (!run->model.config) throw std::runtime_error(path + ": its run config has no model.config");
        return *run->model.config;
    }
    return nn::load_pretrained_config(path);
}

namespace {

// model.init, when it is read, must be there: the error names the key and the config, not the
// file alone.
void check_model_init(const RunConfig& config) {
    const std::string& init = config.model.init;
    if (init.empty() && !config.model.config)
        throw ConfigError(config.source + ": 'model.init' is unset, and so is model.config: one of them gives the model's shape");
    if (!init.empty() && !std::filesystem::exists(init))
        throw ConfigError(config.source + ": 'model.init' names a missing file: " + init);
}

}  // namespace

nn::BertConfig task_model_config(const RunConfig& config) {
    if (!config.model.config) check_model_init(config);
    nn::BertConfig c = config.model.config ? *config.model.config : model_file_config(config.model.init);
    if (config.data.max_seq_length > c.max_position_embeddings)
        throw ConfigError(config.source + ": data.max_seq_length " + std::to_string(config.data.max_seq_length) +
                          " is over the model's max_position_embeddings " +
                          std::to_string(c.max_position_embeddings));
    return c;
}

RunConfig saved_run_config(const RunConfig& config, const Task& task) {
    RunConfig saved = config;
    saved.model.config = task.model_config();
    saved.model.config_file.clear();
    return saved;
}

Tokenizer task_tokenizer(const RunConfig& config, const nn::BertConfig& model) {
    Tokenizer tokenizer = load_tokenizer(config.data.vocab, config.data.do_lower_case.value_or(true));
    if (vocab_size(tokenizer) > model.vocab_size)
        throw ConfigError(config.source + ": data.vocab " + config.data.vocab + " has " +
                          std::to_string(vocab_size(tokenizer)) + " tokens, over the model's vocab_size " +
                          std::to_string(model.vocab_size));
    return tokenizer;
}

void init_task_model(nn::Module& model, nn::BertModel& bert, const RunConfig& config, const TaskData& data) {
    if (config.quantization) attach_bert_quantizers(bert, *config.quantization);
    if (data.weights && !config.model.init.empty()) {
        check_model_init(config);
        load_model_weights(model, config.model.init);
    }
}

std::vector<std::vector<int64_t>> eval_batches(const std::vector<int32_t>& lengths, int64_t batch_size) {
    if (batch_size <= 0) throw std::invalid_argument("eval_batches: batch_size must be positive");
    std::vector<int64_t> order(lengths.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
    std::vector<std::vector<int64_t>> batches;
    for (size_t start = 0; start < order.size(); start += (size_t)batch_size) {
        size_t end = std::min(order.size(), start + (size_t)batch_size);
        batches.emplace_back(order.begin() + (std::ptrdiff_t)start, order.begin() + (std::ptrdiff_t)end);
    }
    return batches;
}

std::vector<NamedOutputs> run_eval_model(nn::Module& model, const std::vector<nn::BertInputs>& batches,
                                         const std::function<NamedOutputs(const nn::BertInputs&)>& forward) {
    const bool was_training = model.is_training();
    model.eval();
    NoGradGuard no_grad;
    std::vector<NamedOutputs> outputs;
    outputs.reserve(batches.size());
    ProgressBar bar("eval", (int64_t)batches.size());
    for (const nn::BertInputs& batch : batches) {
        NamedOutputs out = forward(batch);
        for (auto& [name, tensor] : out) tensor = tensor.cpu();  // scored on the host
        outputs.push_back(std::move(out));
        bar.update((int64_t)outputs.size());
    }
    model.train(was_training);
    return outputs;
}

void check_outputs(const std::vector<NamedOutputs>& outputs, const std::vector<std::vector<int64_t>>& batches,
                   const std::vector<std::string>& names) {
    if (outputs.size() != batches.size())
        throw std::invalid_argument("score: " + std::to_string(outputs.size()) + " outputs for " +
                                    std::to_string(batches.size()) + " evaluation batches");
    for (size_t b = 0; b < batches.size(); ++b)
        for (const std::string& name : names) {
            auto it = outputs[b].find(name);
            if (it == outputs[b].end())
                throw std::invalid_argument("score: batch " + std::to_string(b) + " has no output '" + name + "'");
            if (!it->second.defined() || it->second.dim() < 1 || it->second.size(0) != (int64_t)batches[b].size())
                throw std::invalid_argument("score: output '" + name + "' of batch " + std::to_string(b) +
                                            " does not have " + std::to_string(batches[b].size()) + " rows");
        }
}

namespace {

// `limit` of `count` indices drawn with `seed`, in order (all of them when limit < 0 or >= count).
std::vector<size_t> seeded_subset(size_t count, int64_t limit, uint64_t seed) {
    std::vector<size_t> all(count);
    std::iota(all.begin(), all.end(), 0);
    if (limit < 0 || (size_t)limit >= count) return all;
    // A partial Fisher-Yates shuffle picks the subset; sorting restores file order.
    Rng rng(seed);
    for (size_t i = 0; i < (size_t)limit; ++i) {
        size_t j = i + (size_t)(rng.next_u64() % (count - i));
        std::swap(all[i], all[j]);
    }
    all.resize((size_t)limit);
    std::sort(all.begin(), all.end());
    return all;
}

}  // namespace

std::vector<size_t> example_subset(size_t count, int64_t limit) { return seeded_subset(count, limit, 0x737562736574ull); }

SplitIndices validation_split(size_t count, double fraction, uint64_t seed) {
    const int64_t held = std::llround(fraction * (double)count);
    if (held < 1 || held >= (int64_t)count)
        throw std::runtime_error("data.validation_fraction " + std::to_string(fraction) + " of " +
                                 std::to_string(count) + " training examples leaves " +
                                 (held < 1 ? "no validation example" : "no training example"));
    SplitIndices out;
    out.validation = seeded_subset(count, held, seed);
    std::vector<bool> is_validation(count, false);
    for (size_t i : out.validation) is_validation[i] = true;
    for (size_t i = 0; i < count; ++i)
        if (!is_validation[i]) out.train.push_back(i);
    return out;
}

ValidationHalves validation_halves(const std::vector<size_t>& validation, uint64_t seed) {
    if (validation.size() < 2) return {};
    // Another stream than validation_split's, which drew `validation` itself with `seed`.
    const std::vector<size_t> first = seeded_subset(validation.size(), (int64_t)validation.size() / 2, ~seed);
    std::vector<bool> in_first(validation.size(), false);
    for (size_t i : first) in_first[i] = true;
    ValidationHalves out;
    for (size_t i = 0; i < validation.size(); ++i) (in_first[i] ? out.ranking : out.checking).push_back(validation[i]);
    return out;
}

std::unique_ptr<Task> make_task(const RunConfig& config, TaskData data, const ModelLoader& load) {
    if (data.on_run_device) {
        check_device_support(config);  // before any data is read
        select_run_device(config);
    }
    if (load) data.weights = false;
    std::unique_ptr<Task> task;
    nn::DeferredInit deferred;  // the weights a file holds (model.init's, a teacher's, load's) are not drawn
    switch (config.data.task) {
    case TaskKind::classification: task = make_classification_task(config, data); break;
    case TaskKind::squad: task = make_squad_task(config, data); break;
    case TaskKind::mlm: task = make_mlm_task(config, data); break;
    }
    if (load) load(task->model());
    deferred.finish();
    if (data.on_run_device) place_on_run_device(task->model(), config);
    return task;
}

std::unique_ptr<Task> make_task(const RunConfig& config, const TaskData& data) { return make_task(config, data, {}); }

RunConfig config_for_checkpoint(const RunConfig& config, const std::string& checkpoint) {
    if (checkpoint.empty() || config.data.task != TaskKind::classification) return config;
    const std::vector<std::string> dataset = dataset_preset(config.data.dataset).label_names;
    const std::vector<std::string> held = model_file_config(checkpoint).label_names;
    if (held.empty() || label_order(held, dataset, checkpoint).names ==
                            label_order(task_model_config(config).label_names, dataset, checkpoint).names)
        return config;
    RunConfig read_as_held = config;
    read_as_held.model.init = checkpoint;
    read_as_held.model.config.reset();
    read_as_held.model.config_file.clear();
    return read_as_held;
}

}  // namespace qdq
