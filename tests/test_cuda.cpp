// CUDA backend: device memory, cuBLAS GEMM, the elementwise kernel and op dispatch by device,
// each compared with the CPU path (itself checked against PyTorch in the ops tests).
// Without a device every test but the first skips with "skipped: no CUDA device".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "autograd/matmul_precision.h"
#include "autograd/ops.h"
#include "autograd/rng.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "quant/fake_quant.h"
#include "tests/support/gradcheck.h"

using namespace qdq;
using qdq::testing::expect_close;
using qdq::testing::random_tensor;

#define REQUIRE_CUDA_DEVICE()                                                               \
    do {                                                                                    \
        if (cuda::device_count() == 0)                                                      \
            GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")"; \
    } while (0)

TEST(Cuda, AllocatingWithoutADeviceIsAClearError) {
    if (cuda::device_count() > 0) GTEST_SKIP() << "a device is present; nothing to refuse";
    try {
        empty({4}, DType::F32, Device::CUDA);
        FAIL() << "allocation on a missing device succeeded";
    } catch (const std::runtime_error& e) {
        std::string message = e.what();
        EXPECT_FALSE(message.empty());
        if (!cuda::built_with_cuda()) {
            EXPECT_NE(message.find("without the CUDA backend"), std::string::npos);
        }
    }
}

TEST(Cuda, CopiesRoundTrip) {
    REQUIRE_CUDA_DEVICE();
    Tensor host = random_tensor({3, 5}, 1);
    Tensor back = host.to(Device::CUDA).to(Device::CPU);
    EXPECT_EQ(back.to_vector(), host.to_vector());
    EXPECT_EQ(zeros({7}, DType::F32, Device::CUDA).to_vector(), std::vector<float>(7, 0.0f));
}

// The emulated device keeps its memory closed to host code outside kernels and copies, as a
// GPU's is, so that the backend's tests catch a host read of a device pointer.
TEST(Cuda, HostCodeCannotReadTheEmulatedDevicesMemory) {
    REQUIRE_CUDA_DEVICE();
    if (cuda::device_description().find("emulated") == std::string::npos) GTEST_SKIP() << "a real device";
    Tensor on_device = zeros({4}, DType::F32, Device::CUDA);
    EXPECT_DEATH({ volatile float v = on_device.f32()[0]; (void)v; }, "");
    EXPECT_EQ(on_device.to(Device::CPU).to_vector(), std::vector<float>(4, 0.0f));
}

TEST(Cuda, CublasGemmMatchesCpuGemmForEveryTransposeCombination) {
    REQUIRE_CUDA_DEVICE();
    const int64_t M = 37, N = 29, K = 53;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            Tensor a = random_tensor(ta ? Shape{K, M} : Shape{M, K}, 2);
            Tensor b = random_tensor(tb ? Shape{N, K} : Shape{K, N}, 3);
            Tensor c_cpu = random_tensor({M, N}, 4);
            Tensor c_gpu = c_cpu.to(Device::CUDA);
            Tensor a_gpu = a.to(Device::CUDA), b_gpu = b.to(Device::CUDA);
            gemm(ta, tb, M, N, K, 0.5f, a.f32(), ta ? M : K, b.f32(), tb ? K : N, 2.0f, c_cpu.f32(), N);
            cuda::gemm(ta, tb, M, N, K, 0.5f, a_gpu.f32(), ta ? M : K, b_gpu.f32(), tb ? K : N,
                       2.0f, c_gpu.f32(), N);
            // Summation order differs between the libraries: K = 53 products of |x| < 1.
            expect_close(c_gpu.to(Device::CPU), c_cpu, 1e-5f, 1e-5f, "gemm");
        }
}

// Each element of t rounded to bf16 (autograd/gemm_bf16.h), as a float tensor.
Tensor rounded_to_bf16(const Tensor& t) {
    Tensor out = t.clone();
    for (int64_t i = 0; i < out.numel(); ++i) out.f32()[i] = round_to_bf16(out.f32()[i]);
    return out;
}

// The device's bf16 GEMM rounds its operands as the CPU rounds them and sums in FP32: it equals
// the FP32 GEMM of the rounded operands, and differs from the FP32 GEMM of the originals.
TEST(Cuda, Bf16GemmIsTheFp32GemmOfBf16RoundedOperands) {
    REQUIRE_CUDA_DEVICE();
    const int64_t M = 37, N = 29, K = 53;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            Tensor a = random_tensor(ta ? Shape{K, M} : Shape{M, K}, 12), b = random_tensor(tb ? Shape{N, K} : Shape{K, N}, 13);
            Tensor c = random_tensor({M, N}, 14);
            Tensor expected = c.clone(), unrounded = c.clone(), c_gpu = c.to(Device::CUDA);
            const Tensor ra = rounded_to_bf16(a), rb = rounded_to_bf16(b);
            gemm(ta, tb, M, N, K, 0.5f, ra.f32(), ta ? M : K, rb.f32(), tb ? K : N, 2.0f, expected.f32(), N);
            gemm(ta, tb, M, N, K, 0.5f, a.f32(), ta ? M : K, b.f32(), tb ? K : N, 2.0f, unrounded.f32(), N);
            const Tensor a_gpu = a.to(Device::CUDA), b_gpu = b.to(Device::CUDA);
            cuda::gemm_bf16(ta, tb, M, N, K, 0.5f, a_gpu.f32(), ta ? M : K, b_gpu.f32(), tb ? K : N, 2.0f, c_gpu.f32(), N);
            const Tensor got = c_gpu.to(Device::CPU);
            expect_close(got, expected, 1e-5f, 1e-5f, "bf16 gemm");
            float largest = 0;
            for (int64_t i = 0; i < got.numel(); ++i) largest = std::max(largest, std::fabs(got.f32()[i] - unrounded.f32()[i]));
            EXPECT_GT(largest, 1e-3f) << "the operands were not rounded";
        }
}

// matmul under bf16 precision on the device, forward and backward, is the FP32 matmul of
// rounded operands (the output gradient is all ones, which bf16 holds exactly).
TEST(Cuda, MatmulUnderBf16PrecisionRoundsOnTheDeviceForwardAndBackward) {
    REQUIRE_CUDA_DEVICE();
    const Tensor a = random_tensor({3, 5, 40}, 15), b = random_tensor({40, 6}, 16), ones = full({3, 5, 6}, 1.0f);
    Tensor da = a.to(Device::CUDA).set_requires_grad(), db = b.to(Device::CUDA).set_requires_grad();
    Tensor y;
    {
        MatmulPrecisionGuard bf16(MatmulPrecision::BF16);
        y = matmul(da, db);
    }
    backward(y, ones.to(Device::CUDA));
    Tensor ra = rounded_to_bf16(a).set_requires_grad(), rb = rounded_to_bf16(b).set_requires_grad();
    Tensor expected = matmul(ra, rb);
    backward(expected, ones);
    expect_close(y.detach().to(Device::CPU), expected.detach(), 1e-5f, 1e-5f, "output");
    expect_close(da.grad().to(Device::CPU), ra.grad(), 1e-5f, 1e-5f, "grad a");
    expect_close(db.grad().to(Device::CPU), rb.grad(), 1e-5f, 1e-5f, "grad b");
}

TEST(Cuda, AddAndMatmulDispatchByDeviceForwardAndBackward) {
    REQUIRE_CUDA_DEVICE();
    Tensor a = random_tensor({2, 4, 8}, 5), b = random_tensor({2, 8, 3}, 6), c = random_tensor({2, 4, 3}, 7);
    Tensor grad = random_tensor({2, 4, 3}, 8);

    auto run = [&](Device device) {
        Tensor da = a.to(device).set_requires_grad(), db = b.to(device).set_requires_grad();
        Tensor y = add(matmul(da, db), c.to(device));
        EXPECT_EQ(y.device(), device);
        backward(y, grad.to(device));
        return std::vector<Tensor>{y.detach().to(Device::CPU), da.grad().to(Device::CPU),
                                   db.grad().to(Device::CPU)};
    };
    std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
    expect_close(gpu[0], cpu[0], 1e-5f, 1e-5f, "output");
    expect_close(gpu[1], cpu[1], 1e-5f, 1e-5f, "grad a");
    expect_close(gpu[2], cpu[2], 1e-5f, 1e-5f, "grad b");
}

// Batched products, as attention's per-head ones (one strided-batched cuBLAS call on a GPU), with
// every transpose, in FP32 and bf16, and a shared B under a transposed A (whose gradient sums
// over the batch, so it stays one GEMM per entry): output and both gradients as on the CPU. The
// bf16 reference is the CPU's FP32 product of operands and output gradient rounded to bf16, not
// the CPU's bf16 product, which is FP32 on a CPU without a bf16 kernel (or under QDQ_CPU=avx2).
TEST(Cuda, BatchedMatmulsMatchTheCpuForEveryTransposeAndPrecision) {
    REQUIRE_CUDA_DEVICE();
    for (bool bf16 : {false, true})
        for (int form = 0; form < 5; ++form) {
            const bool trans_a = form & 1, trans_b = form & 2, shared_b = form == 4;
            SCOPED_TRACE(std::string(bf16 ? "bf16" : "fp32") + " trans_a " + std::to_string(trans_a) + " trans_b " +
                         std::to_string(trans_b) + (shared_b ? " shared b" : ""));
            const Tensor a = random_tensor(trans_a || shared_b ? Shape{2, 3, 9, 5} : Shape{2, 3, 5, 9}, 40 + form);
            const Shape b_shape = shared_b ? Shape{9, 4} : trans_b ? Shape{2, 3, 4, 9} : Shape{2, 3, 9, 4};
            const Tensor b = random_tensor(b_shape, 50 + form);
            const Tensor grad = random_tensor({2, 3, 5, 4}, 60 + form);
            auto run = [&](Device device, MatmulPrecision precision, const Tensor& a, const Tensor& b, const Tensor& grad) {
                MatmulPrecisionGuard guard(precision);
                Tensor da = a.to(device).set_requires_grad(), db = b.to(device).set_requires_grad();
                Tensor y = matmul(da, db, trans_a || shared_b, trans_b);
                backward(y, grad.to(device));
                return std::vector<Tensor>{y.detach().to(Device::CPU), da.grad().to(Device::CPU),
                                           db.grad().to(Device::CPU)};
            };
            const std::vector<Tensor> cpu = bf16 ? run(Device::CPU, MatmulPrecision::F32, rounded_to_bf16(a),
                                                       rounded_to_bf16(b), rounded_to_bf16(grad))
                                                 : run(Device::CPU, MatmulPrecision::F32, a, b, grad);
            const std::vector<Tensor> gpu =
                run(Device::CUDA, bf16 ? MatmulPrecision::BF16 : MatmulPrecision::F32, a, b, grad);
            expect_close(gpu[0], cpu[0], 1e-5f, 1e-5f, "output");
            expect_close(gpu[1], cpu[1], 1e-5f, 1e-5f, "grad a");
            expect_close(gpu[2], cpu[2], 1e-5f, 1e-5f, "grad b");
        }
}

// GELU, dropout and the embedding on the device, forward and backward, against the CPU: the
// mask and the gathered rows exactly, GELU within the two sides' different erfc and exp.
TEST(Cuda, GeluDropoutAndEmbeddingDispatchByDevice) {
    REQUIRE_CUDA_DEVICE();
    Tensor weight = random_tensor({6, 33}, 10), grad = random_tensor({4, 33}, 11);
    Tensor ids = empty({4}, DType::I32);
    const int32_t id_values[] = {5, 0, 5, 2};
    std::copy(id_values, id_values + 4, ids.i32());
    auto run = [&](Device device) {
        Tensor w = weight.to(device).set_requires_grad();
        Rng rng(3);
        Tensor h = gelu(embedding(w, ids));
        Tensor y = dropout(h, 0.25f, true, rng);
        EXPECT_EQ(y.device(), device);
        backward(y, grad.to(device));
        return std::vector<Tensor>{y.detach().to(Device::CPU), w.grad().to(Device::CPU)};
    };
    std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
    expect_close(gpu[0], cpu[0], 1e-6f, 1e-6f, "output");
    expect_close(gpu[1], cpu[1], 1e-6f, 1e-6f, "grad weight");
    const std::vector<float> a = gpu[0].to_vector(), b = cpu[0].to_vector();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i] == 0.0f, b[i] == 0.0f) << "the dropout mask differs at " << i;
}

// Attention's masked softmax ([B, 1, 1, T] mask against [B, H, T, T] scores), Add & Norm and the
// cross-entropy of a classifier's logits (one row ignored) on the device, forward and backward,
// against the CPU.
TEST(Cuda, SoftmaxLayerNormAndCrossEntropyDispatchByDevice) {
    REQUIRE_CUDA_DEVICE();
    Tensor scores = random_tensor({2, 2, 3, 3}, 20), mask = zeros({2, 1, 1, 3});
    mask.f32()[2] = -10000.0f;  // batch 0's last key is padding
    Tensor x = random_tensor({6, 33}, 21), residual = random_tensor({6, 33}, 22), gamma = random_tensor({33}, 23),
           beta = random_tensor({33}, 24), head = random_tensor({33, 4}, 25);
    Tensor labels = empty({6}, DType::I32);
    const int32_t label_values[] = {0, 3, -100, 1, 2, 3};
    std::copy(label_values, label_values + 6, labels.i32());
    auto run = [&](Device device) {
        std::vector<Tensor> leaves = {scores.to(device), x.to(device), residual.to(device), gamma.to(device), beta.to(device),
                                      head.to(device)};
        for (Tensor& t : leaves) t.set_requires_grad();
        Tensor attention = softmax(leaves[0], 0.5f, mask.to(device));
        backward(attention, random_tensor({2, 2, 3, 3}, 26).to(device));  // a tape of its own
        Tensor normed = add_layer_norm(leaves[1], leaves[2], leaves[3], leaves[4], 1e-12f);
        Tensor loss = cross_entropy(matmul(normed, leaves[5]), labels, -100);
        EXPECT_EQ(loss.device(), device);
        backward(loss);
        std::vector<Tensor> out = {attention.detach().to(Device::CPU), loss.detach().to(Device::CPU)};
        for (Tensor& t : leaves) out.push_back(t.grad().to(Device::CPU));
        return out;
    };
    const std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
    const char* names[] = {"attention", "loss", "grad scores", "grad x", "grad residual", "grad gamma", "grad beta", "grad head"};
    for (size_t i = 0; i < cpu.size(); ++i) expect_close(gpu[i], cpu[i], 2e-5f, 2e-5f, names[i]);
}

// Position embeddings broadcast over the batch, attention's head split and merge, the pooler's
// first-token slice and tanh, and a scalar factor on the device, forward and backward.
TEST(Cuda, BroadcastAddShapeOpsTanhAndScalingDispatchByDevice) {
    REQUIRE_CUDA_DEVICE();
    Tensor x = random_tensor({2, 3, 8}, 30), grad = random_tensor({2, 8}, 31);
    auto run = [&](Device device) {
        Tensor leaf = x.to(device).set_requires_grad();
        Tensor position = random_tensor({3, 8}, 32).to(device).set_requires_grad();
        Tensor heads = split_heads(add(leaf, position), 2);  // [2, 3, 8] + [3, 8], then [2, 2, 3, 4]
        Tensor merged = merge_heads(mul_scalar(heads, 0.5f));
        Tensor first = reshape(slice(merged, 1, 0, 1), {2, 8});
        Tensor y = tanh(first);
        EXPECT_EQ(y.device(), device);
        backward(y, grad.to(device));
        return std::vector<Tensor>{y.detach().to(Device::CPU), leaf.grad().to(Device::CPU), position.grad().to(Device::CPU)};
    };
    const std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
    expect_close(gpu[0], cpu[0], 1e-6f, 1e-6f, "output");
    expect_close(gpu[1], cpu[1], 1e-6f, 1e-6f, "grad");
    expect_close(gpu[2], cpu[2], 1e-6f, 1e-6f, "grad of the broadcast addend");
}

// Fake quantization on the device, per tensor and per channel (a weight's rows), forward and
// the STE's backward: the codes and the gradient exactly as on the CPU; learned ranges refused.
TEST(Cuda, FakeQuantDispatchByDevice) {
    REQUIRE_CUDA_DEVICE();
    Tensor x = random_tensor({4, 33}, 40), grad = random_tensor({4, 33}, 41);
    for (bool per_channel : {false, true}) {
        QuantParams params;
        if (per_channel) params.axis = 0;
        Tensor amax = per_channel ? from_vector({4}, {0.5f, 1.0f, 2.0f, 0.25f}) : from_vector({1}, {1.5f});
        auto run = [&](Device device) {
            Tensor leaf = x.to(device).set_requires_grad();
            Tensor y = fake_quant(leaf, amax.to(device), params);
            backward(y, grad.to(device));
            return std::vector<Tensor>{y.detach().to(Device::CPU), leaf.grad().to(Device::CPU)};
        };
        const std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
        EXPECT_EQ(gpu[0].to_vector(), cpu[0].to_vector()) << (per_channel ? "per channel" : "per tensor");
        EXPECT_EQ(gpu[1].to_vector(), cpu[1].to_vector()) << (per_channel ? "per channel" : "per tensor");
    }
}

// Learned ranges on the device: PACT (per tensor) and LSQ (per tensor and per channel, 4 bits,
// so that many values clip): the values and the input's gradient equal the CPU op's bit for bit,
// amax's gradient (a sum in double over a different order) to float rounding.
TEST(Cuda, PactAndLsqLearnRangesOnTheDeviceAsOnTheCpu) {
    REQUIRE_CUDA_DEVICE();
    Tensor x = random_tensor({4, 333}, 42, -2.0f, 2.0f), grad = random_tensor({4, 333}, 43);
    for (int rule = 0; rule < 3; ++rule) {
        QuantParams params{.num_bits = 4};
        params.learn_amax = rule == 0;
        params.learn_step_size = rule > 0;
        if (rule == 2) params.axis = 0;
        Tensor amax = rule == 2 ? from_vector({4}, {0.5f, 1.0f, 2.0f, 0.25f}) : from_vector({1}, {1.5f});
        auto run = [&](Device device) {
            Tensor leaf = x.to(device).set_requires_grad(), range = amax.to(device).set_requires_grad();
            Tensor y = fake_quant(leaf, range, params);
            backward(y, grad.to(device));
            return std::vector<Tensor>{y.detach().to(Device::CPU), leaf.grad().to(Device::CPU), range.grad().to(Device::CPU)};
        };
        const std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
        const char* what[] = {"PACT", "LSQ per tensor", "LSQ per channel"};
        EXPECT_EQ(gpu[0].to_vector(), cpu[0].to_vector()) << what[rule];
        EXPECT_EQ(gpu[1].to_vector(), cpu[1].to_vector()) << what[rule];
        expect_close(gpu[2], cpu[2], 1e-6f, 1e-7f, what[rule]);
        float largest = 0;
        for (float g : cpu[2].to_vector()) largest = std::max(largest, std::fabs(g));
        EXPECT_GT(largest, 1e-3f) << what[rule] << ": the range's gradient is trivially zero";
    }
}

// Distillation's loss on the device: rows of 3 and of 77 classes at two temperatures, the loss
// and the student's gradient against the CPU op (whose exp is an approximation within 2 ulp).
TEST(Cuda, SoftmaxKlDivOnTheDeviceMatchesTheCpu) {
    REQUIRE_CUDA_DEVICE();
    for (int64_t C : {3, 77})
        for (float temperature : {1.0f, 4.0f}) {
            Tensor student = random_tensor({5, C}, 50, -6.0f, 6.0f), teacher = random_tensor({5, C}, 51, -6.0f, 6.0f);
            auto run = [&](Device device) {
                Tensor leaf = student.to(device).set_requires_grad();
                Tensor loss = softmax_kl_div(leaf, teacher.to(device), temperature);
                EXPECT_EQ(loss.device(), device);
                backward(loss, full({}, 1.5f).to(device));
                return std::vector<Tensor>{loss.detach().to(Device::CPU), leaf.grad().to(Device::CPU)};
            };
            const std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
            expect_close(gpu[0], cpu[0], 1e-5f, 1e-6f, "kl loss");
            expect_close(gpu[1], cpu[1], 1e-5f, 1e-6f, "kl grad");
        }
}

// The ops no run uses, on the device against the CPU: sub, mul and div with every kind of
// broadcast (the gradient of a repeated input summed over its repeats), add with a broadcast
// that is not a bias's, add_scalar, pow_scalar, sum and mean over an axis and over everything,
// concat and log_softmax, forward and backward.
TEST(Cuda, TheRemainingOpsRunOnTheDeviceAsOnTheCpu) {
    REQUIRE_CUDA_DEVICE();
    const Tensor x = random_tensor({2, 3, 5}, 60, 0.5f, 2.0f), y = random_tensor({3, 1}, 61, 0.5f, 2.0f);
    const Tensor z = random_tensor({2, 1, 5}, 62, 0.5f, 2.0f);
    using Op = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
    const std::vector<std::pair<const char*, Op>> ops = {
        {"sub", [](const Tensor& a, const Tensor& b, const Tensor&) { return sub(a, b); }},
        {"mul", [](const Tensor& a, const Tensor& b, const Tensor&) { return mul(b, a); }},
        {"div", [](const Tensor& a, const Tensor&, const Tensor& c) { return div(c, a); }},
        {"add", [](const Tensor&, const Tensor& b, const Tensor& c) { return add(b, c); }},
        {"add_scalar, pow_scalar", [](const Tensor& a, const Tensor&, const Tensor&) { return pow_scalar(add_scalar(a, 0.5f), 1.5f); }},
        {"sum, mean", [](const Tensor& a, const Tensor&, const Tensor&) { return mean(sum(a, 1, true), 2); }},
        {"sum_all, mean_all", [](const Tensor& a, const Tensor& b, const Tensor&) { return add(sum_all(a), mean_all(b)); }},
        {"concat", [](const Tensor& a, const Tensor&, const Tensor& c) { return concat({a, c, a}, 1); }},
        {"log_softmax", [](const Tensor& a, const Tensor&, const Tensor&) { return log_softmax(a); }}};
    for (const auto& [name, op] : ops) {
        auto run = [&](Device device) {
            Tensor a = x.to(device).set_requires_grad(), b = y.to(device).set_requires_grad(), c = z.to(device).set_requires_grad();
            Tensor out = op(a, b, c);
            EXPECT_EQ(out.device(), device) << name;
            backward(out, random_tensor(out.shape(), 63).to(device));
            std::vector<Tensor> result = {out.detach().to(Device::CPU)};
            for (const Tensor& t : {a, b, c}) result.push_back(t.grad().defined() ? t.grad().to(Device::CPU) : zeros(t.shape()));
            return result;
        };
        const std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
        for (size_t i = 0; i < cpu.size(); ++i) expect_close(gpu[i], cpu[i], 1e-5f, 1e-6f, name);
    }
    try {
        add(x, y.to(Device::CUDA));
        FAIL() << "add of a CPU and a GPU tensor ran";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("on the GPU and another on the CPU"), std::string::npos) << e.what();
    }
}
