#include <stdexcept>

#include "cuda/backend.h"

namespace qdq::cuda {

[[noreturn]] static void unavailable() {
    throw std::runtime_error(
        "qdqtrain was built without the CUDA backend (configure with -DQDQ_CUDA=ON where nvcc "
        "and cuBLAS are installed)");
}

bool built_with_cuda() { return false; }
int device_count() { return 0; }
std::string unusable_gpu() { return ""; }
std::string device_description() { return "CUDA backend not built"; }
std::string runtime_versions() { unavailable(); }
void select_device(int) { unavailable(); }
int compute_capability() { unavailable(); }
void* device_alloc(size_t) { unavailable(); }
void device_free(void*) {}
void memset_zero(void*, size_t) { unavailable(); }
void copy(void*, bool, const void*, bool, size_t) { unavailable(); }
int64_t host_waits() { return 0; }
int64_t launches() { return 0; }
int64_t blocks_made() { return 0; }
int64_t peak_bytes_in_use() { return 0; }
void reset_peak_bytes() {}
void gemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
          int64_t, float, float*, int64_t) {
    unavailable();
}
void gemm_bf16(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
               int64_t) {
    unavailable();
}
void gemm_tf32(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
               int64_t) {
    unavailable();
}
void gemm_batched(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
                  float*, int64_t, const GemmBatch&, GemmMath) {
    unavailable();
}
void to_bf16(uint16_t*, const float*, int64_t) { unavailable(); }
Bf16Array bf16_array(const float*, int64_t) { unavailable(); }
void gemm_batched_bf16(bool, bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t, const uint16_t*, int64_t,
                       float, float*, int64_t, const GemmBatch&) {
    unavailable();
}
void fill(float*, float, int64_t) { unavailable(); }
void add(float*, const float*, const float*, int64_t) { unavailable(); }
void add_trailing(float*, const float*, const float*, int64_t, int64_t) { unavailable(); }
void sum_repeats(float*, const float*, int64_t, int64_t) { unavailable(); }
void repeat_trailing(float*, const float*, int64_t, int64_t) { unavailable(); }
void broadcast_binary(float*, const float*, const float*, const BroadcastShape&, int, int64_t) { unavailable(); }
void broadcast_binary_backward(float*, const float*, const float*, const float*, const BroadcastShape&, int, int, int64_t) {
    unavailable();
}
void add_scalar(float*, const float*, float, int64_t) { unavailable(); }
void pow_forward(float*, const float*, float, int64_t) { unavailable(); }
void pow_backward(float*, const float*, const float*, float, int64_t) { unavailable(); }
void axis_sum(float*, const float*, int64_t, int64_t, int64_t, float) { unavailable(); }
void axis_spread(float*, const float*, int64_t, int64_t, int64_t, float) { unavailable(); }
void gelu_forward(float*, const float*, int64_t) { unavailable(); }
void gelu_backward(float*, const float*, const float*, int64_t) { unavailable(); }
void tanh_forward(float*, const float*, int64_t) { unavailable(); }
void tanh_backward(float*, const float*, const float*, int64_t) { unavailable(); }
void scale_copy(float*, const float*, float, bool, int64_t) { unavailable(); }
void permute_copy(float*, const float*, const int64_t*, const int64_t*, int, bool) { unavailable(); }
void axis_block_copy(float*, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, bool) {
    unavailable();
}
void dropout_forward(float*, const float*, uint64_t, float, float, int64_t) { unavailable(); }
void dropout_backward(float*, const float*, uint64_t, float, float, int64_t) { unavailable(); }
void embedding_forward(float*, const float*, const int32_t*, int64_t, int64_t) { unavailable(); }
void embedding_backward(float*, const float*, const int32_t*, int64_t, int64_t, int64_t) { unavailable(); }
unsigned long long* range_fault_word() { unavailable(); }
const unsigned long long* range_fault_to_read() { unavailable(); }
void report_range_fault(unsigned long long) { unavailable(); }
void fake_quant_forward(float*, const float*, const float*, float, float, int64_t, int64_t, int64_t, bool, bool) {
    unavailable();
}
void fake_quant_backward(float*, const float*, const float*, const float*, float, float, int64_t, int64_t, int64_t, int) {
    unavailable();
}
void learned_range_backward(float*, const float*, const float*, const float*, float, float, int, int64_t, int64_t, int64_t,
                            double) {
    unavailable();
}
void max_collect(uint32_t*, unsigned long long*, const float*, int64_t, int64_t, int64_t) { unavailable(); }
void histogram_collect(unsigned long long*, uint32_t*, unsigned long long*, const float*, float, int64_t, int64_t) {
    unavailable();
}
std::vector<double> sums_of_squares(const std::vector<DeviceFloats>&) { unavailable(); }
void scale(const std::vector<DeviceFloats>&, float) { unavailable(); }
void adamw_update(const std::vector<AdamWTensor>&) { unavailable(); }
void softmax_rows_forward(float*, const float*, const float*, const int64_t*, float, int64_t, int64_t) { unavailable(); }
void softmax_rows_backward(float*, const float*, const float*, float, int64_t, int64_t) { unavailable(); }
void cross_entropy_rows_forward(float*, float*, float*, const float*, const int32_t*, int32_t, int64_t, int64_t) {
    unavailable();
}
void cross_entropy_rows_backward(float*, const float*, const float*, const float*, const int32_t*, int32_t, const float*,
                                 float, int64_t, int64_t) {
    unavailable();
}
void log_softmax_rows_forward(float*, const float*, int64_t, int64_t) { unavailable(); }
void log_softmax_rows_backward(float*, const float*, const float*, int64_t, int64_t) { unavailable(); }
void mean_of_rows(float*, const float*, int64_t, int64_t) { unavailable(); }
void kl_div_rows_forward(float*, float*, const float*, const float*, float, int64_t, int64_t) { unavailable(); }
void kl_div_rows_backward(float*, const float*, const float*, const float*, float, const float*, float, int64_t, int64_t) {
    unavailable();
}
void layernorm_rows_forward(float*, float*, float*, float*, const float*, const float*, const float*, const float*, float,
                            int64_t, int64_t) {
    unavailable();
}
void layernorm_rows_backward(float*, float*, float*, float*, const float*, const float*, const float*, const float*,
                             const float*, int64_t, int64_t) {
    unavailable();
}

}  // namespace qdq::cuda
