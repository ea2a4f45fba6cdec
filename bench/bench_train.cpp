// Whole training steps of the product at batch 32 × seq 128, through the trainer's own
// optimizer_step (trainers/trainer.h): the task's train_loss (collate, forward through
// nn::BertFor*, loss), backward, gradient clipping at 1.0 and AdamW (weight decay 0.01 except
// biases and LayerNorm), then zero_grad;
// on the synthetic data of bench_task.h. Workloads, each FP32, as <name>_bf16 with training.bf16
// and, on a GPU, as <name>_tf32 with training.tf32:
//   step_<size>_train  classification (2 labels) fine-tuning step
//   step_<size>_qat    the same with QDQBERT's quantizers fake-quantizing (calibrated ranges)
//   step_<size>_qat_kd   QAT learning from a float teacher of the same size: the teacher's
//                        forward (off the tape) and the KL term are the difference
//   step_<size>_qat_lsq  QAT with learned step sizes (LSQ) on every quantizer
//   step_<size>_eval   evaluation forward to the loss (eval mode, no tape)
//   mlm_<size>_train   masked-LM pretraining step: 15% of tokens masked, the decoder only on
//                      the masked positions (mini only; 4,096 tokens a step)
// for tiny (2 layers / 128 hidden), mini (4 / 256) and base (12 / 768).
// Usage: bench_train [--warmup N] [--steps N] [--threads N] [--only NAME] [--use-cpu]
// (--only runs the workloads whose name contains NAME). With a GPU present the workloads run on
// it, as a run does (trainers/run_device.h); --use-cpu keeps them on the CPU (training.use_cpu),
// so one machine gives both columns. Every step ends with the loss read back, so a device step
// is timed to its end. On a GPU each training workload also prints its peak device memory (the
// model, its optimizer state and the steps' tensors, as torch.cuda.max_memory_allocated counts).
// Under mpirun the training workloads run data parallel (trainers/trainer.h): the same global
// batch of 32, each rank its share, gradients summed in buckets during backward; rank 0 prints,
// with the time a step waited for the sums. E.g. 2 ranks of 1 thread against 1 process of 2:
//   mpirun -np 2 build/bench/bench_train --threads 1 --only mini_train
//   build/bench/bench_train --threads 2 --only mini_train
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "autograd/tape.h"
#include "bench/bench_task.h"
#include "bench/timing.h"
#include "data/loader.h"
#include "parallel/communicator.h"
#include "parallel/grad_reducer.h"
#include "cuda/backend.h"
#include "trainers/run_device.h"
#include "trainers/run_precision.h"
#include "trainers/trainer.h"

namespace {

using namespace qdq;
using bench::BenchTask;
using bench::ModelSize;

struct Options {
    int warmup = -1, steps = -1;  // -1: the size's default
    std::string only;
    bool use_cpu = false;
};

int pick(int option, int fallback) { return option >= 0 ? option : fallback; }

// FLOPs of a step as PERF-NOTES counts them: 2 per multiply-add of every non-embedding
// parameter per token, plus the two attention products; × 3 with the backward pass.
double step_flops(const ModelSize& s, bool training) {
    const double C = s.hidden, F = s.ffn, T = bench::kSeq, tokens = bench::kBatch * bench::kSeq;
    const double per_layer = 2.0 * tokens * (4 * C * C + 2 * C * F) + 4.0 * tokens * T * C;
    return (training ? 3.0 : 1.0) * s.layers * per_layer;
}

// The trainer's own step (optimizer_step) on a loader whose one batch is the whole data set.
void time_training(const std::string& name, Task& task, const ModelSize& size, int warmup, int steps,
                   MatmulPrecision products) {
    nn::Module& model = task.model();
    const std::vector<ParamGroup> groups = weight_decay_groups(model.named_parameters(), 0.01);
    AdamW optimizer = make_adamw(groups, {0.9, 0.999, 1e-8});
    BatchLoader loader(task.train_size(), {.batch_size = bench::kBatch, .seed = 1});
    const TrainingSettings settings;  // max_grad_norm 1.0, one micro-batch a step
    Rng data_rng(3);
    std::vector<double> losses;
    model.train();
    MatmulPrecisionGuard precision(products);
    std::optional<GradReducer> reducer;
    if (world().size > 1) {
        std::vector<Tensor> params;
        for (const ParamGroup& g : groups)
            for (const NamedTensor& p : g.params) params.push_back(p.tensor);
        reducer.emplace(std::move(params), (int64_t)(settings.ddp_bucket_cap_mb * 1024 * 1024));
    }
    const bool on_device = model.named_parameters().front().tensor.is_cuda();
    if (on_device) cuda::reset_peak_bytes();
    bench::Timing t = bench::time_it(warmup, steps, [&] {
        losses.push_back(
            optimizer_step(task, loader, data_rng, groups, optimizer, settings, 1e-4, reducer ? &*reducer : nullptr).loss);
    });
    std::printf("# %s: first loss %.4f\n", name.c_str(), losses.front());
    if (on_device)
        std::printf("# %s: peak device memory %.0f MiB\n", name.c_str(), (double)cuda::peak_bytes_in_use() / (1 << 20));
    if (reducer)
        std::printf("# %s: %d ranks, %zu gradient buckets, waited %.1f ms a step for the sums\n", name.c_str(),
                    world().size, reducer->bucket_count(), 1e3 * reducer->wait_seconds() / (warmup + steps));
    bench::print_row(name, t, name.starts_with("mlm") ? 0.0 : step_flops(size, true));
}

void time_eval(const std::string& name, Task& task, const ModelSize& size, int warmup, int steps,
               MatmulPrecision products) {
    std::vector<int64_t> indices(task.train_size());
    for (size_t i = 0; i < indices.size(); ++i) indices[i] = (int64_t)i;
    Rng data_rng(3);
    task.model().eval();
    NoGradGuard no_grad;
    MatmulPrecisionGuard precision(products);
    bench::Timing t = bench::time_it(warmup, steps, [&] { task.train_loss(indices, data_rng).item(); });
    bench::print_row(name, t, step_flops(size, false));
}

void bench_size(const bench::BenchData& data, const ModelSize& size, int default_steps, bool mlm,
                const Options& opt) {
    const int warmup = pick(opt.warmup, 1), steps = pick(opt.steps, default_steps);
    struct Workload {
        std::string prefix;
        BenchTask task;
        bool eval;
    };
    std::vector<Workload> workloads = {{"step_" + size.name + "_train", BenchTask::Classification, false},
                                       {"step_" + size.name + "_qat", BenchTask::Qat, false},
                                       {"step_" + size.name + "_qat_kd", BenchTask::QatDistilled, false},
                                       {"step_" + size.name + "_qat_lsq", BenchTask::QatLsq, false},
                                       {"step_" + size.name + "_eval", BenchTask::Classification, true}};
    if (mlm) workloads.push_back({"mlm_" + size.name + "_train", BenchTask::MaskedLm, false});
    for (const Workload& w : workloads)
        for (bench::Products products : {bench::Products::f32, bench::Products::bf16, bench::Products::tf32}) {
            const std::string name = w.prefix + bench::products_suffix(products);
            if (name.find(opt.only) == std::string::npos) continue;
            if (w.eval && world().size > 1) continue;  // data parallel splits training only
            RunConfig config = data.config(w.task, size, products);
            config.training.use_cpu = opt.use_cpu;
            if (products == bench::Products::tf32 && run_device(config.training) == Device::CPU) continue;
            std::unique_ptr<Task> task = bench::make_bench_task(config, w.task);
            const MatmulPrecision precision = run_matmul_precision(config.training);
            if (w.eval) time_eval(name, *task, size, warmup, steps, precision);
            else time_training(name, *task, size, warmup, steps, precision);
        }
}

}  // namespace

int main(int argc, char** argv) {
    world();  // joins an mpirun job first: --threads then overrides its share of the cores
    Options opt;
    for (int i = 1; i < argc; i += 2) {
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!std::strcmp(argv[i], "--use-cpu")) {
            opt.use_cpu = true;
            --i;  // a flag without a value
        } else if (value && !std::strcmp(argv[i], "--warmup")) opt.warmup = std::atoi(value);
        else if (value && !std::strcmp(argv[i], "--steps")) opt.steps = std::atoi(value);
        else if (value && !std::strcmp(argv[i], "--threads")) omp_set_num_threads(std::atoi(value));
        else if (value && !std::strcmp(argv[i], "--only")) opt.only = value;
        else {
            std::fprintf(stderr, "usage: %s [--warmup N] [--steps N] [--threads N] [--only NAME] [--use-cpu]\n", argv[0]);
            return 2;
        }
    }
    if (!world().is_root() && !std::freopen("/dev/null", "w", stdout)) return 1;  // rank 0 reports
    std::printf("# bench_train (qdqtrain), %d threads, batch %lld x seq %lld, median of N steps\n",
                omp_get_max_threads(), (long long)bench::kBatch, (long long)bench::kSeq);
    std::printf("# gemm: %s\n", gemm_backend_description().c_str());
    std::printf("# gemm_bf16: %s\n", bf16_kernel_description().c_str());
    TrainingSettings where;
    where.use_cpu = opt.use_cpu;
    std::printf("# device: %s\n", run_device(where) == Device::CUDA ? cuda::device_description().c_str() : "the CPU");
    bench::print_header();
    bench::BenchData data;
    bench_size(data, {"tiny", 2, 128, 2, 512}, 10, false, opt);
    bench_size(data, {"mini", 4, 256, 4, 1024}, 6, true, opt);
    bench_size(data, {"base", 12, 768, 12, 3072}, 3, false, opt);
    return 0;
}
