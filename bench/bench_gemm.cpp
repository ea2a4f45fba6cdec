// Achieved GFLOP/s of qdq::gemm on the products of BERT-base's linear layers at 4096 tokens
// (batch 32 x seq 128), in the three orientations that linear() uses:
//   forward      y[M, out]  = x[M, in] · Wᵀ            (trans_b)
//   grad_input   dx[M, in]  = dy[M, out] · W[out, in]   (no transposes)
//   grad_weight  dW[out, in] = dyᵀ[out, M] · x[M, in]   (trans_a)
// each in FP32 (qdq::gemm) and, as <name>_bf16, with bf16 operands (qdq::gemm_bf16) where this
// CPU has a bf16 kernel.
// Usage: bench_gemm [--warmup N] [--reps N] [--threads N] [--only NAME]
// (--only runs the products whose name contains NAME)
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "autograd/rng.h"
#include "bench/timing.h"

namespace {

struct Product {
    std::string name;
    bool trans_a, trans_b;
    int64_t M, N, K;
};

std::vector<float> random_buffer(int64_t n, qdq::Rng& rng) {
    std::vector<float> v((size_t)n);
    for (float& x : v) x = rng.uniform() - 0.5f;
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    int warmup = 2, reps = 10;
    std::string only;
    for (int i = 1; i < argc; i += 2) {
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        if (value && !std::strcmp(argv[i], "--warmup")) warmup = std::atoi(value);
        else if (value && !std::strcmp(argv[i], "--reps")) reps = std::atoi(value);
        else if (value && !std::strcmp(argv[i], "--threads")) omp_set_num_threads(std::atoi(value));
        else if (value && !std::strcmp(argv[i], "--only")) only = value;
        else {
            std::fprintf(stderr, "usage: %s [--warmup N] [--reps N] [--threads N] [--only NAME]\n",
                         argv[0]);
            return 2;
        }
    }

    constexpr int64_t tokens = 4096;
    // (in, out) of BERT-base's linear layers: Q/K/V/attention output, intermediate, output.
    const int64_t layers[3][2] = {{768, 768}, {768, 3072}, {3072, 768}};
    std::vector<Product> products;
    for (auto& [in, out] : layers) {
        std::string io = std::to_string(in) + "x" + std::to_string(out);
        products.push_back({"gemm_fwd_" + io, false, true, tokens, out, in});
        products.push_back({"gemm_dx_" + io, false, false, tokens, in, out});
        products.push_back({"gemm_dw_" + io, true, false, out, in, tokens});
    }

    std::printf("# bench_gemm (qdqtrain), %d threads, median of %d after %d warm-up\n",
                omp_get_max_threads(), reps, warmup);
    std::printf("# gemm: %s\n", qdq::gemm_backend_description().c_str());
    std::printf("# gemm_bf16: %s\n", qdq::bf16_kernel_description().c_str());
    const bool bf16 = qdq::bf16_kernel() != qdq::Bf16Kernel::None;
    std::printf("# gemm_<fwd|dx|dw>_<in>x<out>: fwd = x·Wᵀ [%lld x out x in], dx = dy·W "
                "[%lld x in x out], dw = dyᵀ·x [out x in x %lld] (M x N x K)\n",
                (long long)tokens, (long long)tokens, (long long)tokens);
    qdq::bench::print_header();

    qdq::Rng rng(1);
    for (const Product& p : products) {
        if (p.name.find(only) == std::string::npos) continue;
        // Stored shapes: A is [M, K] or, transposed, [K, M]; B is [K, N] or [N, K].
        int64_t lda = p.trans_a ? p.M : p.K;
        int64_t ldb = p.trans_b ? p.K : p.N;
        std::vector<float> a = random_buffer(p.M * p.K, rng), b = random_buffer(p.K * p.N, rng);
        std::vector<float> c((size_t)(p.M * p.N));
        qdq::bench::Timing t = qdq::bench::time_it(warmup, reps, [&] {
            qdq::gemm(p.trans_a, p.trans_b, p.M, p.N, p.K, 1.0f, a.data(), lda, b.data(), ldb,
                      0.0f, c.data(), p.N);
        });
        const double flops = 2.0 * (double)p.M * (double)p.N * (double)p.K;
        qdq::bench::print_row(p.name, t, flops);
        if (!bf16) continue;
        t = qdq::bench::time_it(warmup, reps, [&] {
            qdq::gemm_bf16(p.trans_a, p.trans_b, p.M, p.N, p.K, 1.0f, a.data(), lda, b.data(),
                           ldb, 0.0f, c.data(), p.N);
        });
        qdq::bench::print_row(p.name + "_bf16", t, flops);
    }
    return 0;
}
