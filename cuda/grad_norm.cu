// Gradient clipping's entry points (cuda/kernels/grad_norm.cuh) over device pointers: every
// gradient's partial sums of squares land in one buffer, read back once and added on the host in
// order.
#include <vector>

#include "cuda/backend.h"
#include "cuda/kernels/grad_norm.cuh"

namespace qdq::cuda {

std::vector<double> sums_of_squares(const std::vector<DeviceFloats>& arrays) {
    std::vector<size_t> first(arrays.size() + 1, 0);  // where each array's partials begin
    for (size_t i = 0; i < arrays.size(); ++i)
        first[i + 1] = first[i] + (arrays[i].n > 0 ? sum_of_squares_block_count(arrays[i].n, 256) : 0);
    std::vector<double> sums(arrays.size(), 0.0), host(first.back());
    if (host.empty()) return sums;
    double* partial = static_cast<double*>(device_alloc(host.size() * sizeof(double)));
    try {
        for (size_t i = 0; i < arrays.size(); ++i)
            if (arrays[i].n > 0) sum_of_squares(partial + first[i], arrays[i].data, arrays[i].n, 256);
        copy(host.data(), false, partial, true, host.size() * sizeof(double));
    } catch (...) {
        device_free(partial);
        throw;
    }
    device_free(partial);
    for (size_t i = 0; i < arrays.size(); ++i)
        for (size_t b = first[i]; b < first[i + 1]; ++b) sums[i] += host[b];
    return sums;
}
void scale(float* x, float factor, int64_t n) { for_each(n, ScaleOp{x, factor}); }

}  // namespace qdq::cuda
