// Gradient clipping's entry points (cuda/kernels/grad_norm.cuh) over device pointers; the sum of
// squares adds its blocks' partials on the host, in order.
#include <vector>

#include "cuda/backend.h"
#include "cuda/kernels/grad_norm.cuh"

namespace qdq::cuda {

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

}  // namespace qdq::cuda
