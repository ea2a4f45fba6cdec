// Element-wise entry points of the backend: the functors of cuda/kernels/*.cuh (the same text
// the tests run on host threads) over device pointers.
#include <stdexcept>
#include <vector>

#include "cuda/backend.h"
#include "cuda/device_array.h"
#include "cuda/kernels/broadcast.cuh"
#include "cuda/kernels/calibration.cuh"
#include "cuda/kernels/dropout.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/embedding.cuh"
#include "cuda/kernels/fake_quant.cuh"
#include "cuda/kernels/grad_norm.cuh"
#include "cuda/kernels/optimizer.cuh"
#include "cuda/kernels/reduce.cuh"
#include "cuda/kernels/shape.cuh"

namespace qdq::cuda {

void add(float* out, const float* a, const float* b, int64_t n) { for_each(n, AddOp{out, a, b}); }
void add_trailing(float* y, const float* a, const float* b, int64_t n, int64_t nb) { for_each(n, AddTrailingOp{y, a, b, nb}); }
void sum_repeats(float* db, const float* dy, int64_t nb, int64_t repeats) { for_each(nb, SumRepeatsOp{db, dy, nb, repeats}); }
void broadcast_binary(float* y, const float* a, const float* b, const BroadcastShape& s, int kind, int64_t n) {
    for_each(n, BroadcastBinaryOp{y, a, b, s, kind});
}
void broadcast_binary_backward(float* dx, const float* dy, const float* a, const float* b, const BroadcastShape& s,
                               int kind, int which, int64_t x_numel) {
    for_each(x_numel, BroadcastBinaryGradOp{dx, dy, a, b, s, kind, which});
}
void add_scalar(float* y, const float* x, float s, int64_t n) { for_each(n, AddScalarOp{y, x, s}); }
void pow_forward(float* y, const float* x, float e, int64_t n) { for_each(n, PowForwardOp{y, x, e}); }
void pow_backward(float* dx, const float* dy, const float* x, float e, int64_t n) { for_each(n, PowBackwardOp{dx, dy, x, e}); }
void axis_sum(float* y, const float* x, int64_t outer, int64_t n, int64_t inner, float scale) {
    for_each(outer * inner, AxisSumOp{y, x, n, inner, scale});
}
void axis_spread(float* dx, const float* dy, int64_t outer, int64_t n, int64_t inner, float scale) {
    for_each(outer * n * inner, AxisSpreadOp{dx, dy, n, inner, scale});
}
void gelu_forward(float* y, const float* x, int64_t n) { for_each(n, GeluForwardOp{y, x}); }
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) { for_each(n, GeluBackwardOp{dx, dy, x}); }

void tanh_forward(float* y, const float* x, int64_t n) { for_each(n, TanhForwardOp{y, x}); }
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n) { for_each(n, TanhBackwardOp{dx, dy, y}); }
void scale_copy(float* y, const float* x, float s, bool accumulate, int64_t n) { for_each(n, ScaleCopyOp{y, x, s, accumulate}); }
void to_bf16(uint16_t* out, const float* x, int64_t n) { for_each(n, ToBf16Op{out, x}); }

void permute_copy(float* y, const float* x, const int64_t* out_shape, const int64_t* src_strides, int dims,
                  bool accumulate) {
    if (dims > kMaxPermuteDims) throw std::invalid_argument("permute_copy: at most 6 dims");
    PermuteCopyOp op{y, x, dims, {}, {}, accumulate};
    int64_t n = 1;
    for (int d = 0; d < dims; ++d) {
        op.out_shape[d] = out_shape[d];
        op.src_strides[d] = src_strides[d];
        n *= out_shape[d];
    }
    for_each(n, op);
}

void axis_block_copy(float* dst, int64_t dst_n, int64_t dst_start, const float* src, int64_t src_n, int64_t src_start,
                     int64_t len, int64_t outer, int64_t inner, bool accumulate) {
    for_each(outer * len * inner, AxisBlockOp{dst, src, dst_n, dst_start, src_n, src_start, len, inner, accumulate});
}

void dropout_forward(float* y, const float* x, uint64_t key, float p, float scale, int64_t n) {
    for_each(n, DropoutForwardOp{y, x, key, p, scale});
}
void dropout_backward(float* dx, const float* dy, uint64_t key, float p, float scale, int64_t n) {
    for_each(n, DropoutBackwardOp{dx, dy, key, p, scale});
}

void embedding_forward(float* out, const float* weight, const int32_t* ids, int64_t n, int64_t C) {
    for_each(n * C, EmbeddingForwardOp{out, weight, ids, C});
}
void embedding_backward(float* dweight, const float* dout, const int32_t* ids, int64_t n, int64_t C,
                        int64_t padding_idx) {
    for_each(n * C, EmbeddingBackwardOp{dweight, dout, ids, C, padding_idx});
}

void fake_quant_forward(float* y, const float* x, const float* amax, float bound, float lo, int64_t C, int64_t inner,
                        int64_t n, bool clip_to_amax) {
    for_each(n, FakeQuantForwardOp{y, x, amax, bound, lo, C, inner, clip_to_amax});
}
void fake_quant_backward(float* dx, const float* dy, const float* x, const float* amax, float bound, float lo, int64_t C,
                         int64_t inner, int64_t n, int rule) {
    for_each(n, FakeQuantBackwardOp{dx, dy, x, amax, bound, lo, C, inner, rule});
}

void learned_range_backward(float* damax, const float* dy, const float* x, const float* amax, float bound, float lo,
                            int rule, int64_t C, int64_t inner, int64_t n, double factor) {
    if (n == 0) return;
    const int64_t per_channel = n / C;
    const unsigned block = 256, per_block = (unsigned)((per_channel + block - 1) / block);
    const unsigned blocks_per_channel = per_block < 1 ? 1 : per_block < 64 ? per_block : 64;
    DeviceArray<double> partial(std::vector<double>((size_t)(C * blocks_per_channel)));
    learned_range_sums(partial.ptr, dy, x, amax, bound, lo, rule, C, inner, per_channel, blocks_per_channel, block);
    const std::vector<double> sums = partial.host();
    std::vector<float> increments((size_t)C);
    for (int64_t c = 0; c < C; ++c) {
        double sum = 0;
        for (unsigned b = 0; b < blocks_per_channel; ++b) sum += sums[(size_t)(c * blocks_per_channel + b)];
        increments[(size_t)c] = (float)(sum * factor);
    }
    DeviceArray<float> added(increments);
    add(damax, damax, added.ptr, C);
}

void max_collect(uint32_t* amax_bits, unsigned long long* nonfinite, const float* x, int64_t C, int64_t inner, int64_t n) {
    for_each(n, MaxCollectOp{amax_bits, nonfinite, x, C, inner});
}
void histogram_collect(unsigned long long* counts, uint32_t* max_bits, unsigned long long* nonfinite, const float* x,
                       float width, int64_t bins, int64_t n) {
    for_each(n, HistogramCollectOp{counts, max_bits, nonfinite, x, width, (float)bins * width, (float)(bins - 1)});
}

double sum_of_squares(const float* x, int64_t n) {
    if (n == 0) return 0.0;
    const unsigned blocks = sum_of_squares_block_count(n, 256);
    double* partial = static_cast<double*>(device_alloc(blocks * sizeof(double)));
    std::vector<double> host(blocks);
    try {
        sum_of_squares(partial, x, n, 256);
        copy(host.data(), false, partial, true, blocks * sizeof(double));
    } catch (...) {
        device_free(partial);
        throw;
    }
    device_free(partial);
    double total = 0;
    for (double p : host) total += p;
    return total;
}
void scale(float* x, float factor, int64_t n) { for_each(n, ScaleOp{x, factor}); }

void adamw_update(float* param, float* exp_avg, float* exp_avg_sq, const float* grad, int64_t n, const AdamWScalars& s) {
    for_each(n, AdamWOp{param, exp_avg, exp_avg_sq, grad, s});
}

}  // namespace qdq::cuda
