// A task is what the training loop needs to know about a model and its data: the model with its
// head, the tokenized training and evaluation examples, the loss of a training batch, the metrics
// of an evaluation pass and predictions for new inputs. The loop (trainers/trainer.h) never looks
// inside; classification (IMDB, NLI, ...), SQuAD and masked-LM pretraining each implement it
// once, in classification_task.cpp, squad_task.cpp and mlm_task.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/rng.h"
#include "autograd/tensor.h"
#include "data/tokenizer.h"
#include "nn/bert.h"
#include "nn/bert_config.h"
#include "nn/module.h"
#include "trainers/run_config.h"
#include "trainers/task_metrics.h"

namespace qdq {

// Which example sets make_task reads: training needs both, eval only the eval set, predict none.
// `weights` false leaves model.init's weights unread (its model config is still used), for a
// caller that loads a checkpoint of its own over them (loading follows the model's device; the
// make_task that takes a ModelLoader loads before the move and draws none of what it loads).
// `on_run_device` false keeps the model on the CPU, for the exports, which read its weights.
struct TaskData {
    bool train = true;
    bool eval = true;
    bool weights = true;
    bool on_run_device = true;
};

// With data.validation_fraction > 0 a seeded share of the training examples (SQuAD: of their
// articles) is held out of training as the validation set; the task then has two evaluation
// sets, validation and test (data.eval_files), and evaluates on validation until
// select_eval_set says otherwise. Validation also comes in two seeded halves (SQuAD: by
// article), the accuracy budget's: it ranks quantizers on the first and checks its loss on the
// second, so that where it stops is not fitted to the noise its ranking was chosen on.
enum class EvalSplit { Validation, Test, ValidationRanking, ValidationChecking };

// A model's outputs for one batch, by the names the ONNX export gives them (onnx/onnx_export.h):
// "logits", or "start_logits" and "end_logits".
using NamedOutputs = std::map<std::string, Tensor>;

class Task {
public:
    virtual ~Task() = default;

    virtual nn::Module& model() = 0;
    // The encoder inside model(), where quantizers sit (qdqbert/qdq_placement.h).
    virtual nn::BertModel& encoder() = 0;
    // The model's config as the task built it (classification sets num_labels and label_names
    // from the data, in the order the model's own config gives them: classification_labels.h).
    virtual const nn::BertConfig& model_config() const = 0;
    // The stream the model's dropout draws from; the trainer saves and restores it.
    virtual Rng& dropout_rng() = 0;

    // Training examples (features: SQuAD windows, MLM sequences), and the length of each for
    // group_by_length.
    virtual int64_t train_size() const = 0;
    virtual std::vector<int32_t> train_lengths() const = 0;

    // The mean loss over training features `indices`, recorded on the tape (the model is in
    // training mode). data_rng is the task's own randomness (MLM masking); it is saved in
    // checkpoints, so a task draws from it and from nothing else. With a distillation section,
    // distillation_loss of that loss and of both models' logits for the batch
    // (trainers/distillation.h).
    virtual Tensor train_loss(const std::vector<int64_t>& indices, Rng& data_rng) = 0;

    // One pass over the evaluation set in eval mode without the tape, batch_size features at a
    // time (trainers/task_metrics.h says which metrics each task has).
    virtual Metrics evaluate(int64_t batch_size) = 0;
    // evaluate() in two halves, so that another runtime can run the model between them
    // (stages/onnx_evaluation.h): the evaluation set as model inputs, eval_batches' batches
    // each padded to its longest feature, and the metrics of the outputs for those batches, in
    // the same order. evaluate() is score() of model()'s outputs. Masked-LM, which has no
    // exported form, throws.
    virtual std::vector<nn::BertInputs> eval_inputs(int64_t batch_size) = 0;
    virtual Metrics score(const std::vector<NamedOutputs>& outputs, int64_t batch_size) = 0;
    // model()'s outputs for such batches, in eval mode without the tape: evaluate() is
    // score(eval_outputs(eval_inputs(b)), b), and a data-parallel run splits the batches
    // between its ranks (trainers/sharded_evaluation.h). Masked-LM throws, as above.
    virtual std::vector<NamedOutputs> eval_outputs(const std::vector<nn::BertInputs>& batches) = 0;
    // False for a task whose evaluate() is all there is (masked-LM): no inputs, outputs or score().
    virtual bool scores_outputs() const { return true; }
    // The metric the best model is chosen by when the config names none.
    virtual std::string main_metric() const = 0;
    // Which set evaluate(), eval_inputs() and score() use, for a task made with a validation
    // split (data.validation_fraction); without one only Test exists, and Validation throws.
    virtual void select_eval_set(EvalSplit set) = 0;

    // Predictions for the examples of `path` (read as the task reads its eval files), as JSON:
    // classification [{"id", "label", "label_name", "probabilities"}...] ("label" the model's
    // class id, the index into "probabilities"), SQuAD {"<question id>": "answer"}
    // (the official evaluation script's input). Throws for a task without predictions (MLM).
    virtual nlohmann::json predict(const std::string& path, int64_t batch_size) = 0;
};

// The model config a model file holds: a checkpoint's (its run config's model.config), else
// the HF directory's, config.json's or .h5 file's (nn/pretrained.h).
nn::BertConfig model_file_config(const std::string& path);

// The model config (config.model.config, else the init checkpoint's), with the task's settings
// checked against it (e.g. max_seq_length within max_position_embeddings).
nn::BertConfig task_model_config(const RunConfig& config);

// Builds the task's model (HF initialisation from training.seed, then model.init's weights when
// given and data.weights is set; missing weights are reported on stderr, as HF's from_pretrained
// warns) and reads the data sets `data` asks for. Errors name the file and the config key. With
// a "quantization" section the model gets its quantizers (qdqbert/qdq_placement.h) before
// model.init is read, so a calibrated checkpoint's ranges load with its weights. With
// data.train and a "distillation" section it also loads the teacher (trainers/distillation.h).
// The model then goes to the run's device (trainers/run_device.h), which refuses a config the
// GPU cannot run yet.
std::unique_ptr<Task> make_task(const RunConfig& config, const TaskData& data);

// Puts a checkpoint's weights into a task's model (load_model_weights, or a stricter reader).
using ModelLoader = std::function<void(nn::Module&)>;
// make_task for a caller with a checkpoint of its own: model.init's weights are not read (its
// model config still is) and `load` puts the checkpoint's in place before the model goes to the
// run's device. The initial weights the checkpoint holds are never drawn (nn/init.h).
std::unique_ptr<Task> make_task(const RunConfig& config, TaskData data, const ModelLoader& load);
// The config to read `checkpoint`'s weights under (eval, predict, export and save-pretrained
// --checkpoint). As from_pretrained takes id2label from the checkpoint's own config.json, where
// a classifier's checkpoint orders the labels otherwise than the config's model, the checkpoint
// is model.init and its config the model's (trainers/classification_labels.h); else `config`.
RunConfig config_for_checkpoint(const RunConfig& config, const std::string& checkpoint);

// The run config as checkpoints and config.json keep it: this run's, with model.config
// set to the model the task built, so that a run starting from the checkpoint finds the model's
// shape there even when this run took it from its own model.init.
RunConfig saved_run_config(const RunConfig& config, const Task& task);

// The pieces every task shares.
// The run's tokenizer: data.vocab's files (WordPiece or byte-level BPE, data/tokenizer.h), with
// data.do_lower_case for WordPiece. Refused when it has more tokens than `model` has embeddings:
// its later ids would fail the first batch that holds one, after a --no-resume had cleared the run.
Tokenizer task_tokenizer(const RunConfig& config, const nn::BertConfig& model);
// The quantizers the config asks for, then model.init's weights when `data` asks (see make_task).
void init_task_model(nn::Module& model, nn::BertModel& bert, const RunConfig& config, const TaskData& data);
// Evaluation batches: indices 0..N-1 cut into batch_size runs after sorting by length (longest
// first), so that a batch pads little. The order of the examples does not change any metric.
std::vector<std::vector<int64_t>> eval_batches(const std::vector<int32_t>& lengths, int64_t batch_size);
// `model` in eval mode without the tape, run on each batch by `forward`; the mode is restored.
std::vector<NamedOutputs> run_eval_model(nn::Module& model, const std::vector<nn::BertInputs>& batches,
                                         const std::function<NamedOutputs(const nn::BertInputs&)>& forward);
// Throws unless score() was given one output per batch, each with `names`, of `rows` rows.
void check_outputs(const std::vector<NamedOutputs>& outputs, const std::vector<std::vector<int64_t>>& batches,
                   const std::vector<std::string>& names);

// Which of `count` examples a max_*_examples limit keeps: all when limit < 0 or limit >= count,
// else `limit` of them drawn at random with a fixed seed, in file order. Not the first `limit`:
// files such as IMDB's are sorted by label. The fixed seed keeps an eval subset the same across
// runs and training seeds.
std::vector<size_t> example_subset(size_t count, int64_t limit);

// The validation split of `count` examples: round(fraction · count) of them drawn with `seed`
// (as example_subset draws), in file order; `train` gets the rest. Throws, naming
// data.validation_fraction, when either part would be empty.
struct SplitIndices {
    std::vector<size_t> train, validation;
};
SplitIndices validation_split(size_t count, double fraction, uint64_t seed);

// The validation set's halves, EvalSplit::ValidationRanking and ValidationChecking: `validation`
// (indices, as validation_split gives them) drawn in two with `seed`, each in file order; both
// empty when there are fewer than two.
struct ValidationHalves {
    std::vector<size_t> ranking, checking;
};
ValidationHalves validation_halves(const std::vector<size_t>& validation, uint64_t seed);

// The evaluation sets of a task with a validation split: `active` is the one selected, the
// others wait in `held` by EvalSplit; select swaps. Tasks evaluate on `active` alone.
template <typename Set>
struct EvalSets {
    Set active{};
    std::array<Set, 4> held{};
    bool has_validation = false;
    bool has_halves = false;  // validation had two examples (SQuAD: articles) or more
    EvalSplit selected = EvalSplit::Test;

    void select(EvalSplit set) {
        if (set == selected) return;
        if (!has_validation) throw std::runtime_error("this task was made without a validation split");
        const bool half = set == EvalSplit::ValidationRanking || set == EvalSplit::ValidationChecking;
        if (half && !has_halves)
            throw std::runtime_error("the validation split is too small to halve: raise data.validation_fraction");
        std::swap(active, held[(size_t)selected]);
        std::swap(active, held[(size_t)set]);
        selected = set;
    }
};

std::unique_ptr<Task> make_classification_task(const RunConfig& config, const TaskData& data);
std::unique_ptr<Task> make_squad_task(const RunConfig& config, const TaskData& data);
std::unique_ptr<Task> make_mlm_task(const RunConfig& config, const TaskData& data);

}  // namespace qdq
