// Gradient clipping's entry points (cuda/kernels/grad_norm.cuh) over device pointers: every
// gradient's partial sums of squares land in one buffer, read back once and added on the host in
// order; both passes launch once per batch of gradients (cuda/kernels/tensor_batch.cuh).
#include <vector>

#include "cuda/backend.h"
#include "cuda/kernels/grad_norm.cuh"

namespace qdq::cuda {

std::vector<double> sums_of_squares(const std::vector<DeviceFloats>& arrays) {
    std::vector<size_t> first(arrays.size() + 1, 0);  // where each array's partials begin
    std::vector<const float*> data;
    std::vector<int64_t> n;
    for (size_t i = 0; i < arrays.size(); ++i) {
        first[i + 1] = first[i] + (arrays[i].n > 0 ? sum_of_squares_block_count(arrays[i].n, 256) : 0);
        data.push_back(arrays[i].data);
        n.push_back(arrays[i].n);
    }
    std::vector<double> sums(arrays.size(), 0.0), host(first.back());
    if (host.empty()) return sums;
    double* partial = static_cast<double*>(device_alloc(host.size() * sizeof(double)));
    try {
        sums_of_squares_batched(partial, data, n, 256);
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

void scale(const std::vector<DeviceFloats>& arrays, float factor) {
    std::vector<ScaleOp> ops;
    std::vector<int64_t> n;
    for (const DeviceFloats& a : arrays) {
        ops.push_back({a.data, factor});
        n.push_back(a.n);
    }
    for_each_of_batches(ops, n);
}

}  // namespace qdq::cuda
