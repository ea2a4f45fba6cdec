// The CUDA backend's entry points, over raw device pointers (row-major, float32).
// Ops in autograd/ route here when their tensors live on Device::CUDA. A build without CUDA
// links backend_disabled.cpp instead, whose functions report that clearly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/broadcast_shape.h"
#include "cuda/optimizer_math.h"

namespace qdq::cuda {

bool built_with_cuda();
int device_count();  // 0 without a usable driver and device; never throws
// Why a GPU that is there cannot be used (a driver older than the runtime, ...), naming the
// runtime's error; "" when there is none or it works (cuda/gpu_availability.h).
std::string unusable_gpu();
std::string device_description();
// "driver 13.0, runtime 13.0" (needs a device).
std::string runtime_versions();
// The current device's compute capability as major·10 + minor (80 for 8.0); needs a device.
int compute_capability();

// The device this process uses from now on: index mod device_count() (a data-parallel rank's
// local rank picks its GPU). Call before anything is allocated: another device than the current
// one is refused once this process holds device memory (cuda/block_cache.h).
void select_device(int index);

void* device_alloc(size_t bytes);
void device_free(void* ptr);
void memset_zero(void* ptr, size_t bytes);
void copy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes);
// Copies between the host and the device so far in this process. Each one makes the host wait
// for the device's queue, so a training step's count is what keeps the GPU from running ahead.
int64_t host_waits();
// Kernel launches and cuBLAS calls so far in this process (cuda/launch_count.h).
int64_t launches();
// Device blocks made so far in this process (cudaMalloc calls): allocations the block cache
// could not serve from what was freed. A step after the first should make none.
int64_t blocks_made();
// Bytes of the device blocks handed out (size classes, as cuda/block_cache.h rounds them): the
// most since reset_peak_bytes(), as torch.cuda.max_memory_allocated() reports PyTorch's.
int64_t peak_bytes_in_use();
void reset_peak_bytes();

// Same contract as qdq::gemm (autograd/gemm.h), on device pointers, through cuBLAS.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc);
// The same with A and B rounded to bf16 as the CPU's gemm_bf16 rounds them (cuda/bf16_math.h)
// and FP32 sums: cublasGemmEx on bf16 copies of the operands, FP32 compute (compute capability
// 8.0 or later; older devices' cuBLAS refuses, and the error says so).
void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
               int64_t ldc);
// The same on tensor cores in TF32 (compute capability 8.0 or later): each operand read to 10
// bits of its mantissa, FP32 sums (cublasGemmEx's CUBLAS_COMPUTE_32F_FAST_TF32), as PyTorch's
// allow_tf32. cuBLAS does not say how it shortens an operand; the emulated device truncates.
void gemm_tf32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
               int64_t ldc);
// How cuBLAS multiplies: gemm's FP32, gemm_bf16's bf16 copies, gemm_tf32's tensor cores.
enum class GemmMath { F32, BF16, TF32 };
// Entries of a strided batch of products: entry i of A at A + i·stride_a, of B and C alike; a
// stride of 0 shares that operand (never C's: entries must not write one output).
struct GemmBatch {
    int64_t count, stride_a, stride_b, stride_c;
};
// gemm, gemm_bf16 or gemm_tf32 as `math` says, for every entry of the batch: one cuBLAS call.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmBatch& batch,
                  GemmMath math);
// out[i] = the bf16 bits of x[i], n elements on the device.
void to_bf16(uint16_t* out, const float* x, int64_t n);
// A bf16 copy of n device floats (to_bf16), freed with its last holder: an operand converted
// once and read by every product that needs it, as a linear's weight is by its forward and its
// input's gradient.
using Bf16Array = std::shared_ptr<const uint16_t>;
Bf16Array bf16_array(const float* x, int64_t n);
// gemm_batched in bf16 on operands already converted: A and B hold the bf16 bits of what the
// float operands would hold, at the same offsets.
void gemm_batched_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A,
                       int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc,
                       const GemmBatch& batch);

// The kernels of cuda/kernels/*.cuh, with the arguments of their CPU twins in autograd/ops/.
// y[i] = value
void fill(float* y, float value, int64_t n);
// out[i] = a[i] + b[i]
void add(float* out, const float* a, const float* b, int64_t n);
// y [n] = a + b repeated (b's nb values over a's leading dims); db [nb] += the repeats of dy summed
// (linear's bias gradient too); y [n] = b repeated (linear's bias, before the product adds to it).
void add_trailing(float* y, const float* a, const float* b, int64_t n, int64_t nb);
void sum_repeats(float* db, const float* dy, int64_t nb, int64_t repeats);
void repeat_trailing(float* y, const float* b, int64_t n, int64_t nb);
// y = a ∘ b with numpy broadcasting over s (n output elements); the gradient of input `which`
// (0: a, 1: b, x_numel elements), each element summing over the outputs that read it.
void broadcast_binary(float* y, const float* a, const float* b, const BroadcastShape& s, int kind, int64_t n);
void broadcast_binary_backward(float* dx, const float* dy, const float* a, const float* b, const BroadcastShape& s,
                               int kind, int which, int64_t x_numel);
// y = x + s;  y = x^e and dx += dy·e·x^(e−1)
void add_scalar(float* y, const float* x, float s, int64_t n);
void pow_forward(float* y, const float* x, float e, int64_t n);
void pow_backward(float* dx, const float* dy, const float* x, float e, int64_t n);
// Sums along an axis of x seen as [outer, n, inner]: y [outer, inner] = scale·Σ (in double);
// backward dx += scale·dy spread over the axis.
void axis_sum(float* y, const float* x, int64_t outer, int64_t n, int64_t inner, float scale);
void axis_spread(float* dx, const float* dy, int64_t outer, int64_t n, int64_t inner, float scale);
// y = gelu(x); dx += dy · gelu'(x)
void gelu_forward(float* y, const float* x, int64_t n);
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n);
// y = tanh(x); dx += dy·(1 − y²). y = x·s, or y += x·s with accumulate.
void tanh_forward(float* y, const float* x, int64_t n);
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n);
void scale_copy(float* y, const float* x, float s, bool accumulate, int64_t n);
// Output element i of a permutation (dims ≤ 6) reads x at Σ digit_d(i)·src_strides[d]; with
// accumulate it adds y back there instead (the backward).
void permute_copy(float* y, const float* x, const int64_t* out_shape, const int64_t* src_strides, int dims,
                  bool accumulate);
// dst[o, dst_start + k, :] = (or +=) src[o, src_start + k, :], k < len, tensors seen as
// [outer, n, inner] (slice, concat).
void axis_block_copy(float* dst, int64_t dst_n, int64_t dst_start, const float* src, int64_t src_n, int64_t src_start,
                     int64_t len, int64_t outer, int64_t inner, bool accumulate);
// Inverted dropout with the CPU's mask for `key` (cuda/counter_hash.h).
void dropout_forward(float* y, const float* x, uint64_t key, float p, float scale, int64_t n);
void dropout_backward(float* dx, const float* dy, uint64_t key, float p, float scale, int64_t n);
// out [n, C] = weight rows at ids [n]; dweight rows at ids += dout rows (atomic adds), except
// the rows whose id is padding_idx (ops.h: kNoPadding for none).
void embedding_forward(float* out, const float* weight, const int32_t* ids, int64_t n, int64_t C);
void embedding_backward(float* dweight, const float* dout, const int32_t* ids, int64_t n, int64_t C, int64_t padding_idx);
// Fake quantization's ranges are checked on the device without a wait, by fake_quant_forward:
// the first that is NaN, infinite or negative (or else an unsigned quantizer's negative input)
// is reported by the next copy from the device to the host, which throws the CPU op's error. A
// check writes range_fault_word() (made on first use), which marks that one ran; copy then takes
// range_fault_to_read(), the word if a check ran since its last read (null otherwise), reads it
// with its own copy's wait, and hands the value to report_range_fault.
unsigned long long* range_fault_word();
const unsigned long long* range_fault_to_read();
void report_range_fault(unsigned long long word);
// Fake quantization of n elements seen as [outer, C, inner], amax [C] on the device (checked),
// integer range [lo, bound], the input first clipped to ±amax for PACT (cuda/quant_math.h), or
// with `codes` the integer codes themselves, not divided back (quant_codes); the backward's
// straight-through gradient by `rule` (cuda/kernels/fake_quant.cuh: clipped STE, PACT, LSQ); a
// learned range's gradient, damax[c] += factor · Σ dy·term over channel c, the sum in double
// and its partials added in a fixed order.
void fake_quant_forward(float* y, const float* x, const float* amax, float bound, float lo, int64_t C, int64_t inner,
                        int64_t n, bool clip_to_amax, bool codes);
void fake_quant_backward(float* dx, const float* dy, const float* x, const float* amax, float bound, float lo, int64_t C,
                         int64_t inner, int64_t n, int rule);
void learned_range_backward(float* damax, const float* dy, const float* x, const float* amax, float bound, float lo,
                            int rule, int64_t C, int64_t inner, int64_t n, double factor);
// Calibration's collecting pass: per-channel max of |x| as float bits ([outer, C, inner]); a
// histogram's counts in `bins` bins of `width` and the largest |x| as bits; NaN and infinities
// counted in nonfinite. Device pointers, accumulated into.
void max_collect(uint32_t* amax_bits, unsigned long long* nonfinite, const float* x, int64_t C, int64_t inner, int64_t n);
void histogram_collect(unsigned long long* counts, uint32_t* max_bits, unsigned long long* nonfinite, const float* x,
                       float width, int64_t bins, int64_t n);
// Gradient clipping: Σ x² of each device array (in double, each array's blocks summed in order on
// the host), every array's partial sums read back in one copy; and x *= factor over every array.
// Both launch once per batch of arrays (cuda/kernels/tensor_batch.cuh), not once per array.
struct DeviceFloats {
    float* data;
    int64_t n;
};
std::vector<double> sums_of_squares(const std::vector<DeviceFloats>& arrays);
void scale(const std::vector<DeviceFloats>& arrays, float factor);
// AdamW's update (cuda/optimizer_math.h) of each parameter, with its own scalars (its group's
// weight decay, its own step count), in one launch per batch of parameters.
struct AdamWTensor {
    float* param;
    float* exp_avg;
    float* exp_avg_sq;
    const float* grad;
    int64_t n;
    AdamWScalars s;
};
void adamw_update(const std::vector<AdamWTensor>& tensors);
// y = softmax(scale·x + mask) by rows of C (mask_rows[r]: row r's mask offset, or mask null);
// dx += scale · y ⊙ (dy − Σ dy⊙y). mask and mask_rows are device pointers too.
void softmax_rows_forward(float* y, const float* x, const float* mask, const int64_t* mask_rows, float scale,
                          int64_t rows, int64_t C);
void softmax_rows_backward(float* dx, const float* dy, const float* y, float scale, int64_t rows, int64_t C);
// log_softmax by rows of C: y = x − lse(x); dx += dy − e^y·Σ dy.
void log_softmax_rows_forward(float* y, const float* x, int64_t rows, int64_t C);
void log_softmax_rows_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t C);
// Cross-entropy by rows of C: each row's loss and its lse (row_max + log_sum), 0 for ignored
// rows; backward dx += scale·(softmax − onehot) for the rest, scale = *upstream/over with
// upstream the loss's gradient on the device (0 when over is 0). mean_of_rows averages the losses.
void cross_entropy_rows_forward(float* losses, float* row_max, float* log_sum, const float* x, const int32_t* labels,
                                int32_t ignore_index, int64_t rows, int64_t C);
void cross_entropy_rows_backward(float* dx, const float* x, const float* row_max, const float* log_sum,
                                 const int32_t* labels, int32_t ignore_index, const float* upstream, float over, int64_t rows,
                                 int64_t C);
// *mean = Σ losses[r] / count (0 when count is 0), in double in row order as the CPU averages
// the rows' losses; the loss stays on the device.
void mean_of_rows(float* mean, const float* losses, int64_t rows, int64_t count);
// Distillation's KL(softmax(t/T) ‖ softmax(x/T)) by rows of C (softmax_kl_div), inv_t = 1/T:
// each row's KL and stats [rows, 4] (the student's and the teacher's max and log-sum); backward
// dx += scale·(q − p), scale = (*upstream·inv_t)/over as in cross_entropy_rows_backward.
// mean_of_rows averages the rows.
void kl_div_rows_forward(float* losses, float* stats, const float* x, const float* t, float inv_t, int64_t rows, int64_t C);
void kl_div_rows_backward(float* dx, const float* x, const float* t, const float* stats, float inv_t, const float* upstream,
                          float over, int64_t rows, int64_t C);
// LayerNorm by rows of C of x (+ residual, written to sum), saving mean (μ − x₀) and rstd;
// backward from `in` (x, or sum) into dx (and dx2, the residual's, unless null), dgamma, dbeta.
void layernorm_rows_forward(float* y, float* mean, float* rstd, float* sum, const float* x, const float* residual,
                            const float* gamma, const float* beta, float eps, int64_t rows, int64_t C);
void layernorm_rows_backward(float* dx, float* dx2, float* dgamma, float* dbeta, const float* dy, const float* in,
                             const float* mean, const float* rstd, const float* gamma, int64_t rows, int64_t C);

}  // namespace qdq::cuda
