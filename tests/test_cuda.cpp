// CUDA backend: device memory, cuBLAS GEMM, fake quantization and gradient clipping on the
// device, each compared with the CPU path (itself checked against PyTorch). Every op of
// autograd/ops.h is compared on the device with the CPU by test_op_table.
// Without a device every test but the first skips with "skipped: no CUDA device".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "autograd/matmul_precision.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "optim/clip_grad.h"
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

// Fake quantization on the device, per tensor and per channel (a weight's rows), forward and
// the STE's backward: the codes and the gradient exactly as on the CPU; learned ranges refused.
// TF32 reads 10 bits of each operand's mantissa: (1 + 2⁻¹²)·1 summed K times is K, however
// the operand is shortened (truncated, as the emulated device does, or rounded); FP32 keeps the
// 2⁻¹²s. matmul() under MatmulPrecision::TF32 multiplies so on the device, and in FP32 on the
// CPU, which has no TF32. A random product stays within Σ|a·b|·2⁻⁹ of the exact one.
TEST(Cuda, Tf32ProductsReadTenBitsOfEachOperand) {
    REQUIRE_CUDA_DEVICE();
    const int64_t K = 64;
    const Tensor near_one = full({3, K}, 1.0f + 0x1p-12f), ones = full({K, 5}, 1.0f);
    const MatmulPrecisionGuard tf32(MatmulPrecision::TF32);
    for (float v : matmul(near_one.to(Device::CUDA), ones.to(Device::CUDA)).to(Device::CPU).to_vector()) EXPECT_EQ(v, (float)K);
    for (float v : matmul(near_one, ones).to_vector()) EXPECT_NEAR(v, K * (1.0 + 0x1p-12), 1e-4);
    const Tensor a = random_tensor({9, 33}, 21), b = random_tensor({33, 7}, 22);
    const std::vector<float> product = matmul(a.to(Device::CUDA), b.to(Device::CUDA)).to(Device::CPU).to_vector();
    for (int64_t i = 0; i < 9; ++i)
        for (int64_t j = 0; j < 7; ++j) {
            double exact = 0, magnitude = 0;
            for (int64_t k = 0; k < 33; ++k) {
                const double term = (double)a.f32()[i * 33 + k] * b.f32()[k * 7 + j];
                exact += term;
                magnitude += std::fabs(term);
            }
            EXPECT_NEAR(product[(size_t)(i * 7 + j)], exact, magnitude * 0x1p-9 + 1e-6) << i << ", " << j;
        }
}

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
// amax's gradient (a sum in double over a different order) to float rounding; the forward and
// the backward never wait for the device (the range's partial sums are added there).
TEST(Cuda, PactAndLsqLearnRangesOnTheDeviceAsOnTheCpu) {
    REQUIRE_CUDA_DEVICE();
    Tensor x = random_tensor({4, 333}, 42, -2.0f, 2.0f), grad = random_tensor({4, 333}, 43);
    for (int rule = 0; rule < 3; ++rule) {
        QuantParams params{.num_bits = 4};
        params.learn_amax = rule == 0;
        params.learn_step_size = rule > 0;
        if (rule == 2) params.axis = 0;
        Tensor amax = rule == 2 ? from_vector({4}, {0.5f, 1.0f, 2.0f, 0.25f}) : from_vector({1}, {1.5f});
        int64_t waits = 0;
        auto run = [&](Device device) {
            Tensor leaf = x.to(device).set_requires_grad(), range = amax.to(device).set_requires_grad();
            const Tensor upstream = grad.to(device);
            const int64_t waits_before = cuda::host_waits();
            Tensor y = fake_quant(leaf, range, params);
            backward(y, upstream);
            waits = cuda::host_waits() - waits_before;
            return std::vector<Tensor>{y.detach().to(Device::CPU), leaf.grad().to(Device::CPU), range.grad().to(Device::CPU)};
        };
        const std::vector<Tensor> cpu = run(Device::CPU), gpu = run(Device::CUDA);
        const char* what[] = {"PACT", "LSQ per tensor", "LSQ per channel"};
        EXPECT_EQ(waits, 0) << what[rule];
        EXPECT_EQ(gpu[0].to_vector(), cpu[0].to_vector()) << what[rule];
        EXPECT_EQ(gpu[1].to_vector(), cpu[1].to_vector()) << what[rule];
        expect_close(gpu[2], cpu[2], 1e-6f, 1e-7f, what[rule]);
        float largest = 0;
        for (float g : cpu[2].to_vector()) largest = std::max(largest, std::fabs(g));
        EXPECT_GT(largest, 1e-3f) << what[rule] << ": the range's gradient is trivially zero";
    }
}

// Clipping sums every device gradient's squares in one pass and reads the sums back together:
// one wait for the device whatever the number of tensors (a step of BERT-base has about 200),
// with the norm and the clipped gradients of the CPU's clip_grad_norm.
TEST(Cuda, GradientClippingWaitsForTheDeviceOnce) {
    REQUIRE_CUDA_DEVICE();
    std::vector<Tensor> cpu, device;
    const std::vector<int64_t> sizes = {1, 77, 3000, 70000, 0, 512};
    for (size_t i = 0; i < sizes.size(); ++i) {
        const Tensor grad = random_tensor({sizes[i]}, 50 + (uint64_t)i, -3.0f, 3.0f);
        cpu.push_back(zeros({sizes[i]}).set_requires_grad());
        cpu.back().grad_buffer().copy_from(grad);
        device.push_back(zeros({sizes[i]}, DType::F32, Device::CUDA).set_requires_grad());
        device.back().grad_buffer().copy_from(grad);
    }
    const int64_t waits_before = cuda::host_waits();
    const double norm = clip_grad_norm(device, 1.0);
    EXPECT_EQ(cuda::host_waits() - waits_before, 1);
    const double cpu_norm = clip_grad_norm(cpu, 1.0);
    EXPECT_GT(cpu_norm, 1.0);  // so that both clip
    EXPECT_NEAR(norm, cpu_norm, 1e-12 * cpu_norm);
    for (size_t i = 0; i < sizes.size(); ++i)
        expect_close(device[i].grad().to(Device::CPU), cpu[i].grad(), 1.2e-7f, 0.0f, ("tensor " + std::to_string(i)).c_str());
}

// Attention's softmax takes each row's mask offset from the device, made once for x's and the
// mask's shapes and kept while they stay: a later layer or step with the same shapes waits for
// the device not at all, other shapes once; the outputs are the CPU's either way.
TEST(Cuda, SoftmaxKeepsItsMaskOffsetsOnTheDevice) {
    REQUIRE_CUDA_DEVICE();
    const Tensor x = random_tensor({2, 3, 5, 7}, 60, -4.0f, 4.0f), mask = random_tensor({2, 1, 1, 7}, 61, -9.0f, 0.0f);
    const Tensor other_mask = random_tensor({2, 1, 5, 7}, 62, -9.0f, 0.0f);
    const Tensor device_x = x.to(Device::CUDA), device_mask = mask.to(Device::CUDA);
    const Tensor device_other_mask = other_mask.to(Device::CUDA);
    softmax(device_x, 0.5f, device_mask);  // the first call with these shapes copies the offsets
    int64_t waits = cuda::host_waits();
    const Tensor kept = softmax(device_x, 0.5f, device_mask);
    EXPECT_EQ(cuda::host_waits() - waits, 0);
    waits = cuda::host_waits();
    const Tensor other = softmax(device_x, 0.5f, device_other_mask);
    EXPECT_EQ(cuda::host_waits() - waits, 1);
    expect_close(kept.to(Device::CPU), softmax(x, 0.5f, mask), 1e-6f, 1e-7f, "kept offsets");
    expect_close(other.to(Device::CPU), softmax(x, 0.5f, other_mask), 1e-6f, 1e-7f, "new offsets");
}

// The losses average their rows on the device, in double and row order as the CPU does: the
// cross-entropy equals the CPU's bit for bit, and making a loss waits for the device only to copy
// the labels over (distillation's KL not at all).
TEST(Cuda, LossesAverageTheirRowsOnTheDevice) {
    REQUIRE_CUDA_DEVICE();
    const Tensor logits = random_tensor({37, 11}, 63, -5.0f, 5.0f), teacher = random_tensor({37, 11}, 64, -5.0f, 5.0f);
    std::vector<int32_t> label_values(37);
    for (int32_t r = 0; r < 37; ++r) label_values[(size_t)r] = r % 5 == 0 ? -100 : r % 11;  // some rows ignored
    const Tensor labels = from_ints({37}, label_values);
    const Tensor device_logits = logits.to(Device::CUDA), device_teacher = teacher.to(Device::CUDA);
    int64_t waits = cuda::host_waits();
    const Tensor loss = cross_entropy(device_logits, labels);
    EXPECT_EQ(cuda::host_waits() - waits, 1);
    EXPECT_EQ(loss.to(Device::CPU).item(), cross_entropy(logits, labels).item());
    waits = cuda::host_waits();
    const Tensor kl = softmax_kl_div(device_logits, device_teacher, 2.0f);
    EXPECT_EQ(cuda::host_waits() - waits, 0);
    const float cpu_kl = softmax_kl_div(logits, teacher, 2.0f).item();
    EXPECT_NEAR(kl.to(Device::CPU).item(), cpu_kl, 1e-6f * std::fabs(cpu_kl));
}

// The losses' backward reads its gradient where it lies, on the device, and backward() seeds it
// there: a loss's backward waits for the device not at all. A seed of 2 doubles the CPU's
// gradient, so a kernel that took the scale from anywhere but the seed would fail.
TEST(Cuda, LossesBackwardWithoutWaitingForTheDevice) {
    REQUIRE_CUDA_DEVICE();
    const Tensor logits = random_tensor({37, 11}, 65, -5.0f, 5.0f), teacher = random_tensor({37, 11}, 66, -5.0f, 5.0f);
    std::vector<int32_t> label_values(37);
    for (int32_t r = 0; r < 37; ++r) label_values[(size_t)r] = r % 7 == 0 ? -100 : r % 11;
    const Tensor labels = from_ints({37}, label_values);
    const Tensor cpu_leaf = logits.clone().set_requires_grad(), device_leaf = logits.to(Device::CUDA).set_requires_grad();
    backward(cross_entropy(cpu_leaf, labels));
    const Tensor device_loss = cross_entropy(device_leaf, labels);
    int64_t waits = cuda::host_waits();
    backward(device_loss);
    EXPECT_EQ(cuda::host_waits() - waits, 0);
    expect_close(device_leaf.grad().to(Device::CPU), cpu_leaf.grad(), 1e-7f, 2e-5f, "cross-entropy");

    const Tensor cpu_student = logits.clone().set_requires_grad(), student = logits.to(Device::CUDA).set_requires_grad();
    backward(softmax_kl_div(cpu_student, teacher, 2.0f), full({}, 2.0f));
    const Tensor device_kl = softmax_kl_div(student, teacher.to(Device::CUDA), 2.0f), seed = full({}, 2.0f, Device::CUDA);
    waits = cuda::host_waits();
    backward(device_kl, seed);
    EXPECT_EQ(cuda::host_waits() - waits, 0);
    expect_close(student.grad().to(Device::CPU), cpu_student.grad(), 1e-7f, 2e-5f, "distillation KL, seed 2");
}

// Fake quantization checks its ranges on the device: good ranges cost no wait, and a bad one
// (channel 1 negative, channel 2 NaN) is the error of the next read from the device, with the CPU
// op's words; that read waits once, for itself and the ranges. Once reported the fault is gone,
// and the device reads again.
TEST(Cuda, FakeQuantChecksItsRangesWithoutWaiting) {
    REQUIRE_CUDA_DEVICE();
    const Tensor x = random_tensor({4, 5}, 67, -2.0f, 2.0f).to(Device::CUDA).set_requires_grad();
    const QuantParams per_channel{.num_bits = 8, .axis = 0};
    const Tensor good = from_vector({4}, {1.0f, 2.0f, 0.0f, 0.5f}).to(Device::CUDA);
    int64_t waits = cuda::host_waits();
    const Tensor y = fake_quant(x, good, per_channel);
    backward(y, full({4, 5}, 1.0f, Device::CUDA));
    EXPECT_EQ(cuda::host_waits() - waits, 0);
    waits = cuda::host_waits();
    EXPECT_NO_THROW(y.to(Device::CPU));
    EXPECT_EQ(cuda::host_waits() - waits, 1) << "the checked ranges are read with the copy, in its wait";

    const Tensor bad = from_vector({4}, {1.0f, -1.0f, NAN, 0.5f}).to(Device::CUDA);
    waits = cuda::host_waits();
    const Tensor unused = fake_quant(x.detach(), bad, per_channel);
    EXPECT_EQ(cuda::host_waits() - waits, 0);
    try {
        x.detach().to(Device::CPU);
        FAIL() << "a NaN range was not reported";
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("amax[1] = -1.000000"), std::string::npos) << message;  // the first bad channel
        EXPECT_NE(message.find("not calibrated"), std::string::npos) << message;
    }
    EXPECT_NO_THROW(x.detach().to(Device::CPU));

    // An empty input has no element whose thread checks the range: it is checked all the same.
    const Tensor nothing = fake_quant(empty({0}, DType::F32, Device::CUDA), from_vector({1}, {NAN}).to(Device::CUDA), {});
    EXPECT_THROW(x.detach().to(Device::CPU), std::runtime_error);
}

// An unsigned quantizer's negative input is refused on the device as on the CPU (PQ's CUDA
// kernel asserts it): by the next read from the device, naming a negative value, and once.
TEST(Cuda, UnsignedFakeQuantRefusesNegativeInputsOnTheDevice) {
    REQUIRE_CUDA_DEVICE();
    const QuantParams unsigned_8{.num_bits = 8, .unsigned_ = true};
    const std::vector<float> negative = {0.5f, -0.25f, 1.0f};
    EXPECT_THROW(fake_quant(from_vector({3}, negative), full({}, 1.0f), unsigned_8), std::runtime_error);
    const Tensor range = full({}, 1.0f, Device::CUDA);
    const Tensor fine = fake_quant(from_vector({3}, {0.0f, 0.5f, 1.0f}).to(Device::CUDA), range, unsigned_8);
    EXPECT_NO_THROW(fine.to(Device::CPU));
    for (bool codes : {false, true}) {
        const Tensor x = from_vector({3}, negative).to(Device::CUDA);
        const Tensor y = codes ? quant_codes(x, range, unsigned_8) : fake_quant(x, range, unsigned_8);
        try {
            y.to(Device::CPU);
            ADD_FAILURE() << "a negative input was not reported, codes " << codes;
        } catch (const std::runtime_error& e) {
            const std::string message = e.what();
            EXPECT_NE(message.find("negative values in unsigned quantization"), std::string::npos) << message;
            EXPECT_NE(message.find("-0.25"), std::string::npos) << message;
        }
        EXPECT_NO_THROW(y.to(Device::CPU));
    }
}

namespace {

// A product's output and its inputs' gradients (of the sum of the output) on `device`.
std::vector<std::vector<float>> product_and_gradients(Device device, const std::vector<Tensor>& host_inputs,
                                                      Tensor (*product)(const std::vector<Tensor>&)) {
    std::vector<Tensor> inputs;
    for (const Tensor& t : host_inputs) inputs.push_back(t.to(device).set_requires_grad());
    const Tensor y = product(inputs);
    backward(sum_all(y));
    std::vector<std::vector<float>> out{y.to_vector()};
    for (const Tensor& t : inputs) out.push_back(t.grad().defined() ? t.grad().to_vector() : std::vector<float>{-1.0f});
    return out;
}

Tensor linear_of(const std::vector<Tensor>& t) { return linear(t[0], t[1], t[2]); }
Tensor matmul_of(const std::vector<Tensor>& t) { return matmul(t[0], t[1]); }

}  // namespace

// Products with an empty side, forward and backward, in FP32 and bf16: a batch of no rows, no
// input features (K = 0), no output features, an empty batch of matrices. None may hand cuBLAS a
// leading dimension it refuses (the emulated GEMM checks cuBLAS's rules as cuBLAS does), and each
// gives the CPU's output (the bias alone, zeros or nothing) and gradients.
TEST(Cuda, ProductsWithAnEmptySideKeepCublasArgumentRules) {
    REQUIRE_CUDA_DEVICE();
    const std::vector<std::vector<Shape>> linears{{{0, 4}, {5, 4}, {5}}, {{3, 0}, {5, 0}, {5}}, {{3, 4}, {0, 4}, {0}}};
    const std::vector<std::vector<Shape>> matmuls{{{2, 3, 0}, {2, 0, 4}}, {{0, 3, 5}, {0, 5, 4}}, {{2, 0, 5}, {2, 5, 4}}};
    for (MatmulPrecision precision : {MatmulPrecision::F32, MatmulPrecision::BF16}) {
        const MatmulPrecisionGuard guard(precision);
        for (const auto& [cases, product] : {std::pair{linears, &linear_of}, std::pair{matmuls, &matmul_of}})
            for (const std::vector<Shape>& shapes : cases) {
                std::vector<Tensor> inputs;
                for (const Shape& shape : shapes) inputs.push_back(random_tensor(shape, 10 + inputs.size()));
                SCOPED_TRACE(shape_str(shapes[0]) + " · " + shape_str(shapes[1]) +
                             (precision == MatmulPrecision::BF16 ? " in bf16" : ""));
                EXPECT_EQ(product_and_gradients(Device::CUDA, inputs, product), product_and_gradients(Device::CPU, inputs, product));
            }
    }
}
