// What the device is asked to do, counted: kernel launches and cuBLAS calls (cuda::launches()),
// each a few microseconds of the host's. An encoder layer's count is asserted at what its ops
// launch, so a change that adds one fails here; and the column sums that replaced rank-1 GEMMs
// and one-thread-per-column loops (linear's bias gradient, LayerNorm's γ and β) are checked
// against the CPU across blocks of rows.
#include <gtest/gtest.h>

#include "autograd/matmul_precision.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "nn/bert.h"
#include "tests/support/gradcheck.h"

using namespace qdq;
using qdq::testing::expect_close;
using qdq::testing::random_tensor;

namespace {

bool has_device() { return cuda::device_count() > 0; }

struct LayerLaunches {
    int64_t forward, backward;
};

// The second forward and backward of one encoder layer (dropout on, a padding mask) on a batch
// of 2 × 40: the first one's mask offsets stay on the device.
LayerLaunches encoder_layer_launches(MatmulPrecision precision) {
    nn::BertConfig c;
    c.hidden_size = 32;
    c.num_attention_heads = 2;
    c.intermediate_size = 64;
    Rng init(1);
    nn::BertLayer layer(c, init);
    layer.move_to(Device::CUDA);
    layer.train();
    const MatmulPrecisionGuard products(precision);
    const Tensor x = random_tensor({2, 40, 32}, 2).to(Device::CUDA).set_requires_grad();
    Tensor mask = zeros({2, 1, 1, 40});
    for (int64_t t = 30; t < 40; ++t) mask.f32()[40 + t] = -1e30f;
    mask = mask.to(Device::CUDA);
    const Tensor dy = random_tensor({2, 40, 32}, 3).to(Device::CUDA);
    Rng dropout(4);
    LayerLaunches counted{};
    for (int pass = 0; pass < 2; ++pass) {
        const int64_t start = cuda::launches();
        const Tensor y = layer.forward(x, mask, dropout);
        const int64_t forward_end = cuda::launches();
        backward(y, dy);
        counted = {forward_end - start, cuda::launches() - forward_end};
    }
    return counted;
}

}  // namespace

// Forward: 6 linears (a bias copy and a GEMM each), 3 head splits, 2 batched products, the
// softmax, 3 dropouts, 1 head merge, 2 Add & Norms, GELU. Backward: the seed's copy, then per
// linear two GEMMs and its bias's sums over 80 rows (two kernels), per split or merge one
// kernel, per batched product two GEMMs, the softmax, the dropouts, per Add & Norm its row
// kernel and two for γ and β, GELU. bf16 adds two operand conversions per GEMM.
TEST(Cuda, AnEncoderLayerLaunchesWhatItsOpsLaunch) {
    if (!has_device()) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    const LayerLaunches f32 = encoder_layer_launches(MatmulPrecision::F32);
    EXPECT_EQ(f32.forward, 6 * 2 + 3 + 2 + 1 + 3 + 1 + 2 + 1);
    EXPECT_EQ(f32.backward, 1 + 6 * 4 + 3 + 2 * 2 + 1 + 3 + 1 + 2 * 3 + 1) << "the seed's copy first";
    const LayerLaunches bf16 = encoder_layer_launches(MatmulPrecision::BF16);
    EXPECT_EQ(bf16.forward, f32.forward + 2 * (6 + 2));
    EXPECT_EQ(bf16.backward, f32.backward + 2 * (6 * 2 + 2 * 2));
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
