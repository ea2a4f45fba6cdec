// Whole runs on the device, as a GPU user gets them: training (the tiny classification task,
// dropout on), the SQuAD and masked-LM heads, calibration, QAT (PQ's STE, LSQ), distillation,
// bf16 products and the pipeline each end where the same run on the CPU (training.use_cpu)
// ends, within float rounding; a checkpoint written on one device resumes on the other.
// Here the device is the emulated one (cuda/emulated/, the test build the suite also makes):
// its memory is closed to host code, so a host read of a device tensor anywhere in these paths
// fails. Without a device every test skips, saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "autograd/gemm_bf16.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "io/hdf5_weights.h"
#include "nn/heads.h"
#include "report/pipeline_rows.h"
#include "stages/calibrate.h"
#include "stages/pipeline.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"
#include "tests/support/metrics_records.h"
#include "tests/support/mpirun.h"
#include "tests/support/scoped_environment.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/run_device.h"
#include "trainers/trainer.h"

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

#define REQUIRE_CUDA_DEVICE()                                                               \
    do {                                                                                    \
        if (cuda::device_count() == 0)                                                      \
            GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")"; \
    } while (0)

namespace {

RunConfig parse(const nlohmann::json& raw) { return parse_run_config(raw, "test.json", "."); }

nlohmann::json on_cpu(nlohmann::json raw) {
    raw["training"]["use_cpu"] = true;
    return raw;
}

// The tiny task with dropout, so that the device's masks must be the CPU's.
nlohmann::json device_config(const TempDir& dir, const std::string& out) {
    nlohmann::json raw = tiny_config(dir, out);
    raw["model"]["config"]["hidden_dropout_prob"] = 0.1;
    return raw;
}

TrainOutcome train_run(const nlohmann::json& raw) {
    const RunConfig config = parse(raw);
    std::unique_ptr<Task> task = make_task(config, {true, true});
    return train(config, *task, {});
}

// Two saved models agree tensor by tensor within float rounding of a few steps.
void expect_close_weights(const fs::path& a, const fs::path& b, float rtol = 2e-4f, float atol = 2e-5f) {
    SCOPED_TRACE(a.parent_path().filename().string() + " against " + b.parent_path().filename().string());
    Hdf5Weights x = load_hdf5_weights(a.string()), y = load_hdf5_weights(b.string());
    ASSERT_EQ(x.tensors.size(), y.tensors.size());
    for (size_t i = 0; i < x.tensors.size(); ++i) {
        ASSERT_EQ(x.tensors[i].name, y.tensors[i].name);
        expect_close(x.tensors[i].tensor, y.tensors[i].tensor, rtol, atol, x.tensors[i].name.c_str());
    }
}

}  // namespace

TEST(DeviceRun, TrainingOnTheDeviceEndsWhereTheCpuRunEnds) {
    REQUIRE_CUDA_DEVICE();
    TempDir dir;
    write_task_files(dir);
    const RunConfig config = parse(device_config(dir, "gpu"));
    ASSERT_EQ(run_device(config.training), Device::CUDA);
    std::unique_ptr<Task> task = make_task(config, {true, true});
    for (const NamedTensor& p : task->model().named_parameters()) ASSERT_TRUE(p.tensor.is_cuda()) << p.name;
    const TrainOutcome gpu = train(config, *task, {});
    ASSERT_EQ(gpu.status, TrainStatus::finished);
    const TrainOutcome cpu = train_run(on_cpu(device_config(dir, "cpu")));
    ASSERT_EQ(cpu.status, TrainStatus::finished);
    EXPECT_EQ(gpu.metrics.scores.at("accuracy"), cpu.metrics.scores.at("accuracy"));
    EXPECT_NEAR(gpu.metrics.scores.at("eval_loss"), cpu.metrics.scores.at("eval_loss"), 1e-4);
    expect_close_weights(dir.path() / "gpu" / "model.h5", dir.path() / "cpu" / "model.h5");
}

// The device's checkpoint at step 8 finishes on the CPU, and the CPU's on the device; each ends
// where the run it came from ended.
TEST(DeviceRun, ACheckpointResumesOnTheOtherDevice) {
    REQUIRE_CUDA_DEVICE();
    TempDir dir;
    write_task_files(dir);
    ASSERT_EQ(train_run(device_config(dir, "gpu")).status, TrainStatus::finished);
    ASSERT_EQ(train_run(on_cpu(device_config(dir, "cpu"))).status, TrainStatus::finished);
    for (const auto& [from, to_cpu] : {std::pair{"gpu", true}, std::pair{"cpu", false}}) {
        const std::string moved = std::string(from) + "_moved";
        fs::create_directories(dir.path() / moved);
        fs::copy_file(dir.path() / from / checkpoint_name(8), dir.path() / moved / checkpoint_name(8));
        nlohmann::json raw = device_config(dir, moved);
        if (to_cpu) raw = on_cpu(raw);
        const RunConfig config = parse(raw);
        std::unique_ptr<Task> task = make_task(config, {true, true});
        ASSERT_EQ(train(config, *task, {}).status, TrainStatus::finished) << moved;
        std::ifstream log(dir.path() / moved / "metrics.jsonl");
        std::string first_record;
        std::getline(log, first_record);
        EXPECT_NE(first_record.find("\"step\":9"), std::string::npos) << moved << " did not resume: " << first_record;
        expect_close_weights(dir.path() / moved / "model.h5", dir.path() / from / "model.h5");
    }
}

// One training batch of each head on both devices: the loss and every parameter's gradient.
TEST(DeviceRun, SquadAndMaskedLmHeadsGiveTheCpusLossAndGradients) {
    REQUIRE_CUDA_DEVICE();
    nn::BertConfig c;
    c.vocab_size = 40, c.hidden_size = 16, c.num_hidden_layers = 2, c.num_attention_heads = 2;
    c.intermediate_size = 24, c.max_position_embeddings = 16, c.hidden_dropout_prob = 0.1f;
    nn::BertInputs in{from_ints({2, 7}, {2, 11, 12, 13, 3, 0, 0, 2, 21, 22, 23, 24, 25, 3}), Tensor(),
                      from_ints({2, 7}, {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1})};
    const Tensor starts = from_ints({2}, {1, 9}), ends = from_ints({2}, {3, 4});  // 9: outside, ignored
    const Tensor mlm_labels = from_ints({2, 7}, {-100, 11, -100, -100, -100, -100, -100, -100, -100, 30, -100, 24, -100, -100});
    auto gradients = [&](nn::Module& model, Device device, const std::function<Tensor()>& loss) {
        model.move_to(device);
        model.train();
        Tensor l = loss();
        backward(l);
        NamedTensors out{{"loss", l.cpu()}};
        for (const NamedTensor& p : model.named_parameters())
            if (p.tensor.grad().defined()) out.push_back({p.name, p.tensor.grad().cpu()});
        return out;
    };
    auto compare = [](const NamedTensors& gpu, const NamedTensors& cpu) {
        ASSERT_EQ(gpu.size(), cpu.size());
        for (size_t i = 0; i < gpu.size(); ++i) expect_close(gpu[i].tensor, cpu[i].tensor, 1e-4f, 1e-5f, gpu[i].name.c_str());
    };
    for (int head = 0; head < 2; ++head) {
        NamedTensors by_device[2];
        for (Device device : {Device::CUDA, Device::CPU}) {
            Rng init(11);
            NamedTensors& out = by_device[device == Device::CPU];
            if (head == 0) {
                nn::BertForQuestionAnswering qa(c, init);
                out = gradients(qa, device, [&] { return nn::BertForQuestionAnswering::loss(qa.forward(in), starts, ends); });
            } else {
                nn::BertForMaskedLM mlm(c, init);
                out = gradients(mlm, device, [&] {
                    nn::MaskedLMLogits m = mlm.forward_masked(in, mlm_labels);
                    return nn::BertForMaskedLM::loss(m.logits, m.labels);
                });
            }
        }
        compare(by_device[0], by_device[1]);
    }
}

// PTQ by every method on both devices gives the same ranges (max: the same floats; the
// histogram methods: within a bin) and the same metrics, and QAT from the device's max
// checkpoint ends where the CPU's does, with PQ's STE and with LSQ's learned ranges.
TEST(DeviceRun, CalibrationAndQatOnTheDeviceMatchTheCpu) {
    REQUIRE_CUDA_DEVICE();
    TempDir dir;
    write_task_files(dir);
    ASSERT_EQ(train_run(device_config(dir, "fp32")).status, TrainStatus::finished);
    CalibrationResult results[2];
    for (bool cpu : {false, true}) {
        nlohmann::json raw = device_config(dir, cpu ? "calib_cpu" : "calib_gpu");
        raw["model"]["init"] = (dir.path() / "fp32" / "model.h5").string();
        raw["quantization"] = {{"calibration_examples", 32}};
        if (cpu) raw = on_cpu(raw);
        const RunConfig config = parse(raw);
        std::unique_ptr<Task> task = make_task(config, {true, true});
        results[cpu] = calibrate(config, *task, {.sensitivity = Sensitivity::none, .all_methods = true});
    }
    ASSERT_EQ(results[0].methods.size(), results[1].methods.size());
    for (size_t m = 0; m < results[0].methods.size(); ++m) {
        const CalibratedMethod &gpu = results[0].methods[m], &cpu = results[1].methods[m];
        EXPECT_EQ(gpu.metrics.scores.at("accuracy"), cpu.metrics.scores.at("accuracy")) << gpu.name;
        Hdf5Weights g = load_hdf5_weights(gpu.checkpoint), h = load_hdf5_weights(cpu.checkpoint);
        ASSERT_EQ(g.tensors.size(), h.tensors.size());
        const float rtol = gpu.name == "max" ? 1e-5f : 2e-2f;
        for (size_t i = 0; i < g.tensors.size(); ++i)
            if (g.tensors[i].name.find("_amax") != std::string::npos)
                expect_close(g.tensors[i].tensor, h.tensors[i].tensor, rtol, 0.0f, (gpu.name + " " + g.tensors[i].name).c_str());
    }
    // QAT with PQ's clipped STE, and with LSQ's learned step sizes (per channel for weights).
    for (bool lsq : {false, true}) {
        const std::string name = lsq ? "lsq" : "qat";
        for (bool cpu : {false, true}) {
            nlohmann::json raw = device_config(dir, name + (cpu ? "_cpu" : "_gpu"));
            raw["model"]["init"] = (dir.path() / "calib_gpu" / "max" / "ranges.h5").string();
            raw["quantization"] = {{"calibration_examples", 32}};
            if (lsq)
                raw["quantization"] = {{"input", {{"calib_method", "histogram"}, {"learn_step_size", true}}},
                                       {"weight", {{"axis", 0}, {"learn_step_size", true}}}};
            raw["training"]["learning_rate"] = 1e-3;
            raw["training"]["max_steps"] = 4;
            ASSERT_EQ(train_run(cpu ? on_cpu(raw) : raw).status, TrainStatus::finished) << name;
        }
        expect_close_weights(dir.path() / (name + "_gpu") / "model.h5", dir.path() / (name + "_cpu") / "model.h5");
    }
}

// The whole pipeline with the GPU present: FP32, calibration, QAT on the device, the exports from
// host copies, ONNX Runtime scoring the exported models. Every row agrees with the CPU's pipeline
// to within one evaluation example, and ONNX Runtime's INT8 model scores as the device's QAT model.
TEST(DeviceRun, ThePipelineRunsOnTheDeviceAsOnTheCpu) {
    REQUIRE_CUDA_DEVICE();
    TempDir dir;
    write_task_files(dir);
    PipelineResults results[2];
    for (bool cpu : {false, true}) {
        nlohmann::json raw = device_config(dir, cpu ? "pipe_cpu" : "pipe_gpu");
        raw["quantization"] = {{"calibration_examples", 16}};
        raw["pipeline"] = {{"validation_fraction", 0.25}, {"qat_num_train_epochs", 0.25}};
        const PipelineOutcome outcome = run_pipeline(parse(cpu ? on_cpu(raw) : raw));
        ASSERT_TRUE(outcome.finished);
        results[cpu] = outcome.results;
    }
    const std::vector<PipelineRow> gpu = pipeline_rows(results[0]), cpu = pipeline_rows(results[1]);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < gpu.size(); ++i) {
        EXPECT_EQ(gpu[i].model, cpu[i].model);
        EXPECT_NEAR(gpu[i].metrics.scores.at("accuracy"), cpu[i].metrics.scores.at("accuracy"), 1.0 / 32 + 1e-9)
            << gpu[i].model;
    }
    ASSERT_TRUE(results[0].onnx);
    EXPECT_NEAR(results[0].onnx->int8.metrics.scores.at("accuracy"), results[0].qat.scores.at("accuracy"),
                1.0 / 32 + 1e-9);
}

// Distillation on the device (the teacher beside the student, the KL on the device) ends where
// the CPU's does, in FP32 and with bf16 products (which this device has: device_gaps is empty).
TEST(DeviceRun, DistillationWithAndWithoutBf16OnTheDeviceMatchesTheCpu) {
    REQUIRE_CUDA_DEVICE();
    TempDir dir;
    write_task_files(dir);
    ASSERT_EQ(train_run(on_cpu(device_config(dir, "teacher"))).status, TrainStatus::finished);
    for (bool bf16 : {false, true})
        for (bool cpu : {false, true}) {
            const std::string name = std::string(bf16 ? "bf16" : "kd") + (cpu ? "_cpu" : "_gpu");
            nlohmann::json raw = device_config(dir, name);
            raw["distillation"] = {{"teacher", (dir.path() / "teacher" / "model.h5").string()}, {"temperature", 2.0}};
            raw["training"]["max_steps"] = 6;
            raw["training"]["bf16"] = bf16;
            const RunConfig config = parse(cpu ? on_cpu(raw) : raw);
            if (!cpu) {
                EXPECT_TRUE(device_gaps(config).empty());
            }
            std::unique_ptr<Task> task = make_task(config, {true, true});
            ASSERT_EQ(train(config, *task, {}).status, TrainStatus::finished) << name;
        }
    expect_close_weights(dir.path() / "kd_gpu" / "model.h5", dir.path() / "kd_cpu" / "model.h5");
    // bf16 on the CPU rounds as the device does only where the CPU has a bf16 kernel. Weights are
    // no measure here: an operand one FP32 ulp apart can round to bf16 values 2^-8 apart, and
    // AdamW turns such a difference in a near-zero gradient into a step of the learning rate's
    // size. The losses along the way agree (tests/test_cuda.cpp shows the rounding itself exact).
    if (bf16_kernel() != Bf16Kernel::None) {
        const std::vector<nlohmann::json> gpu = metrics_records(dir.path() / "bf16_gpu"), cpu = metrics_records(dir.path() / "bf16_cpu");
        ASSERT_EQ(gpu.size(), cpu.size());
        for (size_t i = 0; i < gpu.size(); ++i)
            for (const char* key : {"loss", "eval_loss"})
                if (cpu[i].contains(key)) {
                    EXPECT_NEAR(gpu[i][key].get<double>(), cpu[i][key].get<double>(), 1e-3 * std::fabs(cpu[i][key].get<double>()))
                        << key << " at step " << cpu[i]["step"];
                }
    }
}

// training.tf32 on the device: the run goes there (the emulated device has compute capability
// 8.0) and its products read 10-bit operands, so its losses part from the FP32 run's, within
// what that allows. On the CPU, with or without a GPU beside it, the run is refused before it
// starts, naming the key, as Hugging Face's Trainer refuses tf32 without such a GPU.
TEST(DeviceRun, Tf32RunsOnTheDeviceAndIsRefusedOnTheCpu) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json tf32 = device_config(dir, "tf32");
    tf32["training"]["tf32"] = true;
    expect_error([&] { make_task(parse(on_cpu(tf32)), {true, true}); }, {"test.json", "training.tf32", "CPU"});
    REQUIRE_CUDA_DEVICE();
    const RunConfig config = parse(tf32);
    EXPECT_TRUE(device_gaps(config).empty());
    ASSERT_EQ(train_run(tf32).status, TrainStatus::finished);
    ASSERT_EQ(train_run(device_config(dir, "f32")).status, TrainStatus::finished);
    const std::vector<nlohmann::json> tf32_records = metrics_records(dir.path() / "tf32");
    const std::vector<nlohmann::json> f32_records = metrics_records(dir.path() / "f32");
    ASSERT_EQ(tf32_records.size(), f32_records.size());
    bool parted = false;
    for (size_t i = 0; i < f32_records.size(); ++i)
        if (f32_records[i].contains("loss")) {
            const double a = tf32_records[i]["loss"].get<double>(), b = f32_records[i]["loss"].get<double>();
            EXPECT_NEAR(a, b, 1e-2 * std::fabs(b)) << "at step " << f32_records[i]["step"];
            parted = parted || a != b;
        }
    EXPECT_TRUE(parted) << "the TF32 run's losses are the FP32 run's to the last bit";
}

// Data parallel on devices: two ranks under mpirun, each on its GPU (here each its emulated
// device), gradients staged through the host and summed, end where one CPU process of the
// whole batch ends (dropout off: each rank draws its own masks).
TEST(DeviceRun, TwoRanksOnDevicesEndWhereOneCpuProcessEnds) {
    REQUIRE_CUDA_DEVICE();
    if (skip_without_mpirun()) return;
    TempDir dir;
    write_task_files(dir);
    auto config = [&](const std::string& out) {
        nlohmann::json raw = tiny_config(dir, out);
        raw["model"]["config"]["hidden_dropout_prob"] = 0.0;
        raw["model"]["config"]["attention_probs_dropout_prob"] = 0.0;
        raw["training"]["per_device_train_batch_size"] = 4;  // a global batch of 8, as below
        return raw;
    };
    const Process two = train_on_two_ranks(dir.write("two.json", config("two").dump()));
    ASSERT_EQ(two.status, 0) << two.output;
    EXPECT_NE(two.output.find("running on the GPU"), std::string::npos) << two.output;
    EXPECT_NE(two.output.find("data parallel: 2 ranks"), std::string::npos) << two.output;
    nlohmann::json one = on_cpu(config("one"));
    one["training"]["per_device_train_batch_size"] = 8;
    ASSERT_EQ(train_run(one).status, TrainStatus::finished);
    expect_close_weights(dir.path() / "two" / "model.h5", dir.path() / "one" / "model.h5");
}

// A GPU that is there and cannot be used (an emulated driver 12.2 under the runtime's 13.0)
// stops a run that would go on it before any data is read, naming the runtime's error and the
// ways out; with training.use_cpu the run goes to the CPU. Emulated only: a real driver is what
// it is.
TEST(DeviceRun, AnOldDriverStopsARunThatWouldGoOnTheGpu) {
    REQUIRE_CUDA_DEVICE();
    if (cuda::device_description().find("emulated") == std::string::npos) GTEST_SKIP() << "a real device";
    TempDir dir;
    write_task_files(dir);
    const ScopedEnvironment old_driver("QDQ_EMULATED_DRIVER", "12020");
    EXPECT_EQ(cuda::device_count(), 0);
    expect_error([&] { make_task(parse(device_config(dir, "gpu")), {true, true}); },
                 {"test.json", "the GPU cannot be used", "cudaErrorInsufficientDriver", "driver 12.2, runtime 13.0",
                  "training.use_cpu"});
    EXPECT_FALSE(fs::exists(dir.path() / "gpu"));
    EXPECT_EQ(train_run(on_cpu(device_config(dir, "cpu"))).status, TrainStatus::finished);
}

// Distillation on two ranks of a machine with two GPUs (emulated): each rank takes its GPU
// before its student and teacher are built, so that both live there (a device chosen after
// memory is held is refused), and the run ends where one CPU process of the whole batch ends.
TEST(DeviceRun, DistillationOnTwoRanksPutsEachRanksTeacherOnItsOwnGpu) {
    REQUIRE_CUDA_DEVICE();
    if (cuda::device_description().find("emulated") == std::string::npos) GTEST_SKIP() << "a real device";
    if (skip_without_mpirun()) return;
    TempDir dir;
    write_task_files(dir);
    ASSERT_EQ(train_run(on_cpu(tiny_config(dir, "teacher"))).status, TrainStatus::finished);
    auto config = [&](const std::string& out, int batch) {
        nlohmann::json raw = tiny_config(dir, out);
        raw["model"]["config"]["hidden_dropout_prob"] = 0.0;
        raw["model"]["config"]["attention_probs_dropout_prob"] = 0.0;
        raw["training"]["per_device_train_batch_size"] = batch;
        raw["distillation"] = {{"teacher", (dir.path() / "teacher" / "model.h5").string()}, {"temperature", 2.0}};
        return raw;
    };
    const Process two = run_command("QDQ_EMULATED_DEVICES=2 " + std::string(kMpirun) + QDQTRAIN_PATH + " train " +
                                    dir.write("two.json", config("two", 4).dump()));
    ASSERT_EQ(two.status, 0) << two.output;
    EXPECT_NE(two.output.find("data parallel: 2 ranks"), std::string::npos) << two.output;
    ASSERT_EQ(train_run(on_cpu(config("one", 8))).status, TrainStatus::finished);
    expect_close_weights(dir.path() / "two" / "model.h5", dir.path() / "one" / "model.h5");
}
