// OpenMP's thread count for one scope. ctest runs every test on one thread (OMP_NUM_THREADS=1,
// tests/CMakeLists.txt), where a threaded path runs as one piece: a test that proves such a
// path splits its work sets the count it needs, whatever the machine and the environment.
#pragma once

#include <omp.h>

namespace qdq::testing {

class ThreadCount {
public:
    explicit ThreadCount(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
    ~ThreadCount() { omp_set_num_threads(saved_); }
    ThreadCount(const ThreadCount&) = delete;
    ThreadCount& operator=(const ThreadCount&) = delete;

private:
    int saved_;
};

}  // namespace qdq::testing
