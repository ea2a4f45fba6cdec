// matmul and linear: every product goes through the project's one GEMM, qdq::gemm on the CPU
// and cuda::gemm (same contract) when the tensors live on the GPU.
//
// Backward of one product Y = op(A)·op(B), with op(X) = X or Xᵀ:
//   d op(A) = dY·op(B)ᵀ, so dA = dY·op(B)ᵀ, or (dY·op(B)ᵀ)ᵀ = op(B)·dYᵀ when A is stored transposed;
//   d op(B) = op(A)ᵀ·dY, so dB = op(A)ᵀ·dY, or dYᵀ·op(A) when B is stored transposed.
// Each is one GEMM with beta = 1, accumulating straight into the grad buffer.
//
// The GEMM is chosen when the op runs forward, from the device and the thread's matmul
// precision (matmul_precision.h), and the backward closure keeps it: bf16 forward, bf16
// backward, on the CPU and on the GPU alike. On the GPU a bf16 product's operands are converted
// once each (Operand): the backward keeps the forward's copies, as autocast keeps bf16 inputs.
#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "autograd/matmul_precision.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                        const float*, int64_t, float, float*, int64_t);

// Where and in what precision a product runs: chosen when the op runs forward, kept by its
// backward closure.
struct GemmChoice {
    Device device;
    MatmulPrecision precision;
    GemmFn cpu_gemm() const { return precision == MatmulPrecision::BF16 ? &gemm_bf16 : &qdq::gemm; }  // no TF32 on a CPU
    cuda::GemmMath device_math() const {
        return precision == MatmulPrecision::BF16 ? cuda::GemmMath::BF16
               : precision == MatmulPrecision::TF32 ? cuda::GemmMath::TF32
                                                    : cuda::GemmMath::F32;
    }
    bool device_bf16() const { return device == Device::CUDA && precision == MatmulPrecision::BF16; }
    // The bf16 copy of x that the device's bf16 products read; null for any other product.
    cuda::Bf16Array bf16_copy(const Tensor& x) const {
        return device_bf16() ? cuda::bf16_array(x.f32(), x.numel()) : nullptr;
    }
};

// A product's operand: its floats and, for the device's bf16 products, their bf16 copy. The copy
// is made once per tensor and kept by the backward: a linear's weight is read by its forward and
// by its input's gradient, its input by the forward and the weight's gradient, dy by both
// gradients, and each is converted once, not at every GEMM.
struct Operand {
    const float* f32;
    const uint16_t* bf16;
    Operand at(int64_t offset) const { return {f32 + offset, bf16 ? bf16 + offset : nullptr}; }
};

Operand operand(const Tensor& x, const cuda::Bf16Array& copy) { return {x.f32(), copy.get()}; }

GemmChoice gemm_on(Device device) { return {device, matmul_precision()}; }

void check_float_input(const Tensor& t, const char* op, const char* name) {
    check(t.defined(), std::string(op) + ": " + name + " is undefined");
    check(t.dtype() == DType::F32, std::string(op) + ": " + name + " must be float32, got " +
                                       dtype_name(t.dtype()));
}

// One batch of products Y[i] = op(A[i])·op(B[i]), i < batch; stride_b == 0 shares B.
struct BatchedProduct {
    int64_t batch, M, N, K;
    bool trans_a, trans_b;
    int64_t stride_a, stride_b, stride_y;
    int64_t lda() const { return trans_a ? M : K; }
    int64_t ldb() const { return trans_b ? K : N; }
};

// C[i] = op(A[i])·op(B[i]) + beta·C[i] for i < batch.count, entry i at A + i·batch.stride_a (B
// and C alike). On the GPU, entries with outputs of their own are one strided-batched cuBLAS call: attention's
// per-head products are hundreds of small GEMMs a layer, which one launch each leaves the GPU
// waiting on the host. On the CPU, when there are enough entries to keep every thread busy, the
// entries run in parallel and the GEMM library (called inside the parallel region)
// single-threaded: for the per-head products that beats threading each one. Otherwise the
// entries run one after the other. Entries that share an output (summing into it) never run
// together.
void products(const GemmChoice& gemm, const cuda::GemmBatch& batch, bool shared_output, bool trans_a, bool trans_b,
              int64_t M, int64_t N, int64_t K, Operand A, int64_t lda, Operand B, int64_t ldb, float beta, float* C,
              int64_t ldc) {
    if (gemm.device == Device::CUDA) {
        const cuda::GemmBatch call = shared_output ? cuda::GemmBatch{1, 0, 0, 0} : batch;
        for (int64_t i = 0; i < batch.count; i += call.count) {
            const Operand a = A.at(i * batch.stride_a), b = B.at(i * batch.stride_b);
            float* c = C + i * batch.stride_c;
            if (gemm.device_bf16())
                cuda::gemm_batched_bf16(trans_a, trans_b, M, N, K, 1.0f, a.bf16, lda, b.bf16, ldb, beta, c, ldc, call);
            else
                cuda::gemm_batched(trans_a, trans_b, M, N, K, 1.0f, a.f32, lda, b.f32, ldb, beta, c, ldc, call,
                                   gemm.device_math());
        }
        return;
    }
    const GemmFn one = gemm.cpu_gemm();
    auto entry = [&](int64_t i) {
        one(trans_a, trans_b, M, N, K, 1.0f, A.f32 + i * batch.stride_a, lda, B.f32 + i * batch.stride_b, ldb, beta,
            C + i * batch.stride_c, ldc);
    };
    if (!shared_output && batch.count > 1 && batch.count >= omp_get_max_threads()) {
        parallel_for(batch.count, 1, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) entry(i);
        });
        return;
    }
    for (int64_t i = 0; i < batch.count; ++i) entry(i);
}

void product_forward(const BatchedProduct& p, const GemmChoice& gemm, float* y, Operand a, Operand b) {
    products(gemm, {p.batch, p.stride_a, p.stride_b, p.stride_y}, false, p.trans_a, p.trans_b, p.M, p.N, p.K, a,
             p.lda(), b, p.ldb(), 0.0f, y, p.N);
}

// Either gradient pointer may be null (that input needs none).
void product_backward(const BatchedProduct& p, const GemmChoice& gemm, float* ga, float* gb, Operand gy, Operand a,
                      Operand b) {
    if (ga) {
        if (!p.trans_a)
            products(gemm, {p.batch, p.stride_y, p.stride_b, p.stride_a}, false, false, !p.trans_b, p.M, p.K, p.N,
                     gy, p.N, b, p.ldb(), 1.0f, ga, p.K);
        else
            products(gemm, {p.batch, p.stride_b, p.stride_y, p.stride_a}, false, p.trans_b, true, p.K, p.M, p.N,
                     b, p.ldb(), gy, p.N, 1.0f, ga, p.M);
    }
    if (gb) {
        // A shared B sums every entry's gradient into one buffer.
        const bool shared = p.stride_b == 0;
        if (!p.trans_b)
            products(gemm, {p.batch, p.stride_a, p.stride_y, p.stride_b}, shared, !p.trans_a, false, p.K, p.N, p.M,
                     a, p.lda(), gy, p.N, 1.0f, gb, p.N);
        else
            products(gemm, {p.batch, p.stride_y, p.stride_a, p.stride_b}, shared, true, p.trans_a, p.N, p.K, p.M,
                     gy, p.N, a, p.lda(), 1.0f, gb, p.K);
    }
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
    check_float_input(a, "matmul", "a");
    check_float_input(b, "matmul", "b");
    check_same_device("matmul", {a, b});
    check(a.dim() >= 2 && b.dim() >= 2, "matmul: needs at least 2-D operands, got " +
                                            shape_str(a.shape()) + " and " + shape_str(b.shape()));
    bool shared_b = b.dim() == 2;
    Shape batch_shape(a.shape().begin(), a.shape().end() - 2);
    check(shared_b || (a.dim() == b.dim() &&
                       std::equal(batch_shape.begin(), batch_shape.end(), b.shape().begin())),
          "matmul: batch dims of " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
              " differ (only a 2-D b is broadcast)");
    int64_t M = trans_a ? a.size(-1) : a.size(-2);
    int64_t K = trans_a ? a.size(-2) : a.size(-1);
    int64_t K_b = trans_b ? b.size(-1) : b.size(-2);
    int64_t N = trans_b ? b.size(-2) : b.size(-1);
    check(K == K_b, "matmul: inner dims differ: " + shape_str(a.shape()) +
                        (trans_a ? "ᵀ" : "") + " · " + shape_str(b.shape()) + (trans_b ? "ᵀ" : ""));

    BatchedProduct p{shape_numel(batch_shape), M, N, K, trans_a, trans_b,
                     M * K, shared_b ? 0 : K * N, M * N};
    // A shared B with an untransposed A is a single product: the batch folds into M.
    if (shared_b && !trans_a) p = {1, p.batch * M, N, K, false, trans_b, 0, 0, 0};

    const GemmChoice gemm = gemm_on(a.device());
    Shape out_shape = batch_shape;
    out_shape.push_back(M);
    out_shape.push_back(N);
    Tensor y = K == 0 ? zeros(out_shape, DType::F32, a.device()) : empty(out_shape, DType::F32, a.device());
    const cuda::Bf16Array a16 = gemm.bf16_copy(a), b16 = gemm.bf16_copy(b);
    if (K > 0) product_forward(p, gemm, y.f32(), operand(a, a16), operand(b, b16));
    if (needs_grad({a, b})) {
        // a's gradient reads b, b's reads a: a copy is kept only for a gradient that needs it.
        const cuda::Bf16Array kept_a = b.requires_grad() ? a16 : nullptr, kept_b = a.requires_grad() ? b16 : nullptr;
        record(y, {a, b}, [a, b, p, gemm, kept_a, kept_b](const Tensor& gy) {
            const cuda::Bf16Array gy16 = gemm.bf16_copy(gy);
            product_backward(p, gemm, grad_data_or_null(a), grad_data_or_null(b), operand(gy, gy16), operand(a, kept_a),
                             operand(b, kept_b));
        });
    }
    return y;
}

// x [R, in] (R = all leading dims), weight [out, in], y [R, out]:
//   y = x·Wᵀ + b;  dx += dy·W;  dW += dyᵀ·x;  db += Σ_rows dy.
// The bias is copied into y's rows and the product added to it (β = 1), on either device, so it
// stays FP32 under bf16 products; its gradient sums dy's rows (on the GPU by blocks of rows,
// cuda::sum_repeats).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    check_float_input(x, "linear", "x");
    check_float_input(weight, "linear", "weight");
    check(weight.dim() == 2, "linear: weight must be [out, in], got " + shape_str(weight.shape()));
    int64_t out = weight.size(0), in = weight.size(1);
    check(x.dim() >= 1 && x.size(-1) == in, "linear: x " + shape_str(x.shape()) +
                                                " does not end in weight's in-features " +
                                                std::to_string(in));
    check_same_device("linear", {x, weight, bias});
    const Device device = x.device();
    if (bias.defined()) {
        check_float_input(bias, "linear", "bias");
        check(bias.dim() == 1 && bias.size(0) == out,
              "linear: bias must be [" + std::to_string(out) + "], got " + shape_str(bias.shape()));
    }
    int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
    Shape out_shape = x.shape();
    out_shape.back() = out;
    Tensor y = empty(out_shape, DType::F32, device);
    const GemmChoice gemm = gemm_on(device);
    const cuda::GemmBatch single{1, 0, 0, 0};

    float beta = 0.0f;
    if (bias.defined()) {
        float* py = y.f32();
        const float* pb = bias.f32();
        if (device == Device::CUDA) {
            cuda::repeat_trailing(py, pb, rows * out, out);
        } else {
            parallel_for(rows, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(out, 1)),
                         [&](int64_t begin, int64_t end) {
                             for (int64_t r = begin; r < end; ++r)
                                 std::copy(pb, pb + out, py + r * out);
                         });
        }
        beta = 1.0f;
    }
    const cuda::Bf16Array x16 = gemm.bf16_copy(x), weight16 = gemm.bf16_copy(weight);
    if (in > 0)
        products(gemm, single, false, false, true, rows, out, in, operand(x, x16), in, operand(weight, weight16), in,
                 beta, y.f32(), out);
    else if (!bias.defined())
        y = zeros(out_shape, DType::F32, device);

    if (needs_grad({x, weight, bias})) {
        // dx reads the weight, dW reads x: a copy is kept only for a gradient that needs it.
        const cuda::Bf16Array kept_x = weight.requires_grad() ? x16 : nullptr;
        const cuda::Bf16Array kept_weight = x.requires_grad() ? weight16 : nullptr;
        record(y, {x, weight, bias}, [x, weight, bias, rows, out, in, gemm, single, kept_x, kept_weight](const Tensor& gy) {
            const float* g = gy.f32();
            const cuda::Bf16Array gy16 = x.requires_grad() || weight.requires_grad() ? gemm.bf16_copy(gy) : nullptr;
            if (x.requires_grad())
                products(gemm, single, false, false, false, rows, in, out, operand(gy, gy16), out,
                         operand(weight, kept_weight), in, 1.0f, x.grad_buffer().f32(), in);
            if (weight.requires_grad())
                products(gemm, single, false, true, false, out, in, rows, operand(gy, gy16), out, operand(x, kept_x), in,
                         1.0f, weight.grad_buffer().f32(), in);
            if (bias.defined() && bias.requires_grad()) {
                float* gb = bias.grad_buffer().f32();
                if (x.is_cuda()) {
                    cuda::sum_repeats(gb, g, out, rows);
                    return;
                }
                // Columns split across threads: each sums its columns over every row.
                parallel_for(out, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(rows, 1)),
                             [&](int64_t c0, int64_t c1) {
                                 for (int64_t r = 0; r < rows; ++r) {
                                     const float* gr = g + r * out;
#pragma omp simd
                                     for (int64_t c = c0; c < c1; ++c) gb[c] += gr[c];
                                 }
                             });
            }
        });
    }
    return y;
}

}  // namespace qdq
