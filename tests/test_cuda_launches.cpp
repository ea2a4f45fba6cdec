// What the device is asked to do, counted: kernel launches and cuBLAS calls (cuda::launches()),
// each a few microseconds of the host's. An encoder layer's count is asserted at what its ops
// launch, so a change that adds one fails here; and the column sums that replaced rank-1 GEMMs
// and one-thread-per-column loops (linear's bias gradient, LayerNorm's γ and β) are checked
// against the CPU across blocks of rows. The optimizer's step launches per batch of parameters,
// not per parameter.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "autograd/matmul_precision.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "nn/bert.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "qdqbert/qdq_placement.h"
#include "tests/support/gradcheck.h"

using namespace qdq;
using qdq::testing::expect_close;
using qdq::testing::random_tensor;

namespace {

bool has_device() { return cuda::device_count() > 0; }

struct LayerLaunches {
    int64_t forward, backward;
    int64_t waits;        // of the forward, the backward and a read of the output
    int64_t blocks_made;  // device blocks the block cache could not serve, in the same
};

// The products and quantizers a count is taken under.
struct Setting {
    MatmulPrecision precision = MatmulPrecision::F32;
    std::optional<QuantizationConfig> quantization;
};

// The second forward and backward (dropout on, a padding mask) of a `layers`-deep BertModel on
// one sequence of 36 (more rows than a block of column sums): the first pass's mask offsets
// stay on the device. Quantizers, when asked
// for, get their weights' ranges and a range of 8 for every input, as a calibrated model has.
LayerLaunches model_launches(int layers, const Setting& setting) {
    nn::BertConfig c;
    c.vocab_size = 50;
    c.hidden_size = 32;
    c.num_hidden_layers = layers;
    c.num_attention_heads = 2;
    c.intermediate_size = 64;
    Rng init(1);
    nn::BertModel model(c, false, init);
    if (setting.quantization) {
        attach_bert_quantizers(model, *setting.quantization);
        calibrate_weights(model);
        for (auto& [name, quantizer] : model.named_quantizers()) {
            std::vector<float> amax = quantizer->amax.to_vector();
            for (float& a : amax)
                if (std::isnan(a)) a = 8.0f;
            quantizer->amax.copy_from(from_vector(quantizer->amax.shape(), amax));
        }
        set_quant_mode(model, QuantMode::Quantizing);
    }
    model.move_to(Device::CUDA);
    model.train();
    const MatmulPrecisionGuard products(setting.precision);
    std::vector<int32_t> ids(36), mask(36, 1);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (int32_t)(i % 50);
    for (size_t t = 30; t < 36; ++t) mask[t] = 0;
    const nn::BertInputs inputs{from_ints({1, 36}, ids), Tensor(), from_ints({1, 36}, mask)};
    const Tensor dy = random_tensor({1, 36, 32}, 3).to(Device::CUDA);
    Rng dropout(4);
    LayerLaunches counted{};
    for (int pass = 0; pass < 2; ++pass) {
        for (NamedTensor p : model.named_parameters()) p.tensor.zero_grad();  // as a training step's end does
        const int64_t start = cuda::launches(), waits = cuda::host_waits(), blocks = cuda::blocks_made();
        const Tensor y = model.forward(inputs, dropout);
        const int64_t forward_end = cuda::launches();
        backward(y, dy);
        const int64_t backward_end = cuda::launches();
        y.to(Device::CPU);
        counted = {forward_end - start, backward_end - forward_end, cuda::host_waits() - waits,
                   cuda::blocks_made() - blocks};
    }
    return counted;
}

// What one encoder layer adds: a 2-layer model's count less a 1-layer one's.
LayerLaunches encoder_layer_launches(const Setting& setting) {
    const LayerLaunches two = model_launches(2, setting), one = model_launches(1, setting);
    return {two.forward - one.forward, two.backward - one.backward, two.waits, two.blocks_made};
}

}  // namespace

// Per encoder layer. Forward: 6 linears (a bias copy and a GEMM each), 3 head splits, 2 batched
// products, the softmax, 3 dropouts, 1 head merge, 2 Add & Norms, GELU. Backward: per linear
// two GEMMs and its bias's sums over 36 rows (two kernels), per split or merge one kernel, per
// batched product two GEMMs, the softmax, the dropouts, per Add & Norm its row kernel and two
// for γ and β, GELU. bf16 adds two operand conversions per forward GEMM, and per backward
// product one, of dy: the forward's copies of the operands are kept. QDQBERT's 20 quantizers a
// layer (each linear's input and weight, attention's four product inputs, both inputs of each
// residual add) add per quantizer its forward kernel (which checks the range too) and the STE's
// backward; LSQ's step size adds its gradient's partial sums and their sum.
// A 2-layer model's second pass, read back, waits as often quantized as not, and takes every
// device block from what the first pass freed.
TEST(Cuda, AnEncoderLayerLaunchesWhatItsOpsLaunch) {
    if (!has_device()) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    const LayerLaunches f32 = encoder_layer_launches({});
    EXPECT_EQ(f32.forward, 6 * 2 + 3 + 2 + 1 + 3 + 1 + 2 + 1);
    EXPECT_EQ(f32.backward, 6 * 4 + 3 + 2 * 2 + 1 + 3 + 1 + 2 * 3 + 1);
    const LayerLaunches bf16 = encoder_layer_launches({.precision = MatmulPrecision::BF16, .quantization = std::nullopt});
    EXPECT_EQ(bf16.forward, f32.forward + 2 * (6 + 2));
    EXPECT_EQ(bf16.backward, f32.backward + 6 + 2);
    const LayerLaunches qat = encoder_layer_launches({.precision = MatmulPrecision::F32, .quantization = QuantizationConfig{}});
    QuantizationConfig lsq_config;
    lsq_config.input.learn_step_size = lsq_config.weight.learn_step_size = true;
    const LayerLaunches lsq = encoder_layer_launches({.precision = MatmulPrecision::F32, .quantization = lsq_config});
    const int64_t quantizers = 6 * 2 + 4 + 2 * 2;
    EXPECT_EQ(qat.forward, f32.forward + quantizers);
    EXPECT_EQ(qat.backward, f32.backward + quantizers);
    EXPECT_EQ(lsq.forward, qat.forward);
    EXPECT_EQ(lsq.backward, f32.backward + 3 * quantizers);
    // A pass waits for its four uploads (ids, positions, token types, the mask) and the read of its
    // output, whose copy reads the quantizers' range checks too.
    for (const LayerLaunches& counted : {f32, bf16, qat, lsq}) {
        EXPECT_EQ(counted.waits, 4 + 1);
        EXPECT_EQ(counted.blocks_made, 0);
    }
}

// rows: one block of 32 and fewer, a whole number of blocks, and a part-filled last block.
TEST(Cuda, ColumnSumsOverBlocksOfRowsMatchTheCpu) {
    if (!has_device()) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    for (int64_t rows : {5, 64, 300}) {
        const int64_t C = 48;
        const std::vector<Tensor> inputs = {random_tensor({rows, C}, 10, 0.5f, 1.5f), random_tensor({rows, C}, 11),
                                            random_tensor({C}, 12), random_tensor({C}, 13), random_tensor({C, C}, 14)};
        const Tensor dy = random_tensor({rows, C}, 15);
        std::vector<std::vector<Tensor>> grads;
        for (Device device : {Device::CPU, Device::CUDA}) {
            std::vector<Tensor> leaves;
            for (const Tensor& t : inputs) leaves.push_back(t.to(device).set_requires_grad());
            const Tensor normed = add_layer_norm(leaves[0], leaves[1], leaves[2], leaves[3], 1e-12f);
            const Tensor y = linear(normed, leaves[4], leaves[3]), dy_there = dy.to(device);
            const int64_t start = cuda::launches();
            backward(y, dy_there);
            // The seed; linear's two GEMMs and its bias's sums (a second kernel past 32 rows);
            // LayerNorm's row kernel, then γ's and β's partial sums and their sum.
            if (device == Device::CUDA) {
                EXPECT_EQ(cuda::launches() - start, 1 + 2 + (rows > 32 ? 2 : 1) + 3) << rows << " rows";
            }
            grads.emplace_back();
            for (const Tensor& t : leaves) grads.back().push_back(t.grad().to(Device::CPU));
        }
        const std::string what = std::to_string(rows) + " rows: ";
        expect_close(grads[1][2], grads[0][2], 1e-5f, 1e-5f, (what + "dγ").c_str());
        expect_close(grads[1][3], grads[0][3], 1e-5f, 1e-5f, (what + "dβ and the bias's gradient").c_str());
        expect_close(grads[1][0], grads[0][0], 1e-5f, 1e-5f, (what + "dx").c_str());
    }
}

// 121 parameters in two weight-decay groups, one of them without a gradient, over two steps (the
// second's bias corrections differ): clipping launches once to sum the squares and once more to
// scale; AdamW once per 53 parameters, what fits CUDA's 4 KB of kernel arguments at 76 bytes a
// parameter. The parameters and moments equal the CPU optimizer's bit for bit: the element update
// is one function for both.
TEST(Cuda, AnOptimizerStepLaunchesOncePerBatchOfParameters) {
    if (!has_device()) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    const int count = 121, without_gradient = 7;
    std::vector<ParamGroup> cpu_groups(2), device_groups(2);
    cpu_groups[0].weight_decay = device_groups[0].weight_decay = 0.01;
    std::vector<Tensor> cpu_params, device_params;
    for (int k = 0; k < count; ++k) {
        const int64_t n = k == 5 ? 70000 : (k * 53) % 700 + 1;
        const Tensor init = random_tensor({n}, 100 + (uint64_t)k);
        cpu_params.push_back(init.clone().set_requires_grad());
        device_params.push_back(init.to(Device::CUDA).set_requires_grad());
        std::string name = "p";
        name += std::to_string(k);  // not "p" + …: GCC 12 warns falsely of overlapping copies there
        const int group = k < count / 2 ? 0 : 1;  // the state then lists the parameters in k's order
        cpu_groups[group].params.push_back({name, cpu_params.back()});
        device_groups[group].params.push_back({name, device_params.back()});
    }
    AdamW cpu = make_adamw(cpu_groups), device = make_adamw(device_groups);
    for (int step = 1; step <= 2; ++step) {
        for (int k = 0; k < count; ++k) {
            if (k == without_gradient) continue;
            const Tensor grad = random_tensor(cpu_params[(size_t)k].shape(), 1000 * (uint64_t)step + (uint64_t)k);
            cpu_params[(size_t)k].grad_buffer().copy_from(grad);
            device_params[(size_t)k].grad_buffer().copy_from(grad);
        }
        int64_t start = cuda::launches();
        clip_grad_norm(device_groups, 1e9);
        EXPECT_EQ(cuda::launches() - start, 1) << "the sums of squares; no scale below the largest norm";
        start = cuda::launches();
        adamw_step(device, 1e-3);
        EXPECT_EQ(cuda::launches() - start, 3) << "120 parameters with a gradient";
        adamw_step(cpu, 1e-3);
        for (int k = 0; k < count; ++k) {
            ASSERT_EQ(device_params[(size_t)k].to(Device::CPU).to_vector(), cpu_params[(size_t)k].to_vector()) << k;
            for (size_t moment : {0, 1})
                ASSERT_EQ(device.state[3 * (size_t)k + moment].tensor.to(Device::CPU).to_vector(),
                          cpu.state[3 * (size_t)k + moment].tensor.to_vector()) << k;
        }
    }
    EXPECT_EQ(*device.state[3 * without_gradient + 2].tensor.i32(), 0) << "a parameter without a gradient takes no step";
    const int64_t start = cuda::launches();
    const double norm = clip_grad_norm(device_groups, 1.0), cpu_norm = clip_grad_norm(cpu_groups, 1.0);
    EXPECT_EQ(cuda::launches() - start, 2) << "the sums of squares and the scale";
    EXPECT_NEAR(norm, cpu_norm, 1e-12 * cpu_norm);
    for (int k = 0; k < count; k += 10)
        expect_close(device_params[(size_t)k].grad().to(Device::CPU), cpu_params[(size_t)k].grad(), 1.2e-7f, 0.0f,
                     ("gradient " + std::to_string(k)).c_str());
}
