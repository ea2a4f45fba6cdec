// LayerNorm over rows of C, optionally of x + residual (BERT's "Add & Norm"), one block per row,
// with the CPU kernel's arguments and arithmetic (autograd/ops/layernorm.cpp): forward in double
// (two-pass variance, y rounded once), μ − x₀ and rstd = 1/√(σ² + eps) saved as floats for
// backward, which centres rows on their first value x₀;
//   dx = rstd·(dy·γ − mean(dy·γ) − x̂·mean(dy·γ·x̂)), into dx2 as well for the residual;
//   dγ += Σ_rows dy·x̂, dβ += Σ_rows dy by two more kernels, by blocks of rows as the CPU sums.
#pragma once

#include <cstdint>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/for_each.cuh"

namespace qdq::cuda {

static __global__ void layernorm_forward_rows(float* y, float* mean, float* rstd, float* sum, const float* x,
                                              const float* residual, const float* gamma, const float* beta, float eps,
                                              int64_t C) {
    const int64_t r = blockIdx.x;
    const float* in = x + r * C;
    if (residual) {
        for (int64_t j = threadIdx.x; j < C; j += blockDim.x) sum[r * C + j] = in[j] + residual[r * C + j];
        __syncthreads();  // every thread reads the whole row below
        in = sum + r * C;
    }
    double total = 0.0;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) total += in[j];
    const double mu = block_reduce(total, SumOp{}, 0.0) / (double)C;
    double squares = 0.0;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) squares += (in[j] - mu) * (in[j] - mu);
    const double rs = 1.0 / sqrt(block_reduce(squares, SumOp{}, 0.0) / (double)C + (double)eps);
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) y[r * C + j] = (float)((in[j] - mu) * rs * gamma[j] + beta[j]);
    if (threadIdx.x == 0) {
        mean[r] = (float)(mu - in[0]);
        rstd[r] = (float)rs;
    }
}

static __global__ void layernorm_backward_rows(float* dx, float* dx2, const float* dy, const float* in, const float* mean,
                                               const float* rstd, const float* gamma, int64_t C) {
    const int64_t r = blockIdx.x;
    const float *dyr = dy + r * C, *inr = in + r * C;
    const float x0 = inr[0], m = mean[r], rs = rstd[r];
    float dnorm_sum = 0.0f, dnorm_xhat_sum = 0.0f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
        const float dnorm = dyr[j] * gamma[j];
        dnorm_sum += dnorm;
        dnorm_xhat_sum += dnorm * ((inr[j] - x0) - m) * rs;
    }
    const float offset = -rs * block_reduce(dnorm_sum, SumOp{}, 0.0f) / (float)C;
    const float slope = -rs * rs * block_reduce(dnorm_xhat_sum, SumOp{}, 0.0f) / (float)C;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
        const float g = dyr[j] * gamma[j] * rs + ((inr[j] - x0) - m) * slope + offset;
        dx[r * C + j] += g;
        if (dx2) dx2[r * C + j] += g;
    }
}

// dγ and dβ by blocks of rows, in the order the CPU sums them (its kBlockRows, 32 too): each
// block's partial sums from zero, then the blocks' partials in block order. A thread per (block, column) spreads a column's rows over
// the GPU; one thread per column summing every row kept BERT-base's 768 columns on six SMs.
constexpr int64_t kLayerNormBlockRows = 32;

inline int64_t layernorm_row_blocks(int64_t rows) { return (rows + kLayerNormBlockRows - 1) / kLayerNormBlockRows; }

// partials [blocks, 2C]: block b's Σ dy·x̂ of column j at [b, j], its Σ dy at [b, C + j]
struct LayerNormParamPartialsOp {
    float* partials;
    const float* dy;
    const float* in;
    const float* mean;
    const float* rstd;
    int64_t rows, C;
    __host__ __device__ void operator()(int64_t i) const {
        const int64_t b = i / C, j = i % C, r0 = b * kLayerNormBlockRows;
        const int64_t r1 = r0 + kLayerNormBlockRows < rows ? r0 + kLayerNormBlockRows : rows;
        float dg = 0.0f, db = 0.0f;
        for (int64_t r = r0; r < r1; ++r) {
            const float d = dy[r * C + j];
            dg += d * ((in[r * C + j] - in[r * C]) - mean[r]) * rstd[r];
            db += d;
        }
        partials[b * 2 * C + j] = dg;
        partials[b * 2 * C + C + j] = db;
    }
};

// dgamma[j] += each block's partial, dbeta[j] likewise, in block order
struct LayerNormParamSumOp {
    float* dgamma;
    float* dbeta;
    const float* partials;
    int64_t blocks, C;
    __host__ __device__ void operator()(int64_t j) const {
        float dg = dgamma[j], db = dbeta[j];
        for (int64_t b = 0; b < blocks; ++b) {
            dg += partials[b * 2 * C + j];
            db += partials[b * 2 * C + C + j];
        }
        dgamma[j] = dg;
        dbeta[j] = db;
    }
};

inline void layernorm_forward(float* y, float* mean, float* rstd, float* sum, const float* x, const float* residual,
                              const float* gamma, const float* beta, float eps, int64_t rows, int64_t C,
                              unsigned block = 128) {
    check_row_block(block, "layernorm_forward");
    if (rows > 0) launch(layernorm_forward_rows, dim3((unsigned)rows), dim3(block), y, mean, rstd, sum, x, residual, gamma, beta, eps, C);
}

// `in` is what was normalized (x, or the sum forward wrote); dx2 may be null. partials is scratch
// of layernorm_row_blocks(rows)·2·C floats.
inline void layernorm_backward(float* dx, float* dx2, float* dgamma, float* dbeta, float* partials, const float* dy,
                               const float* in, const float* mean, const float* rstd, const float* gamma, int64_t rows,
                               int64_t C, unsigned block = 128) {
    check_row_block(block, "layernorm_backward");
    if (rows == 0) return;
    launch(layernorm_backward_rows, dim3((unsigned)rows), dim3(block), dx, dx2, dy, in, mean, rstd, gamma, C);
    const int64_t blocks = layernorm_row_blocks(rows);
    for_each(blocks * C, LayerNormParamPartialsOp{partials, dy, in, mean, rstd, rows, C});
    for_each(C, LayerNormParamSumOp{dgamma, dbeta, partials, blocks, C});
}

}  // namespace qdq::cuda
