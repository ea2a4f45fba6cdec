// features_in_parallel (data/parallel_examples.h) gives what the serial loop gives: the same
// features in example order at any thread count, and the first failing example's error.
#include <gtest/gtest.h>


#include <stdexcept>
#include <string>
#include <vector>

#include "data/parallel_examples.h"
#include "tests/support/thread_count.h"

using namespace qdq;

namespace {

// Example i has i % 3 features (some none), each naming its example and its place.
void append_features(int64_t i, std::vector<std::string>& out) {
    for (int64_t k = 0; k < i % 3; ++k) out.push_back(std::to_string(i) + "." + std::to_string(k));
}

std::vector<std::string> serial_features(int64_t n) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < n; ++i) append_features(i, out);
    return out;
}

// Runs `body` with OpenMP limited to `threads`, restoring the limit after.
template <typename Body>
auto with_threads(int threads, Body&& body) {
    const qdq::testing::ThreadCount count(threads);
    return body();
}

}  // namespace

TEST(ParallelExamples, FeaturesComeInExampleOrderAtAnyThreadCount) {
    for (const int64_t n : {0, 1, 63, 64, 65, 1000, 4097}) {
        for (const int threads : {1, 2, 3, 8}) {
            const std::vector<std::string> features = with_threads(threads, [&] {
                return features_in_parallel<std::string>(n, append_features);
            });
            EXPECT_EQ(features, serial_features(n)) << n << " examples, " << threads << " threads";
        }
    }
}

TEST(ParallelExamples, TheFirstFailingExampleInOrderIsReported) {
    // Examples 700 and 3000 fail; with several threads 3000's run may fail first in time.
    const auto failing = [](int64_t i, std::vector<std::string>& out) {
        if (i == 700 || i == 3000) throw std::invalid_argument("example " + std::to_string(i));
        append_features(i, out);
    };
    for (const int threads : {1, 2, 4}) {
        try {
            with_threads(threads, [&] { return features_in_parallel<std::string>(4000, failing); });
            ADD_FAILURE() << "no error with " << threads << " threads";
        } catch (const std::invalid_argument& e) {
            EXPECT_EQ(std::string(e.what()), "example 700") << threads << " threads";
        }
    }
}
