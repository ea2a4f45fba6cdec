// Featurizing a data set on every core with the serial loop's result: examples split into
// contiguous runs (autograd/parallel.h), one per thread; each run appends its examples' features
// to its own vector, and the vectors are joined in run order, so the features come out in example
// order whatever the thread count. An example that throws stops its run, and the earliest run's
// error is the one reported: the first failing example in order, as the serial loop's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

#include "autograd/parallel.h"

namespace qdq {

// append(i, out) appends example i's features to out, for i in [0, n).
template <typename Feature, typename Append>
std::vector<Feature> features_in_parallel(int64_t n, Append&& append) {
    // Even a short example costs microseconds to tokenize, so only a set too small to pay for
    // the fork stays on one thread.
    constexpr int64_t kGrain = 64;
    struct Run {
        int64_t begin = 0;
        std::vector<Feature> features;
        std::exception_ptr error;
        int64_t failed_at = 0;
    };
    std::vector<Run> runs;
    std::mutex finished;
    parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        Run run{begin, {}, nullptr, n};
        for (int64_t i = begin; i < end && !run.error; ++i) {
            try {
                append(i, run.features);
            } catch (...) {
                run.error = std::current_exception();
                run.failed_at = i;
            }
        }
        const std::lock_guard<std::mutex> lock(finished);
        runs.push_back(std::move(run));
    });
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.begin < b.begin; });
    for (const Run& run : runs)
        if (run.error) std::rethrow_exception(run.error);  // runs in order: the first is the earliest
    size_t total = 0;
    for (const Run& run : runs) total += run.features.size();
    std::vector<Feature> features;
    features.reserve(total);
    for (Run& run : runs)
        for (Feature& f : run.features) features.push_back(std::move(f));
    return features;
}

}  // namespace qdq
