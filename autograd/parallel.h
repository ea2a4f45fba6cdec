// Threading for row and elementwise kernels: OpenMP over contiguous index ranges.
// The GEMM library runs its own threads; inside a parallel region it runs single-threaded.
#pragma once

#include <algorithm>
#include <cstdint>

#include <omp.h>

namespace qdq {

// Calls body(begin, end) on disjoint chunks covering [0, n). Work below `grain` items
// stays on the calling thread: forking costs a few microseconds, more than a small loop.
template <typename Body>
void parallel_for(int64_t n, int64_t grain, Body&& body) {
    int threads = omp_get_max_threads();
    if (n <= grain || threads <= 1 || omp_in_parallel()) {
        if (n > 0) body(int64_t{0}, n);
        return;
    }
    int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
#pragma omp parallel num_threads((int)chunks)
    {
        int64_t t = omp_get_thread_num();
        int64_t begin = n * t / chunks, end = n * (t + 1) / chunks;
        if (begin < end) body(begin, end);
    }
}

}  // namespace qdq
