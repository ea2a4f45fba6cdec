// One JSON file describes a run. Sections and their keys (names as Hugging Face's
// TrainingArguments where one exists):
//   "model":    config (path to config.json, or the object inline), init (weights: a HF directory,
//               .safetensors or .h5; absent = HF's random initialisation)
//   "data":     task ("classification" | "squad" | "mlm"), dataset (classification preset: nli,
//               headerless_nli, sick, rte, wnli, sst2, imdb), train_files, eval_files, data_dir,
//               vocab (the tokenizer: a vocab.txt for WordPiece, a vocab.json with merges.txt
//               beside it for byte-level BPE, or a Hugging Face model directory holding either;
//               unset: model.init's directory when it is one, as AutoTokenizer.from_pretrained
//               reads it, else vocab/bert-base-uncased-vocab.txt), do_lower_case (WordPiece
//               only; unset: a directory's tokenizer_config.json says, else true),
//               max_seq_length, doc_stride, max_train_examples,
//               max_eval_examples, squad_eval_fraction + squad_split_seed (train and eval on
//               one SQuAD file split by article), validation_fraction + validation_seed (that
//               share of the training examples, SQuAD's by article, held out and evaluated on
//               instead of eval_files), mlm_probability
//   "training": output_dir, seed, data_seed, per_device_train_batch_size, per_device_eval_batch_size,
//               gradient_accumulation_steps, num_train_epochs, max_steps, learning_rate,
//               weight_decay, adam_beta1, adam_beta2, adam_epsilon, max_grad_norm, optim,
//               label_smoothing_factor,
//               lr_scheduler_type, lr_scheduler_kwargs (optim/schedule.h), warmup_steps,
//               warmup_ratio, logging_steps, logging_strategy, logging_first_step, eval_steps,
//               save_steps, evaluation_strategy (or eval_strategy) and save_strategy
//               (trainers/interval_strategy.h), eval_delay, eval_on_start, save_total_limit,
//               load_best_model_at_end, metric_for_best_model, greater_is_better,
//               early_stopping_patience, early_stopping_threshold (HF's EarlyStoppingCallback),
//               group_by_length, dataloader_drop_last, save_only_model, disable_tqdm,
//               bf16 (matrix products in bf16, see trainers/run_precision.h),
//               ddp_bucket_cap_mb (data-parallel gradient buckets, parallel/grad_reducer.h),
//               use_cpu (the CPU although a GPU is present, trainers/run_device.h),
//               report_to ("none", "tensorboard" or "all", or a list: where the logs go besides
//               metrics.jsonl), logging_dir (TensorBoard's folder; default <output_dir>/runs)
//   "quantization": (qdqbert/qdq_placement.h)
//   "distillation": teacher (a model of the same task: a checkpoint, model.h5, .safetensors or
//               HF directory; run in float, without quantizers; in the pipeline it defaults to
//               the FP32 stage's model, elsewhere it is required), temperature (T > 0, default 1),
//               alpha (in [0, 1], default 0.5): loss = α·task loss + (1 − α)·T²·KL(teacher ‖
//               student) of the softmaxes at T (trainers/distillation.h); classification and
//               squad only
//   "pipeline": qat_learning_rate_ratio (0.1: QAT at a tenth of the FP32 rate, the recipes' 1/10
//               to 1/100), qat_num_train_epochs (default: the FP32 run's), calibration ("best",
//               or one of calibrate's rows: max, percentile-99.9, percentile-99.99,
//               percentile-99.999, mse, entropy; checked at load), onnx_target ("onnxruntime-cpu" or
//               "tensorrt"), onnx (false skips export and its evaluation in ONNX Runtime),
//               onnx_threads (ONNX Runtime's intra-op threads; 0: its default, one per core),
//               sensitivity ("none", "layers" or "quantizers": calibrate's sweep),
//               validation_fraction (0.1: every stage's data.validation_fraction; choices are
//               made on that validation set and eval_files, the test set, is only reported; 0
//               chooses on the test set as before), accuracy_budget (points the PTQ model may
//               lose; beyond them the most sensitive quantizers stay in float, for QAT and the
//               export too: stages/accuracy_budget.h), qat_variants (more QAT runs from the same
//               calibrated model, each named and setting training, quantization or
//               distillation keys: trainers/qat_variant.h) — stages/pipeline.h
// "base": a config file (path relative to this one) whose keys this file overrides, key by key
// as a JSON merge patch (RFC 7386: objects merge, other values replace, null removes a key). A
// QAT config is its FP32 config plus a quantization section and a few training keys.
// max_train_examples / max_eval_examples keep a seeded random subset, not the first N
// (trainers/task.h example_subset).
// SQuAD with squad_eval_fraction > 0 evaluates on the articles split off train_files (all
// files together); eval_files must then be empty, an error otherwise, as one evaluation set
// named twice is a mistake. max_*_examples count questions and apply to each part after the
// split.
// Masked-LM (task mlm) reads corpus files, each of which may name a slice of its documents,
// "wiki.jsonl.gz[:98%]" (data/document_slice.h), so that one file gives a training part and a
// held-out part. Its eval_files may also be named sets, as Hugging Face's Trainer takes a dict
// of eval datasets: {"imdb": "imdb/imdb_test.jsonl.gz", "wiki": "wiki/x.jsonl.gz[98%:]"} reports
// eval_imdb_loss, eval_wiki_loss and so on, and eval_loss over all sets' masked tokens
// together; max_eval_examples then applies to each set.
// Paths in "data" are relative to data.data_dir (default: the data directory, see
// data/data_dir.h); paths in "model" and distillation.teacher are relative to the config file's
// folder (the teacher's is saved absolute, so a run's config.json reloads from its own folder).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/classification_reader.h"
#include "nn/bert_config.h"
#include "optim/schedule.h"
#include "qdqbert/qdq_placement.h"
#include "quant/qdq_target.h"
#include "trainers/interval_strategy.h"
#include "trainers/task_kind.h"

namespace qdq {

struct ModelSettings {
    std::optional<nn::BertConfig> config;  // model.config, inline or from its file; absent: model.init's
    std::string config_file;               // model.config as a path: resolve() reads it into config
    std::string init;                      // a path (resolved by resolve()), or empty
};

// One named evaluation set: data.eval_files given as {"name": files, ...}.
struct EvalSet {
    std::string name;
    std::vector<std::string> files;  // resolved paths
};

// data.vocab when neither the config nor model.init names a tokenizer.
inline constexpr const char* kDefaultVocab = "vocab/bert-base-uncased-vocab.txt";

// Paths as the config writes them until resolve(), which joins them to data_dir and checks them.
struct DataSettings {
    TaskKind task = TaskKind::classification;
    ClassificationDataset dataset = ClassificationDataset::nli;  // classification's reader preset
    std::vector<std::string> train_files, eval_files;
    std::vector<EvalSet> eval_sets;  // mlm: eval_files as named sets, eval_files empty
    std::string data_dir;            // empty: data/data_dir.h's, set by resolve()
    std::string vocab;               // a file or a directory (data/tokenizer.h); empty: see resolve()
    std::optional<bool> do_lower_case;  // WordPiece only; unset: the tokenizer's directory says, else true
    int max_seq_length = 128;
    int doc_stride = 128;
    int64_t max_train_examples = -1;  // -1: all
    int64_t max_eval_examples = -1;
    double squad_eval_fraction = 0;  // > 0: split train_files by article, eval on that part
    uint64_t squad_split_seed = 42;
    // > 0: that share of the training examples (SQuAD: articles) is a validation set, which the
    // run evaluates on instead of eval_files (trainers/task.h); the pipeline sets it from
    // pipeline.validation_fraction
    double validation_fraction = 0;
    uint64_t validation_seed = 42;
    double mlm_probability = 0.15;
};

// The integrations a run reports its logs to besides metrics.jsonl (HF's report_to names).
enum class ReportTo { tensorboard };
inline constexpr std::pair<const char*, ReportTo> kReportToNames[] = {{"tensorboard", ReportTo::tensorboard}};

// Checkpoints kept when training.save_total_limit is unset.
constexpr int64_t kSaveTotalLimitWhileTraining = 2;

struct TrainingSettings {
    std::string output_dir = "runs/default";
    uint64_t seed = 42;
    // HF's data_seed: the order the training examples are drawn in (unset: seed's); dropout and
    // the weights drawn at start stay seed's.
    std::optional<int64_t> data_seed;
    int per_device_train_batch_size = 8;
    int per_device_eval_batch_size = 8;
    // Micro-batches of per_device_train_batch_size per optimizer step (HF's name): the effective
    // batch is their product (optimizer_step, trainers/trainer.h).
    int64_t gradient_accumulation_steps = 1;
    double num_train_epochs = 3;
    int64_t max_steps = -1;  // > 0 overrides num_train_epochs
    double learning_rate = 5e-5;
    double weight_decay = 0;
    double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;
    double max_grad_norm = 1.0;
    // HF's label_smoothing_factor ε in [0, 1): a classifier's loss, or a masked LM's over its
    // masked positions (nn/heads.h); HF's Trainer smooths only a model given "labels", so squad
    // (start and end positions) refuses it.
    double label_smoothing_factor = 0;
    // HF's optim: "adamw_torch" (its default) or "adamw_torch_fused", the same update; others refused.
    std::string optim = "adamw_torch";
    ScheduleName lr_scheduler_type = ScheduleName::Linear;
    ScheduleKwargs lr_scheduler_kwargs;  // HF's, as optim/schedule.h lists them
    int64_t warmup_steps = 0;
    double warmup_ratio = 0;
    // 50 where HF's is 500: the runs here are short (the main job's FP32 stage takes 170 steps),
    // and 500 would log little but the last step.
    StepCount logging_steps{50};
    // HF's logging_strategy ("steps" unless set; "epoch" logs at each epoch's end, "no" only at
    // the last step, which is always logged here) and logging_first_step (a record after step 1).
    std::optional<IntervalStrategy> logging_strategy;
    bool logging_first_step = false;
    StepCount eval_steps{0};    // 0: evaluate at the end of each epoch
    StepCount save_steps{500};  // 0: save at the end of each epoch
    // HF's evaluation_strategy (or eval_strategy) and save_strategy; unset, as eval_steps and
    // save_steps say above (trainers/interval_strategy.h).
    std::optional<IntervalStrategy> evaluation_strategy, save_strategy;
    // HF's eval_delay: no evaluation falls due before this many epochs under evaluation "epoch",
    // steps otherwise; the last step's evaluation is never delayed.
    double eval_delay = 0;
    bool eval_on_start = false;  // HF's: an evaluation before the first step (trainers/trainer.h)
    // Hugging Face's save_total_limit: the newest checkpoints kept (the best one too with
    // load_best_model_at_end or a metric_for_best_model given, and the newest always while
    // training, which resumes from it);
    // when set, a finished run keeps that many beside model.h5 (0: none). Unset: 2 while
    // training and after; a pipeline's stages then keep none (stages/pipeline.h).
    std::optional<int64_t> save_total_limit;
    bool load_best_model_at_end = false;
    // Default: the task's main metric (not Hugging Face's "loss"). Given with or without "eval_"
    // before it, and read as the task's metrics name it (task_metrics.h score_named).
    std::string metric_for_best_model;
    // Default as HF: false when the metric's name ends in "loss", else true.
    std::optional<bool> greater_is_better;
    // HF's EarlyStoppingCallback(early_stopping_patience, early_stopping_threshold), which needs
    // load_best_model_at_end: training ends after `patience` evaluations in a row that do not
    // beat the best metric_for_best_model so far by more than the threshold. Unset: never.
    std::optional<int64_t> early_stopping_patience;
    double early_stopping_threshold = 0;
    bool group_by_length = false;
    // HF's dataloader_drop_last: training drops each epoch's short last batch, so an epoch is
    // floor(N / batch) batches. Evaluation still scores every example: HF's evaluation loader
    // drops one too, and a metric over part of the set is not the task's.
    bool dataloader_drop_last = false;
    // HF's save_only_model: checkpoints hold the model and the trainer's state, not the
    // optimizer's moments, about a third of their size; a run cannot resume from one
    // (trainers/resume.h), load_best_model_at_end and --checkpoint read them as any other.
    bool save_only_model = false;
    bool disable_tqdm = false;  // HF's: no progress bars, on a terminal too
    // Hugging Face's bf16: every matrix product (train, evaluate, calibrate) with bf16 operands
    // and FP32 accumulation, the rest in FP32 (autograd/matmul_precision.h).
    bool bf16 = false;
    // Hugging Face's tf32: FP32 products on the GPU's tensor cores, each operand read to 10 bits
    // of mantissa (compute capability 8.0 on). As HF, a run without such a GPU is refused, a run
    // on the CPU included. With bf16 the products are bf16's. Not for quantized models' scores,
    // which are FP32's as under bf16 (trainers/run_precision.h).
    bool tf32 = false;
    // Under mpirun, the size of the buckets gradients are summed in across ranks while backward
    // goes on (HF's name; PyTorch DDP's default of 25 MB).
    double ddp_bucket_cap_mb = 25;
    // Hugging Face's use_cpu: run on the CPU although a GPU is present (trainers/run_device.h).
    bool use_cpu = false;
    // Hugging Face's report_to, a name or a list of them: "none" (the default: none), "all" (every
    // integration this build has, which is tensorboard), "tensorboard": TensorBoard event files
    // with every number of metrics.jsonl as HF's TensorBoardCallback names it (train/loss,
    // eval/accuracy, ...) at its step (trainers/tensorboard_events.h).
    std::vector<ReportTo> report_to;
    // Hugging Face's logging_dir: the event files' folder, one run's own (TensorBoard shows a
    // folder as a run, and a resumed run keeps its files in step with metrics.jsonl); empty:
    // <output_dir>/runs. A pipeline's stages each take a folder under it, as under output_dir.
    std::string logging_dir;
};

// calibrate's sweep: which quantizers are left in float one at a time.
enum class Sensitivity { none, layers, quantizers };
inline constexpr std::pair<const char*, Sensitivity> kSensitivityNames[] = {
    {"none", Sensitivity::none}, {"layers", Sensitivity::layers}, {"quantizers", Sensitivity::quantizers}};

// A QAT run beside the pipeline's own, from the same calibrated model: its name (a folder
// name) and the keys it sets, dotted as --set takes them, e.g. {"distillation.alpha": 0.5}.
struct QatVariant {
    std::string name;
    nlohmann::json settings;
};

struct PipelineSettings {
    double qat_learning_rate_ratio = 0.1;
    double qat_num_train_epochs = 0;  // 0: as the FP32 run
    // The method QAT starts from, one of calibrate's rows (qdqbert/calibration.h); none: "best",
    // the one that scores highest.
    std::optional<CalibrationMethod> calibration;
    QdqTarget onnx_target = QdqTarget::OnnxRuntimeCpu;
    bool onnx = true;
    int onnx_threads = 0;
    Sensitivity sensitivity = Sensitivity::layers;
    // The share of the training examples every stage holds out as its validation set, on which
    // the best checkpoint and calibration are chosen; the test set (eval_files) is only reported.
    double validation_fraction = 0.1;
    // Points of the task's metric the quantized model may lose against FP32 before quantizers
    // are left in float (stages/accuracy_budget.h); none: every quantizer stays.
    std::optional<double> accuracy_budget;
    std::vector<QatVariant> qat_variants;
};

// Knowledge distillation from a teacher model (trainers/distillation.h).
struct DistillationSettings {
    std::string teacher;  // resolved, absolute path; empty: the pipeline's FP32 model
    double temperature = 1;
    double alpha = 0.5;  // the task loss's weight; 1 − alpha the KL term's
};

struct RunConfig {
    ModelSettings model;
    DataSettings data;
    TrainingSettings training;
    std::optional<QuantizationConfig> quantization;
    std::optional<DistillationSettings> distillation;
    PipelineSettings pipeline;
    std::string source;    // the file it came from, for errors
    std::string base_dir;  // the folder its relative model paths were resolved against (resolve())
};

// Sets `key` ("section.name", nested as deep as its dots) in a config's JSON, creating the
// objects on the way; `what` names the setting in errors.
void set_config_key(nlohmann::json& json, const std::string& key, const nlohmann::json& value, const std::string& what);

// The config's JSON as types, every key and value checked, touching no file: a checkpoint's or
// a results file's config parses here although its data files are elsewhere. Paths stay as
// written. Errors name `source` and the dotted key.
RunConfig run_config_from_json(const nlohmann::json& json, const std::string& source);
// Paths made usable and checked against the file system, once, after run_config_from_json:
// model paths and distillation.teacher against `base_dir` (the config file's folder), data
// files against data.data_dir; model.config's file read; the tokenizer found (data.vocab, else
// model.init's directory, else kDefaultVocab) and do_lower_case settled; each QAT variant's
// config checked. Errors name the config and the key.
void resolve(RunConfig& config, const std::string& base_dir);
// run_config_from_json, then resolve.
RunConfig parse_run_config(const nlohmann::json& json, const std::string& source, const std::string& base_dir);
// The file with its "base" files merged and each "dotted.key=value" override applied (value
// parsed as JSON, else taken as a string) before it is read, so overrides are checked like the
// file itself; then parse_run_config against the file's folder.
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {});
// A setting the run cannot use, found after its config loaded: where the model's config, the
// data or a stage first meets it. The command line exits 2 for it, as for a config that does
// not load; the message names the config and the key.
struct ConfigError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The config as run_config_from_json reads it back: every key written, paths as they stand.
nlohmann::json run_config_to_json(const RunConfig& config);

// The parts a QAT variant sets (trainers/qat_variant.h), each as run_config_to_json writes it
// and run_config_from_json reads it.
nlohmann::json training_settings_to_json(const TrainingSettings& training);
TrainingSettings training_settings_from_json(const nlohmann::json& section, const std::string& source);
nlohmann::json pipeline_settings_to_json(const PipelineSettings& pipeline);
PipelineSettings pipeline_settings_from_json(const nlohmann::json& section, const std::string& source);
nlohmann::json distillation_settings_to_json(const DistillationSettings& distillation);
DistillationSettings distillation_settings_from_json(const nlohmann::json& section, const std::string& source);
// distillation.teacher made absolute against `base_dir` and checked to exist.
void resolve_teacher(DistillationSettings& distillation, const std::string& base_dir, const std::string& source);

// The name pipeline.calibration is written as: "best" or the method's.
std::string calibration_choice_name(const std::optional<CalibrationMethod>& calibration);

// The learning-rate schedule of a run of `total_steps` updates.
ScheduleOptions schedule_options(const TrainingSettings& training, int64_t total_steps);

}  // namespace qdq
