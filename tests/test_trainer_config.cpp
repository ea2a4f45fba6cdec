// Run configs (strict keys, types, overrides, resolved paths) and HDF5 checkpoints
// (exact round trip, atomic replacement, pruning). Expected values come from the files the
// tests write, not from the code under test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "autograd/rng.h"
#include "tests/support/gradcheck.h"
#include "trainers/checkpoint.h"
#include "trainers/run_config.h"

using namespace qdq;
using qdq::testing::random_tensor;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) {
    // The process id keeps test binaries that run side by side (ctest -j) apart.
    std::string dir = ::testing::TempDir() + name + "_" + std::to_string(getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// A minimal valid config whose data files exist: a vocab and a train file in a temp data dir.
nlohmann::json base_config(const std::string& dir) {
    std::ofstream(dir + "/vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n";
    std::ofstream(dir + "/train.tsv") << "sentence1\tsentence2\tgold_label\na\tb\tneutral\n";
    return {{"model", {{"config", {{"hidden_size", 32}, {"num_attention_heads", 4}}}}},
            {"data", {{"data_dir", dir}, {"vocab", "vocab.txt"}, {"train_files", "train.tsv"}}},
            {"training", {{"learning_rate", 1e-4}, {"output_dir", dir + "/out"}}}};
}

std::string error_of(const nlohmann::json& raw) {
    try {
        parse_run_config(raw, "run.json", ".");
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST(RunConfig, ReadsSectionsAndResolvesDataPaths) {
    std::string dir = temp_dir("qdq_config_ok");
    RunConfig c = parse_run_config(base_config(dir), "run.json", ".");
    EXPECT_EQ(c.training.learning_rate, 1e-4);
    EXPECT_EQ(c.training.per_device_train_batch_size, 8);  // HF's default
    EXPECT_EQ(c.training.max_grad_norm, 1.0);
    EXPECT_EQ(c.data.train_files, std::vector<std::string>{dir + "/train.tsv"});
    EXPECT_EQ(c.model.config->hidden_size, 32);
    EXPECT_FALSE(c.quantization);
    nlohmann::json resolved = run_config_to_json(c);
    EXPECT_EQ(resolved["training"]["learning_rate"], 1e-4);
    EXPECT_EQ(resolved["data"]["vocab"], dir + "/vocab.txt");
}

TEST(RunConfig, ErrorsNameTheKey) {
    std::string dir = temp_dir("qdq_config_errors");
    nlohmann::json c = base_config(dir);
    auto with = [&](const std::string& section, const std::string& key, nlohmann::json value) {
        nlohmann::json copy = c;
        copy[section][key] = value;
        return error_of(copy);
    };
    EXPECT_NE(with("training", "lerning_rate", 1e-3).find("'training.lerning_rate'"), std::string::npos);
    EXPECT_NE(with("training", "learning_rate", "fast").find("'training.learning_rate' must be a number"), std::string::npos);
    EXPECT_NE(with("training", "max_steps", 2.5).find("'training.max_steps' must be an integer"), std::string::npos);
    EXPECT_NE(with("data", "task", "ner").find("'data.task'"), std::string::npos);
    EXPECT_NE(with("data", "train_files", "missing.tsv").find("missing.tsv"), std::string::npos);
    nlohmann::json squad = c;
    squad["data"]["task"] = "squad";
    squad["data"]["doc_stride"] = 500;
    EXPECT_NE(error_of(squad).find("'data.doc_stride'"), std::string::npos);
    EXPECT_NE(with("model", "config", {{"hidden_sise", 3}}).find("hidden_sise"), std::string::npos);
    // Settings read at load, before any data or model is built.
    EXPECT_NE(with("training", "lr_scheduler_type", "cosine_annealing")
                  .find("'training.lr_scheduler_type' must be one of linear, cosine"),
              std::string::npos);

    EXPECT_NE(with("training", "optim", "adafactor").find("'training.optim' must be adamw_torch or adamw_torch_fused"),
              std::string::npos);
    EXPECT_NE(with("training", "logging_strategy", "often").find("'training.logging_strategy' must be one of no, steps"),
              std::string::npos);
    EXPECT_NE(with("training", "eval_steps", 1.5).find("'training.eval_steps' must be a whole number of steps, or a share"),
              std::string::npos);
    EXPECT_NE(with("training", "save_steps", -0.5).find("'training.save_steps' must be a whole number"), std::string::npos);
    EXPECT_NE(with("training", "label_smoothing_factor", 1.0).find("'training.label_smoothing_factor' must lie in [0, 1)"),
              std::string::npos);
    nlohmann::json smoothed_squad = squad;
    smoothed_squad["data"]["doc_stride"] = 1;
    smoothed_squad["training"]["label_smoothing_factor"] = 0.1;
    EXPECT_NE(error_of(smoothed_squad).find("'training.label_smoothing_factor' smooths a loss over labels; data.task squad"),
              std::string::npos)
        << error_of(smoothed_squad);
    EXPECT_NE(with("training", "fp16", true).find("'training.fp16' is not read: FP16 with loss scaling"), std::string::npos);
    EXPECT_NE(with("training", "overwrite_output_dir", true).find("'training.overwrite_output_dir' is not read: a run continues"),
              std::string::npos);
    EXPECT_NE(with("training", "eval_delay", -1).find("'training.eval_delay' must be 0 or more"), std::string::npos);
    EXPECT_NE(with("training", "greater_is_better", "yes").find("must be true, false or null"), std::string::npos);

    EXPECT_NE(with("training", "data_seed", -1).find("'training.data_seed' must be 0 or more"), std::string::npos);
    EXPECT_NE(with("training", "lr_scheduler_kwargs", {{"num_cycle", 2}}).find("'training.lr_scheduler_kwargs.num_cycle'"),
              std::string::npos);
    EXPECT_NE(with("training", "lr_scheduler_kwargs", {{"num_cycles", 2}}).find("'linear' takes no kwarg 'num_cycles'"),
              std::string::npos);
    nlohmann::json both_warmups = c;
    both_warmups["training"]["warmup_steps"] = 10;
    both_warmups["training"]["warmup_ratio"] = 0.1;
    EXPECT_NE(error_of(both_warmups).find("not both"), std::string::npos);
    EXPECT_NE(with("pipeline", "onnx_target", "tensorrt-int4").find("'pipeline.onnx_target'"), std::string::npos);
    EXPECT_NE(with("pipeline", "sensitivity", "heads").find("'pipeline.sensitivity' must be one of none, layers"),
              std::string::npos);
    nlohmann::json bad_quantization = c;
    bad_quantization["quantization"] = {{"input", {{"num_bits", 1}}}};
    EXPECT_NE(error_of(bad_quantization).find("'quantization.input.num_bits'"), std::string::npos);
    bad_quantization["quantization"] = {{"calibrator", "median"}};
    EXPECT_NE(error_of(bad_quantization).find("'quantization.calibrator' must be one of max, percentile"),
              std::string::npos);
    nlohmann::json unknown_section = c;
    unknown_section["trainer"] = nlohmann::json::object();
    EXPECT_NE(error_of(unknown_section).find("'trainer'"), std::string::npos);
    // Names that only a later stage used to read are checked at load too.
    EXPECT_NE(with("pipeline", "calibration", "percentile-99.5").find("'pipeline.calibration' must be one of best, max, "),
              std::string::npos);
    EXPECT_NE(with("data", "dataset", "mnli").find("'data.dataset' must be one of nli, headerless_nli"), std::string::npos);
    EXPECT_NE(with("data", "max_train_examples", -5).find("'data.max_train_examples' must be positive, or -1"), std::string::npos);
    EXPECT_NE(with("data", "max_eval_examples", 0).find("'data.max_eval_examples' must be positive"), std::string::npos);
    EXPECT_NE(with("training", "output_dir", "").find("'training.output_dir' is empty"), std::string::npos);
    std::ofstream(dir + "/a_file") << "x";
    EXPECT_NE(with("training", "output_dir", dir + "/a_file").find("'training.output_dir' names a file, not a folder"),
              std::string::npos);
}

// training.metric_for_best_model is read as Hugging Face's Trainer reads it, with or without
// "eval_" before it, and becomes the score's name in the task's metrics; a metric the task does not
// report is an error at load, not at the first evaluation.
// What follows the evaluations needs them: reduce_lr_on_plateau, and early stopping, which also
// needs the best model kept, as HF's EarlyStoppingCallback does.
TEST(RunConfig, PlateauAndEarlyStoppingFollowEvaluations) {
    std::string dir = temp_dir("qdq_config_following");
    nlohmann::json c = base_config(dir);
    auto error_with = [&](const std::vector<std::pair<std::string, nlohmann::json>>& settings) {
        nlohmann::json copy = c;
        for (const auto& [key, value] : settings) copy["training"][key] = value;
        return error_of(copy);
    };
    EXPECT_NE(error_with({{"lr_scheduler_type", "reduce_lr_on_plateau"}, {"evaluation_strategy", "no"}})
                  .find("'training.lr_scheduler_type' \"reduce_lr_on_plateau\" follows evaluations"),
              std::string::npos);
    EXPECT_NE(error_with({{"early_stopping_patience", 2}})
                  .find("'training.early_stopping_patience' stops where the best model is kept: it needs "
                        "load_best_model_at_end"),
              std::string::npos);
    EXPECT_NE(error_with({{"early_stopping_threshold", 0.1}})
                  .find("'training.early_stopping_threshold' is early stopping's, and early_stopping_patience is not set"),
              std::string::npos);
    EXPECT_NE(error_with({{"load_best_model_at_end", true}, {"early_stopping_patience", 0}})
                  .find("'training.early_stopping_patience' must be 1 or more"),
              std::string::npos);
    EXPECT_NE(error_with({{"load_best_model_at_end", true}, {"early_stopping_patience", 2}, {"early_stopping_threshold", -0.5}})
                  .find("'training.early_stopping_threshold' must be 0 or more"),
              std::string::npos);
}

TEST(RunConfig, MetricForBestModelIsTheTasksScoreWithOrWithoutEval) {
    std::string dir = temp_dir("qdq_config_best_metric");
    nlohmann::json c = base_config(dir);
    auto metric = [&](const std::string& name) {
        nlohmann::json copy = c;
        copy["training"]["metric_for_best_model"] = name;
        return parse_run_config(copy, "run.json", ".").training.metric_for_best_model;
    };
    EXPECT_EQ(metric("accuracy"), "accuracy");
    EXPECT_EQ(metric("eval_accuracy"), "accuracy");
    EXPECT_EQ(metric("loss"), "eval_loss");
    EXPECT_EQ(metric("eval_loss"), "eval_loss");
    c["training"]["metric_for_best_model"] = "f1";
    const std::string error = error_of(c);
    EXPECT_NE(error.find("run.json: 'training.metric_for_best_model' is 'f1'"), std::string::npos) << error;
    EXPECT_NE(error.find("accuracy, eval_loss"), std::string::npos) << error;
}

// run_config_from_json reads types and touches no file: a config whose files are all missing
// (a checkpoint's, read on another machine) reads, keeps its paths as written, and fails only
// in resolve(), naming the key. Written back, it reads as the same config.
TEST(RunConfig, ParsingTouchesNoFileAndResolvingChecksThem) {
    const nlohmann::json elsewhere = {
        {"model", {{"config", "nowhere/config.json"}, {"init", "nowhere/model.h5"}}},
        {"data", {{"task", "squad"}, {"doc_stride", 64}, {"data_dir", "/nowhere"}, {"train_files", "train.json"}}},
        {"training", {{"output_dir", "out"}}},
        {"pipeline", {{"calibration", "percentile-99.99"}, {"onnx_target", "tensorrt"}}}};
    RunConfig c = run_config_from_json(elsewhere, "run.json");
    EXPECT_EQ(c.data.task, TaskKind::squad);
    EXPECT_EQ(c.data.train_files, std::vector<std::string>{"train.json"});
    EXPECT_EQ(c.model.config_file, "nowhere/config.json");
    ASSERT_TRUE(c.pipeline.calibration);
    EXPECT_EQ(calibration_method_name(*c.pipeline.calibration), "percentile-99.99");
    EXPECT_EQ(c.pipeline.onnx_target, QdqTarget::TensorRT);
    const nlohmann::json written = run_config_to_json(c);
    EXPECT_EQ(run_config_to_json(run_config_from_json(written, "config.json")), written);
    EXPECT_THROW(resolve(c, "."), std::runtime_error);
    std::string dir = temp_dir("qdq_config_resolve");
    RunConfig missing = run_config_from_json(base_config(dir), "run.json");
    missing.data.train_files = {"gone.tsv"};
    try {
        resolve(missing, ".");
        ADD_FAILURE() << "resolve accepted a missing file";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("run.json: 'data.train_files' names a missing file"), std::string::npos) << e.what();
    }
}

TEST(RunConfig, SetOverridesAnyKeyAndIsCheckedLikeTheFile) {
    std::string dir = temp_dir("qdq_config_set");
    std::ofstream(dir + "/run.json") << base_config(dir).dump();
    RunConfig c = load_run_config(dir + "/run.json", {"training.learning_rate=3e-5", "training.seed=7",
                                                      "training.lr_scheduler_type=cosine",
                                                      "training.lr_scheduler_kwargs.num_cycles=1.5"});
    EXPECT_EQ(c.training.learning_rate, 3e-5);
    EXPECT_EQ(c.training.seed, 7u);
    EXPECT_EQ(c.training.lr_scheduler_type, ScheduleName::Cosine);
    EXPECT_EQ(schedule_options(c.training, 100).kwargs.num_cycles, 1.5);
    // Written back with the run, and read back the same.
    EXPECT_EQ(run_config_from_json(run_config_to_json(c), "saved").training.lr_scheduler_kwargs.num_cycles, 1.5);
    // HF's ratio counts: below 1 a share of the run's steps, and 2.0 two steps.
    c = load_run_config(dir + "/run.json", {"training.eval_steps=0.1", "training.save_steps=2.0"});
    EXPECT_EQ(c.training.eval_steps, (StepCount{0, 0.1}));
    EXPECT_EQ(c.training.save_steps, (StepCount{2, 0}));
    EXPECT_EQ(steps_of(c.training.eval_steps, 95), 10);
    const RunConfig back = run_config_from_json(run_config_to_json(c), "saved");
    EXPECT_EQ(back.training.eval_steps, c.training.eval_steps);
    EXPECT_EQ(back.training.save_steps, c.training.save_steps);
    c = load_run_config(dir + "/run.json", {"training.load_best_model_at_end=true", "training.early_stopping_patience=3",
                                            "training.early_stopping_threshold=0.01"});
    const TrainingSettings early = run_config_from_json(run_config_to_json(c), "saved").training;
    EXPECT_EQ(early.early_stopping_patience, std::optional<int64_t>(3));
    EXPECT_EQ(early.early_stopping_threshold, 0.01);
    EXPECT_THROW(load_run_config(dir + "/run.json", {"training.seeed=7"}), std::runtime_error);
    EXPECT_THROW(load_run_config(dir + "/run.json", {"training.seed"}), std::runtime_error);
}

TEST(RunConfig, BaseFileIsOverriddenKeyByKey) {
    std::string dir = temp_dir("qdq_config_base");
    fs::create_directories(dir + "/fp32");
    nlohmann::json fp32 = base_config(dir);
    fp32["model"]["init"] = "weights.h5";  // relative to fp32/, the base's folder
    fp32["training"]["seed"] = 5;
    std::ofstream(dir + "/fp32/run.json") << fp32.dump();
    nlohmann::json qat = {{"base", "fp32/run.json"},
                          {"training", {{"learning_rate", 2e-6}, {"seed", nullptr}}},
                          {"quantization", {{"calibrator", "mse"}}}};
    std::ofstream(dir + "/qat.json") << qat.dump();
    RunConfig c = load_run_config(dir + "/qat.json", {"training.output_dir=elsewhere"});
    EXPECT_EQ(c.training.learning_rate, 2e-6);
    EXPECT_EQ(c.training.seed, 42u);  // null removed the base's value: the default
    EXPECT_EQ(c.training.output_dir, "elsewhere");
    EXPECT_EQ(c.model.config->hidden_size, 32);
    EXPECT_EQ(fs::path(c.model.init), fs::absolute(dir + "/fp32/weights.h5").lexically_normal());
    EXPECT_EQ(c.quantization->calibrator.method, AmaxMethod::Mse);
    EXPECT_FALSE(run_config_to_json(c).contains("base"));

    // A base without model.init keeps none.
    std::ofstream(dir + "/plain.json") << base_config(dir).dump();
    std::ofstream(dir + "/derived.json") << nlohmann::json{{"base", "plain.json"}}.dump();
    EXPECT_EQ(load_run_config(dir + "/derived.json").model.init, "");

    std::ofstream(dir + "/loop.json") << nlohmann::json{{"base", "loop.json"}}.dump();
    try {
        load_run_config(dir + "/loop.json");
        ADD_FAILURE() << "a base cycle loaded";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("a cycle?"), std::string::npos) << e.what();
    }
    std::ofstream(dir + "/missing.json") << nlohmann::json{{"base", "nowhere.json"}}.dump();
    EXPECT_THROW(load_run_config(dir + "/missing.json"), std::runtime_error);
}

// The distillation section: read into its struct (the teacher resolved against the config's
// folder, a base's against the base's), every bad value refused by its dotted key, and written
// back so that a run's config.json reads as the same run.
TEST(RunConfig, DistillationSectionIsCheckedAndRoundTrips) {
    std::string dir = temp_dir("qdq_config_distillation");
    fs::create_directories(dir + "/fp32");
    std::ofstream(dir + "/fp32/model.h5") << "a teacher";
    nlohmann::json c = base_config(dir);
    c["distillation"] = {{"teacher", "fp32/model.h5"}, {"temperature", 4}, {"alpha", 0.25}};
    std::ofstream(dir + "/run.json") << c.dump();
    const RunConfig parsed = load_run_config(dir + "/run.json");
    ASSERT_TRUE(parsed.distillation);
    EXPECT_EQ(fs::path(parsed.distillation->teacher), fs::absolute(dir + "/fp32/model.h5").lexically_normal());
    EXPECT_EQ(parsed.distillation->temperature, 4.0);
    EXPECT_EQ(parsed.distillation->alpha, 0.25);
    const nlohmann::json saved = run_config_to_json(parsed);
    EXPECT_EQ(saved["distillation"],
              (nlohmann::json{{"teacher", parsed.distillation->teacher}, {"temperature", 4.0}, {"alpha", 0.25}}));
    std::ofstream(dir + "/fp32/config.json") << saved.dump();  // read from another folder
    EXPECT_EQ(run_config_to_json(load_run_config(dir + "/fp32/config.json")), saved);
    EXPECT_FALSE(parse_run_config(base_config(dir), "run.json", ".").distillation);
    EXPECT_FALSE(run_config_to_json(parse_run_config(base_config(dir), "run.json", ".")).contains("distillation"));

    // Defaults: T = 1, alpha = 0.5.
    nlohmann::json defaults = c;
    defaults["distillation"] = {{"teacher", dir + "/fp32/model.h5"}};
    const RunConfig d = parse_run_config(defaults, "run.json", ".");
    EXPECT_EQ(d.distillation->temperature, 1.0);
    EXPECT_EQ(d.distillation->alpha, 0.5);

    // A base's teacher is relative to the base's folder.
    std::ofstream(dir + "/fp32/base.json") << nlohmann::json{{"distillation", {{"teacher", "model.h5"}}}}.dump();
    nlohmann::json derived = base_config(dir);
    derived["base"] = "fp32/base.json";
    std::ofstream(dir + "/derived.json") << derived.dump();
    EXPECT_EQ(load_run_config(dir + "/derived.json").distillation->teacher, parsed.distillation->teacher);

    auto with = [&](const std::string& key, nlohmann::json value) {
        nlohmann::json copy = defaults;
        copy["distillation"][key] = value;
        return error_of(copy);
    };
    EXPECT_NE(with("alpha", 1.5).find("'distillation.alpha' must be in [0, 1]"), std::string::npos);
    EXPECT_NE(with("alpha", -0.1).find("'distillation.alpha' must be in [0, 1]"), std::string::npos);
    EXPECT_NE(with("alpha", "half").find("'distillation.alpha' must be a number"), std::string::npos);
    EXPECT_NE(with("temperature", 0).find("'distillation.temperature' must be positive"), std::string::npos);
    EXPECT_NE(with("temperature", -2).find("'distillation.temperature' must be positive"), std::string::npos);
    EXPECT_NE(with("temprature", 2).find("'distillation.temprature'"), std::string::npos);
    EXPECT_NE(with("teacher", "nowhere.h5").find("'distillation.teacher' names a missing file"), std::string::npos);
    EXPECT_NE(with("teacher", "").find("'distillation.teacher' must name"), std::string::npos);
    nlohmann::json mlm = defaults;
    mlm["data"]["task"] = "mlm";
    EXPECT_NE(error_of(mlm).find("'distillation' is for data.task classification and squad, not mlm"), std::string::npos);
}

TEST(Checkpoint, RoundTripIsExactAndReplacesAtomically) {
    std::string dir = temp_dir("qdq_checkpoint");
    Checkpoint c;
    c.model = {{"bert.embeddings.word_embeddings.weight", random_tensor({5, 3}, 1)},
               {"classifier.bias", random_tensor({2}, 2)}};
    c.optimizer = {{"classifier.bias.exp_avg", random_tensor({2}, 3)},
                   {"classifier.bias.step", from_ints({}, {17})}};
    Rng rng(99);
    rng.next_u64();
    c.state.step = 17;
    c.state.loader = {2, 48};
    c.state.dropout_rng = rng.state;
    c.state.data_rng = Rng(5).state;
    c.state.best_metric = 0.875;
    c.state.best_checkpoint = "checkpoint-10.h5";
    c.config.model.init = "model.h5";
    c.config.training.seed = 1;
    std::string path = dir + "/" + checkpoint_name(17);
    save_checkpoint(path, c);
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    Checkpoint back = load_checkpoint(path);
    ASSERT_EQ(back.model.size(), 2u);
    EXPECT_EQ(back.model[0].name, "bert.embeddings.word_embeddings.weight");
    EXPECT_EQ(back.model[0].tensor.to_vector(), c.model[0].tensor.to_vector());
    EXPECT_EQ(back.optimizer[1].name, "classifier.bias.step");
    EXPECT_EQ(back.optimizer[1].tensor.to_vector(), std::vector<float>{17});
    EXPECT_EQ(back.state.step, 17);
    EXPECT_EQ(back.state.loader, (LoaderPosition{2, 48}));
    EXPECT_EQ(back.state.dropout_rng, rng.state);
    EXPECT_EQ(back.state.data_rng, Rng(5).state);
    EXPECT_EQ(back.state.best_metric, 0.875);
    EXPECT_EQ(run_config_to_json(back.config), run_config_to_json(c.config));

    // A later save over the same name replaces it whole.
    c.state.step = 18;
    save_checkpoint(path, c);
    EXPECT_EQ(load_checkpoint(path).state.step, 18);
}

TEST(Checkpoint, PruningKeepsTheNewestAndTheBest) {
    std::string dir = temp_dir("qdq_prune");
    Checkpoint c;
    c.model = {{"w", random_tensor({2}, 1)}};
    for (int64_t step : {5, 10, 15, 20}) save_checkpoint(dir + "/" + checkpoint_name(step), c);
    std::ofstream(dir + "/checkpoint-x.h5") << "not ours";
    prune_checkpoints(dir, 2, {checkpoint_name(5)});
    std::vector<std::string> left = list_checkpoints(dir);
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(fs::path(left[0]).filename(), checkpoint_name(5));
    EXPECT_EQ(fs::path(left[1]).filename(), checkpoint_name(20));
}

TEST(Checkpoint, ForeignOrDamagedFilesAreClearErrors) {
    std::string dir = temp_dir("qdq_bad_checkpoint");
    std::ofstream(dir + "/garbage.h5") << "definitely not HDF5";
    EXPECT_THROW(load_checkpoint(dir + "/garbage.h5"), std::runtime_error);
    EXPECT_THROW(load_checkpoint(dir + "/missing.h5"), std::runtime_error);
}
