// The CUDA kernels (cuda/kernels/*.cuh) compiled by g++ and run on host threads, one per CUDA
// thread (cuda/host_threads.h), against the CPU ops that training runs today: the same text nvcc
// compiles for the device, checked here where there is no GPU. Awkward row lengths (1, 31, 33,
// 77, 768: less than a warp, a warp ± 1, several warps and a tail) at two block sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/ops.h"
#include "autograd/rng.h"
#include "autograd/tape.h"
#include "cuda/gemm_contract.h"
#include "cuda/kernels/calibration.cuh"
#include "cuda/kernels/cross_entropy.cuh"
#include "cuda/kernels/dropout.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/embedding.cuh"
#include "cuda/kernels/fake_quant.cuh"
#include "cuda/kernels/grad_norm.cuh"
#include "cuda/kernels/layernorm.cuh"
#include "cuda/kernels/optimizer.cuh"
#include "cuda/kernels/softmax.cuh"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "quant/calibrators.h"
#include "quant/fake_quant.h"
#include "tests/support/expect_error.h"

using namespace qdq;
using qdq::testing::expect_error;

namespace {

const int64_t kLengths[] = {1, 31, 33, 77, 768};
const unsigned kBlocks[] = {32, 128};

std::vector<float> uniform(int64_t n, uint64_t seed, float scale) {
    Rng rng(seed);
    std::vector<float> v((size_t)n);
    for (float& x : v) x = scale * (2.0f * rng.uniform() - 1.0f);
    return v;
}

// |a − b| ≤ atol + rtol·|b| everywhere.
void expect_close(const std::vector<float>& a, const std::vector<float>& b, float atol, float rtol, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i)
        ASSERT_LE(std::fabs(a[i] - b[i]), atol + rtol * std::fabs(b[i])) << what << " at " << i << ": " << a[i] << " vs " << b[i];
}

}  // namespace

TEST(CudaKernelsOnHost, AddEqualsTheCpuAddBitForBit) {
    for (int64_t n : kLengths)
        for (unsigned block : kBlocks) {
            const std::vector<float> a = uniform(n, 1, 3.0f), b = uniform(n, 2, 3.0f);
            std::vector<float> out((size_t)n, NAN);
            cuda::for_each(n, cuda::AddOp{out.data(), a.data(), b.data()}, block);
            EXPECT_EQ(out, add(from_vector({n}, a), from_vector({n}, b)).to_vector()) << n << " / " << block;
        }
}

// The CPU's GELU uses its own exp and erfc approximations (autograd/ops/vector_math.h), the
// kernel the C library's: within a few float ulps, the far tails included.
TEST(CudaKernelsOnHost, GeluForwardAndBackwardMatchTheCpuOp) {
    for (int64_t n : kLengths)
        for (unsigned block : kBlocks) {
            const std::vector<float> x = uniform(n, 3, 9.0f), dy = uniform(n, 4, 1.0f);
            std::vector<float> y((size_t)n), dx((size_t)n, 0.0f);
            cuda::for_each(n, cuda::GeluForwardOp{y.data(), x.data()}, block);
            cuda::for_each(n, cuda::GeluBackwardOp{dx.data(), dy.data(), x.data()}, block);
            Tensor xt = from_vector({n}, x).set_requires_grad();
            Tensor yt = gelu(xt);
            backward(yt, from_vector({n}, dy));
            const std::string what = std::to_string(n) + " / " + std::to_string(block);
            expect_close(y, yt.to_vector(), 1e-7f, 4e-7f, "gelu " + what);
            expect_close(dx, xt.grad().to_vector(), 1e-7f, 4e-7f, "gelu' " + what);
        }
}

// Attention's use: rows of C with a scale and an additive padding mask per row.
TEST(CudaKernelsOnHost, SoftmaxRowsForwardAndBackwardMatchTheCpuOp) {
    const int64_t rows = 3;
    for (int64_t C : kLengths)
        for (unsigned block : kBlocks)
            for (bool masked : {false, true}) {
                const std::vector<float> x = uniform(rows * C, 5, 6.0f), dy = uniform(rows * C, 6, 1.0f);
                std::vector<float> mask((size_t)(rows * C), 0.0f);
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t j = C - r; j < C; ++j)
                        if (masked && j > 0) mask[(size_t)(r * C + j)] = -10000.0f;  // r padded keys
                std::vector<int64_t> mask_rows = {0, C, 2 * C};
                std::vector<float> y((size_t)(rows * C)), dx((size_t)(rows * C), 0.0f);
                cuda::softmax_forward(y.data(), x.data(), masked ? mask.data() : nullptr, mask_rows.data(), 0.125f, rows, C, block);
                cuda::softmax_backward(dx.data(), dy.data(), y.data(), 0.125f, rows, C, block);
                Tensor xt = from_vector({rows, C}, x).set_requires_grad();
                Tensor yt = masked ? softmax(xt, 0.125f, from_vector({rows, C}, mask)) : softmax(xt, 0.125f);
                backward(yt, from_vector({rows, C}, dy));
                const std::string what = std::to_string(C) + " / " + std::to_string(block) + (masked ? " masked" : "");
                expect_close(y, yt.to_vector(), 1e-8f, 2e-6f, "softmax " + what);
                expect_close(dx, xt.grad().to_vector(), 1e-8f, 1e-5f, "softmax' " + what);
            }
}

// One key, one mask: the kernel drops exactly the elements the CPU op drops (same counter hash),
// and the backward lets through exactly the kept ones.
TEST(CudaKernelsOnHost, DropoutMasksEqualTheCpuOpsBitForBit) {
    for (int64_t n : kLengths)
        for (unsigned block : kBlocks) {
            const std::vector<float> x = uniform(n, 7, 2.0f), dy = uniform(n, 8, 1.0f);
            const float p = 0.3f, scale = 1.0f / (1.0f - p);
            Rng cpu_rng(11);
            Tensor xt = from_vector({n}, x).set_requires_grad();
            Tensor yt = dropout(xt, p, true, cpu_rng);
            backward(yt, from_vector({n}, dy));
            const uint64_t key = Rng(11).next_u64();  // the one draw the op made
            std::vector<float> y((size_t)n), dx((size_t)n, 0.0f);
            cuda::for_each(n, cuda::DropoutForwardOp{y.data(), x.data(), key, p, scale}, block);
            cuda::for_each(n, cuda::DropoutBackwardOp{dx.data(), dy.data(), key, p, scale}, block);
            EXPECT_EQ(y, yt.to_vector()) << n << " / " << block;
            EXPECT_EQ(dx, xt.grad().to_vector()) << n << " / " << block;
        }
}

// Ids with repeats (row 2 three times): the gathered rows exactly, and the scattered gradient
// exactly too, since the gradient rows hold small integers whose sums are exact in any order;
// with row 2 as the padding row too, whose gradient then stays zero on both sides.
TEST(CudaKernelsOnHost, EmbeddingGatherAndScatterAddMatchTheCpuOp) {
    for (int64_t padding_idx : {kNoPadding, int64_t{2}})
        for (int64_t C : kLengths) {
            const int64_t V = 5;
            const std::vector<int32_t> ids = {2, 0, 2, 4, 2, 1};
            const int64_t n = (int64_t)ids.size();
            const std::vector<float> weight = uniform(V * C, 9, 1.0f);
            std::vector<float> dout((size_t)(n * C));
            for (size_t i = 0; i < dout.size(); ++i) dout[i] = (float)(i % 5) - 2.0f;
            Tensor w = from_vector({V, C}, weight).set_requires_grad();
            Tensor id_tensor = empty({n}, DType::I32);
            std::copy(ids.begin(), ids.end(), id_tensor.i32());
            Tensor out = embedding(w, id_tensor, padding_idx);
            backward(out, from_vector({n, C}, dout));
            std::vector<float> gathered((size_t)(n * C)), dweight((size_t)(V * C), 0.0f);
            cuda::for_each(n * C, cuda::EmbeddingForwardOp{gathered.data(), weight.data(), ids.data(), C}, 64);
            cuda::for_each(n * C, cuda::EmbeddingBackwardOp{dweight.data(), dout.data(), ids.data(), C, padding_idx}, 64);
            EXPECT_EQ(gathered, out.to_vector()) << C;
            EXPECT_EQ(dweight, w.grad().to_vector()) << C << " padding_idx " << padding_idx;
            if (padding_idx == 2) {
                EXPECT_EQ(std::vector<float>(dweight.begin() + 2 * C, dweight.begin() + 3 * C), std::vector<float>((size_t)C, 0.0f));
            }
        }
}

// The element update is one function for both sides: the kernel's step equals adamw_step's bit
// for bit, weight decay and bias correction included, over three steps.
TEST(CudaKernelsOnHost, AdamWStepEqualsTheCpuOptimizerBitForBit) {
    const int64_t n = 77;
    const AdamWOptions options;
    std::vector<float> param = uniform(n, 12, 1.0f), m((size_t)n, 0.0f), v((size_t)n, 0.0f);
    Tensor p = from_vector({n}, param).set_requires_grad();
    AdamW cpu = make_adamw({{{{"w", p}}, 0.01}}, options);
    for (int64_t t = 1; t <= 3; ++t) {
        const std::vector<float> grad = uniform(n, 20 + (uint64_t)t, 0.5f);
        p.zero_grad();
        std::copy(grad.begin(), grad.end(), p.grad_buffer().f32());
        adamw_step(cpu, 1e-3);
        cuda::for_each(n, cuda::AdamWOp{param.data(), m.data(), v.data(), grad.data(), adamw_scalars(options, 1e-3, 0.01, t)}, 32);
        EXPECT_EQ(param, p.to_vector()) << "step " << t;
        EXPECT_EQ(m, cpu.state[0].tensor.to_vector()) << "step " << t;
        EXPECT_EQ(v, cpu.state[1].tensor.to_vector()) << "step " << t;
    }
}

// Add & Norm over rows with a large mean and a small spread (the centring matters), forward and
// backward into both addends, γ and β, against the CPU op. Row sums run in another order.
TEST(CudaKernelsOnHost, AddLayerNormForwardAndBackwardMatchTheCpuOp) {
    const int64_t rows = 4;
    for (int64_t C : kLengths)
        for (unsigned block : kBlocks) {
            std::vector<float> x = uniform(rows * C, 13, 1.0f), res = uniform(rows * C, 14, 0.5f);
            for (float& v : x) v += 30.0f;
            const std::vector<float> gamma = uniform(C, 15, 2.0f), beta = uniform(C, 16, 1.0f), dy = uniform(rows * C, 17, 1.0f);
            Tensor xt = from_vector({rows, C}, x).set_requires_grad(), rt = from_vector({rows, C}, res).set_requires_grad();
            Tensor gt = from_vector({C}, gamma).set_requires_grad(), bt = from_vector({C}, beta).set_requires_grad();
            Tensor yt = add_layer_norm(xt, rt, gt, bt, 1e-12f);
            backward(yt, from_vector({rows, C}, dy));
            std::vector<float> y((size_t)(rows * C)), sum((size_t)(rows * C)), mean((size_t)rows), rstd((size_t)rows);
            std::vector<float> dx((size_t)(rows * C), 0.0f), dres((size_t)(rows * C), 0.0f), dg((size_t)C, 0.0f), db((size_t)C, 0.0f);
            cuda::layernorm_forward(y.data(), mean.data(), rstd.data(), sum.data(), x.data(), res.data(), gamma.data(),
                                    beta.data(), 1e-12f, rows, C, block);
            std::vector<float> partials((size_t)(cuda::layernorm_row_blocks(rows) * 2 * C));
            cuda::layernorm_backward(dx.data(), dres.data(), dg.data(), db.data(), partials.data(), dy.data(), sum.data(),
                                     mean.data(), rstd.data(), gamma.data(), rows, C, block);
            const std::string what = std::to_string(C) + " / " + std::to_string(block);
            expect_close(y, yt.to_vector(), 2e-6f, 2e-6f, "y " + what);
            expect_close(dx, xt.grad().to_vector(), 2e-5f, 2e-5f, "dx " + what);
            expect_close(dres, rt.grad().to_vector(), 2e-5f, 2e-5f, "dresidual " + what);
            expect_close(dg, gt.grad().to_vector(), 2e-5f, 2e-5f, "dgamma " + what);
            expect_close(db, bt.grad().to_vector(), 2e-5f, 2e-5f, "dbeta " + what);
        }
}

// Per tensor and per channel (axis 0 of [C, inner], ranges 8× apart, one tiny amax that codes
// everything 0), signed 8-bit and narrow 4-bit: the values and the STE's gradient equal the CPU
// op's bit for bit, values at ties and beyond the range included; so do the codes (quant_codes).
TEST(CudaKernelsOnHost, FakeQuantForwardAndBackwardEqualTheCpuOpBitForBit) {
    for (int64_t inner : kLengths)
        for (bool per_channel : {false, true})
            for (int bits : {8, 4}) {
                const int64_t C = 4, n = C * inner;
                std::vector<float> x = uniform(n, 30, 3.0f), dy = uniform(n, 31, 1.0f);
                x[0] = 0.5f * 2.0f / 127.0f;  // a tie at the first range's scale
                const std::vector<float> amax = per_channel ? std::vector<float>{2.0f, 0.25f, 1e-30f, 1.0f} : std::vector<float>{2.0f};
                QuantParams params{.num_bits = bits, .narrow_range = bits == 4};
                if (per_channel) params.axis = 0;
                Tensor xt = from_vector({C, inner}, x).set_requires_grad();
                Tensor yt = fake_quant(xt, from_vector({(int64_t)amax.size()}, amax), params);
                backward(yt, from_vector({C, inner}, dy));
                std::vector<float> y((size_t)n), dx((size_t)n, 0.0f);
                const int64_t channels = per_channel ? C : 1, run = per_channel ? inner : n;
                unsigned long long fault = 0;  // what the ranges' check leaves: 0, every range usable
                cuda::for_each(n, cuda::FakeQuantForwardOp{y.data(), x.data(), amax.data(), quant_bound(params), quant_min(params), channels, run, false, false, &fault}, 64);
                cuda::for_each(n, cuda::FakeQuantBackwardOp{dx.data(), dy.data(), x.data(), amax.data(), quant_bound(params), quant_min(params), channels, run, kClippedSte}, 64);
                const std::string what = std::to_string(inner) + (per_channel ? " per channel " : " per tensor ") + std::to_string(bits);
                EXPECT_EQ(y, yt.to_vector()) << what;
                EXPECT_EQ(dx, xt.grad().to_vector()) << what;
                std::vector<float> codes((size_t)n);
                cuda::for_each(n, cuda::FakeQuantForwardOp{codes.data(), x.data(), amax.data(), quant_bound(params), quant_min(params), channels, run, false, true, &fault}, 64);
                EXPECT_EQ(fault, 0u) << what;
                EXPECT_EQ(codes, quant_codes(from_vector({C, inner}, x), from_vector({(int64_t)amax.size()}, amax), params).to_vector()) << what;
            }
}

// Rows of logits near 100 (where keeping m and s apart matters), one row ignored: the mean of the
// kernel's row losses (in double, in row order, as the op takes it) and the gradient against the
// CPU op.
TEST(CudaKernelsOnHost, CrossEntropyRowsMatchTheCpuOp) {
    const int64_t rows = 5;
    for (int64_t C : kLengths)
        for (unsigned block : kBlocks) {
            std::vector<float> x = uniform(rows * C, 40, 4.0f);
            for (float& v : x) v += 100.0f;
            std::vector<int32_t> labels = {0, (int32_t)(C - 1), -100, (int32_t)(C / 2), (int32_t)(C / 3)};
            Tensor xt = from_vector({rows, C}, x).set_requires_grad();
            Tensor lt = empty({rows}, DType::I32);
            std::copy(labels.begin(), labels.end(), lt.i32());
            Tensor loss = cross_entropy(xt, lt, -100);
            backward(loss);
            std::vector<float> losses((size_t)rows), row_max((size_t)rows), log_sum((size_t)rows), dx((size_t)(rows * C), 0.0f);
            cuda::cross_entropy_forward(losses.data(), row_max.data(), log_sum.data(), x.data(), labels.data(), -100, rows, C, block);
            double total = 0;
            for (float l : losses) total += l;
            const std::string what = std::to_string(C) + " / " + std::to_string(block);
            EXPECT_NEAR(total / 4.0, loss.item(), 2e-6 * std::max(1.0, std::fabs((double)loss.item()))) << what;
            EXPECT_EQ(losses[2], 0.0f);
            const float upstream = 1.0f;  // the loss's gradient, over the 4 rows counted
            cuda::cross_entropy_backward(dx.data(), x.data(), row_max.data(), log_sum.data(), labels.data(), -100, &upstream, 4.0f,
                                         rows, C, block);
            expect_close(dx, xt.grad().to_vector(), 1e-7f, 2e-5f, "dx " + what);
        }
}

// The collecting pass against the CPU calibrators: per-channel maxima exactly; a histogram whose
// width and bins a first batch set (on the CPU), then a second batch within its range: the
// kernel's counts are exactly what the CPU added, and its max the batch's.
TEST(CudaKernelsOnHost, CalibrationCollectionEqualsTheCpuCalibrators) {
    for (int64_t inner : kLengths) {
        const int64_t C = 3, n = C * inner;
        std::vector<float> x = uniform(n, 50, 1.0f);
        for (int64_t i = 0; i < n; ++i) x[(size_t)i] *= (float)(1 + (i / inner) % C * 4);  // channels 1×, 5×, 9×
        MaxCalibrator cpu_max{.axis = 0};
        collect(cpu_max, from_vector({C, inner}, x));
        std::vector<uint32_t> bits((size_t)C, 0);
        unsigned long long nonfinite = 0;
        cuda::for_each(n, cuda::MaxCollectOp{bits.data(), &nonfinite, x.data(), C, inner}, 64);
        for (int64_t c = 0; c < C; ++c) EXPECT_EQ(float_of_bits(bits[(size_t)c]), cpu_max.amax[(size_t)c]) << inner;

        HistogramCalibrator cpu_hist;
        std::vector<float> first = uniform(n, 51, 10.0f);
        first[0] = 10.0f;  // the range: 2048 bins up to 10, beyond the second batch's 9
        collect(cpu_hist, from_vector({n}, first));
        const std::vector<int64_t> before = cpu_hist.counts;
        const std::vector<float> batch = uniform(n, 52, 9.0f);
        collect(cpu_hist, from_vector({n}, batch));
        ASSERT_EQ(cpu_hist.counts.size(), before.size()) << "the second batch must not grow the range";
        const int64_t bins = (int64_t)before.size();
        std::vector<unsigned long long> counts((size_t)bins, 0);
        uint32_t max_bits = 0;
        cuda::for_each(n, cuda::HistogramCollectOp{counts.data(), &max_bits, &nonfinite, batch.data(), cpu_hist.width,
                                                   (float)bins * cpu_hist.width, (float)(bins - 1)}, 64);
        for (int64_t b = 0; b < bins; ++b)
            ASSERT_EQ((int64_t)counts[(size_t)b], cpu_hist.counts[(size_t)b] - before[(size_t)b]) << inner << " bin " << b;
        float batch_max = 0;
        for (float v : batch) batch_max = std::max(batch_max, std::fabs(v));
        EXPECT_EQ(float_of_bits(max_bits), batch_max);
        EXPECT_EQ(nonfinite, 0u);
    }
}

// Clipping by the kernels (Σ x² per block in double, partials summed in block order, then the
// scale where the norm exceeds 1) against clip_grad_norm on the CPU, the arrays in one batch as
// the backend hands them over: the norm within double rounding, the gradients within a float ulp
// (one is left alone: its norm is below 1).
TEST(CudaKernelsOnHost, GradientClippingMatchesTheCpu) {
    const std::vector<int64_t> sizes = {1, 77, 0, 3000};
    std::vector<std::vector<float>> g;
    std::vector<const float*> data;
    size_t partials = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
        g.push_back(uniform(sizes[k], 70 + k, 3.0f));
        data.push_back(g.back().data());
        partials += sizes[k] > 0 ? cuda::sum_of_squares_block_count(sizes[k], 256) : 0;
    }
    std::vector<double> partial(partials);
    cuda::sums_of_squares_batched(partial.data(), data, sizes, 256);
    size_t first = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
        const int64_t n = sizes[k];
        if (n == 0) continue;
        Tensor p = from_vector({n}, std::vector<float>((size_t)n, 0.0f)).set_requires_grad();
        std::copy(g[k].begin(), g[k].end(), p.grad_buffer().f32());
        const double cpu_norm = clip_grad_norm(std::vector<Tensor>{p}, 1.0);
        const size_t blocks = cuda::sum_of_squares_block_count(n, 256);
        double total = 0;
        for (size_t b = first; b < first + blocks; ++b) total += partial[b];
        first += blocks;
        const double norm = std::sqrt(total);
        EXPECT_NEAR(norm, cpu_norm, 1e-12 * cpu_norm) << n;
        const double factor = 1.0 / (norm + 1e-6);  // max_norm 1
        if (factor < 1) cuda::for_each_of_batches(std::vector<cuda::ScaleOp>{{g[k].data(), (float)factor}}, {n}, 256);
        expect_close(g[k], p.grad().to_vector(), 0.0f, 1.2e-7f, "clipped " + std::to_string(n));
    }
}

// The mapping cuda/gemm.cu hands cuBLAS, run through the literal column-major reference, against the CPU GEMM, for
// every transpose combination the ops use and leading dimensions wider than the matrices.
TEST(CudaKernelsOnHost, TheCublasMappingOfARowMajorGemmIsRightForEveryTranspose) {
    const int64_t M = 5, N = 7, K = 3, pad = 2;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
            const std::vector<float> A = uniform((ta ? K : M) * lda, 60, 1.0f), B = uniform((tb ? N : K) * ldb, 61, 1.0f);
            const std::vector<float> C0 = uniform(M * ldc, 62, 1.0f);
            std::vector<float> cpu = C0, mapped = C0;
            gemm(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, cpu.data(), ldc);
            cuda::column_major_sgemm(cuda::column_major_gemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, mapped.data(), ldc), 0.5f, 2.0f);
            for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < ldc; ++j)
                    EXPECT_NEAR(mapped[(size_t)(i * ldc + j)], cpu[(size_t)(i * ldc + j)], 1e-5)
                        << (ta ? "Aᵀ" : "A") << (tb ? "Bᵀ" : "B") << " at " << i << ", " << j;
        }
}

// cuBLAS's argument rules on the mapped call: the row-major product's tightest leading
// dimensions pass for every transpose, and so does K = 0 with [M, 0] and [0, N] operands stored
// tight (ld 0, which qdq::gemm takes and the mapping raises to 1, nothing being read); a leading
// dimension below its operand's rows and a size past int are refused, naming the rule, as cuBLAS
// refuses them.
TEST(CudaKernelsOnHost, TheMappedCallKeepsCublasArgumentRules) {
    auto check = [](bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
        cuda::check_cublas_arguments(cuda::column_major_gemm(ta, tb, M, N, K, nullptr, lda, nullptr, ldb, nullptr, ldc), 1);
    };
    const int64_t M = 5, N = 7, K = 3;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) EXPECT_NO_THROW(check(ta, tb, M, N, K, ta ? M : K, tb ? K : N, N));
    EXPECT_NO_THROW(check(true, false, M, N, 0, M, N, N));
    EXPECT_NO_THROW(check(false, false, M, N, 0, 0, N, N));
    EXPECT_NO_THROW(check(false, true, M, N, 0, 0, 0, N));
    expect_error([&] { check(false, false, M, N, K, K - 1, N, N); }, {"cuBLAS GEMM", "ldb 2 is below max(1, 3)"});
    expect_error([&] { check(false, false, M, N, K, K, N - 1, N); }, {"lda 6 is below max(1, 7)"});
    expect_error([&] { check(false, false, M, N, K, K, N, N - 1); }, {"ldc 6 is below max(1, 7)"});
    expect_error([&] { check(false, false, int64_t{1} << 31, N, K, K, N, N); }, {"2147483648 does not fit cuBLAS's int"});
}

TEST(CudaKernelsOnHost, RowKernelsRefuseBlocksThatAreNotWholeWarps) {
    float y = 0, x = 0;
    int64_t offset = 0;
    EXPECT_THROW(cuda::softmax_forward(&y, &x, nullptr, &offset, 1.0f, 1, 1, 48), std::invalid_argument);
    EXPECT_THROW(cuda::for_each(1, cuda::AddOp{&y, &x, &x}, 0), std::invalid_argument);
}

namespace {

// Broken on purpose: only thread 0 reaches the barrier, which on a GPU hangs or corrupts.
__global__ void divergent_barrier_kernel(float* out) {
    if (threadIdx.x == 0) __syncthreads();
    out[threadIdx.x] = 1.0f;
}

}  // namespace

// The fibers that run a block's threads here see a barrier that some thread never reaches as
// the deadlock it is, and stop the process naming it.
TEST(CudaKernelsOnHost, ABarrierNotEveryThreadReachesIsReportedAsADeadlock) {
    std::vector<float> out(64);
    EXPECT_DEATH(cuda::launch(divergent_barrier_kernel, dim3(1), dim3(64), out.data()), "deadlock");
}
