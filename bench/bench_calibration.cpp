// What calibration costs beside the forward pass it rides on, for BERT-mini-sized activations
// (batch 64 × seq 128): collecting max and histogram statistics of a tensor against the Linear
// that consumes it, and reading each method's amax from a 2048-bin histogram.
// Usage: bench_calibration [--reps N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "bench/timing.h"
#include "quant/calibrators.h"
#include "quant/fake_quant.h"

using namespace qdq;
using namespace qdq::bench;

namespace {

Tensor activations(const Shape& shape, bool after_gelu, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    Tensor t = empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = d(gen);
    t.f32()[12345] = 9.0f;  // one outlier, as LayerNorm outputs have
    return after_gelu ? gelu(t) : t;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 5;
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    NoGradGuard no_grad;
    print_header();
    const int64_t tokens = 64 * 128;
    struct Site {
        const char* name;
        int64_t in, out;
        bool gelu;
    } sites[] = {{"hidden_256_to_256", 256, 256, false}, {"gelu_1024_to_256", 1024, 256, true}};
    for (const Site& s : sites) {
        Tensor x = activations({tokens, s.in}, s.gelu, 1);
        Tensor w = activations({s.out, s.in}, false, 2), b = zeros({s.out});
        const double flops = 2.0 * (double)tokens * (double)s.in * (double)s.out;
        print_row(std::string(s.name) + "/linear", time_it(1, reps, [&] { linear(x, w, b); }), flops);
        print_row(std::string(s.name) + "/max_collect", time_it(1, reps, [&] {
                      MaxCalibrator c;
                      collect(c, x);
                  }), 0);
        HistogramCalibrator warm;
        collect(warm, x);
        print_row(std::string(s.name) + "/histogram_collect", time_it(1, reps, [&] {
                      HistogramCalibrator c = warm;
                      collect(c, x);
                  }), 0);
        print_row(std::string(s.name) + "/fake_quant", time_it(1, reps, [&] { fake_quant(x, full({}, 4.0f), {}); }), 0);
        print_row(std::string(s.name) + "/amax_percentile", time_it(1, reps, [&] { percentile_amax(warm, 99.99); }), 0);
        print_row(std::string(s.name) + "/amax_mse", time_it(0, reps, [&] { mse_amax(warm); }), 0);
        print_row(std::string(s.name) + "/amax_entropy", time_it(0, reps, [&] { entropy_amax(warm); }), 0);
    }
    return 0;
}
