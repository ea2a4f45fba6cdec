// Training-step timings at batch 32 x seq 128:
//   layer_base_train   one BERT-base encoder layer (768 hidden, 12 heads, FFN 3072),
//                      forward + backward from a given output gradient
//   step_<size>_train  a whole BERT classification step: forward, cross-entropy, backward, SGD
//   step_<size>_eval   evaluation forward (no tape, dropout off)
// for the sizes of PERF-NOTES: tiny (2 layers / 128 hidden) and mini (4 / 256).
// Usage: bench_train [--warmup N] [--steps N] [--threads N] [--only NAME]
// (--only runs the workloads whose name contains NAME)
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "bench/bert_step.h"
#include "bench/timing.h"

namespace {

using qdq::Tensor;
using qdq::bench::BertConfig;

constexpr int64_t kBatch = 32, kSeq = 128;

struct Options {
    int warmup = -1, steps = -1;  // -1: the workload's default
    std::string only;
};

int pick(int option, int fallback) { return option >= 0 ? option : fallback; }

Tensor random_normal(const qdq::Shape& shape, qdq::Rng& rng) {
    Tensor t = qdq::empty(shape);
    float* p = t.f32();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = rng.normal(0.0f, 1.0f);
    return t;
}

void bench_layer(const Options& opt) {
    const std::string name = "layer_base_train";
    if (name.find(opt.only) == std::string::npos) return;
    BertConfig c;  // BERT-base defaults
    qdq::Rng rng(7);
    std::vector<qdq::bench::Param> params;
    qdq::bench::EncoderLayer layer =
        qdq::bench::make_encoder_layer(params, "layer.", c.hidden, c.ffn, rng);
    qdq::bench::Batch batch = qdq::bench::make_batch(kBatch, kSeq, c.vocab, c.labels, rng);
    Tensor x = random_normal({kBatch, kSeq, c.hidden}, rng).set_requires_grad(true);
    Tensor grad_out = random_normal({kBatch, kSeq, c.hidden}, rng);

    qdq::bench::Timing t = qdq::bench::time_it(pick(opt.warmup, 1), pick(opt.steps, 5), [&] {
        Tensor y = qdq::bench::encoder_layer_forward(layer, x, batch.mask, c.heads, c.dropout,
                                                     c.eps, true, rng);
        qdq::backward(y, grad_out);
        for (auto& p : params) p.value.zero_grad();
        x.zero_grad();
    });
    const double C = (double)c.hidden, F = (double)c.ffn, tokens = (double)(kBatch * kSeq);
    double forward = 2.0 * tokens * (4 * C * C + 2 * C * F) + 4.0 * tokens * (double)kSeq * C;
    qdq::bench::print_row(name, t, 3.0 * forward);
}

void bench_bert(const BertConfig& config, int default_steps, const Options& opt) {
    const std::string train_name = "step_" + config.name + "_train";
    const std::string eval_name = "step_" + config.name + "_eval";
    bool train = train_name.find(opt.only) != std::string::npos;
    bool eval = eval_name.find(opt.only) != std::string::npos;
    if (!train && !eval) return;
    qdq::Rng rng(11);
    qdq::bench::Bert model = qdq::bench::make_bert(config, rng);
    qdq::bench::Batch batch =
        qdq::bench::make_batch(kBatch, kSeq, config.vocab, config.labels, rng);

    if (train) {
        std::vector<float> losses;
        qdq::bench::Timing t =
            qdq::bench::time_it(pick(opt.warmup, 2), pick(opt.steps, default_steps), [&] {
                losses.push_back(qdq::bench::train_step(model, batch, 1e-3f, rng));
            });
        // A sanity check against bench_torch.py: about ln(labels) at initialisation.
        std::printf("# %s: first loss %.4f\n", train_name.c_str(), losses.front());
        qdq::bench::print_row(train_name, t,
                              qdq::bench::bert_flops(model, kBatch, kSeq, true));
    }
    if (eval) {
        qdq::bench::Timing t =
            qdq::bench::time_it(pick(opt.warmup, 2), pick(opt.steps, default_steps),
                                [&] { qdq::bench::eval_step(model, batch, rng); });
        qdq::bench::print_row(eval_name, t, qdq::bench::bert_flops(model, kBatch, kSeq, false));
    }
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    for (int i = 1; i < argc; i += 2) {
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        if (value && !std::strcmp(argv[i], "--warmup")) opt.warmup = std::atoi(value);
        else if (value && !std::strcmp(argv[i], "--steps")) opt.steps = std::atoi(value);
        else if (value && !std::strcmp(argv[i], "--threads")) omp_set_num_threads(std::atoi(value));
        else if (value && !std::strcmp(argv[i], "--only")) opt.only = value;
        else {
            std::fprintf(stderr, "usage: %s [--warmup N] [--steps N] [--threads N] [--only NAME]\n",
                         argv[0]);
            return 2;
        }
    }
    std::printf("# bench_train (qdqtrain), %d threads, batch %lld x seq %lld, median of N steps\n",
                omp_get_max_threads(), (long long)kBatch, (long long)kSeq);
    std::printf("# gemm: %s\n", qdq::gemm_backend_description().c_str());
    qdq::bench::print_header();

    BertConfig tiny{.name = "tiny", .layers = 2, .hidden = 128, .heads = 2, .ffn = 512};
    BertConfig mini{.name = "mini", .layers = 4, .hidden = 256, .heads = 4, .ffn = 1024};
    bench_layer(opt);
    bench_bert(tiny, 10, opt);
    bench_bert(mini, 6, opt);
    return 0;
}
