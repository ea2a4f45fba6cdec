// Calibrators (quant/calibrators.h).
//  - The histogram calibrator against an independent numpy statement of PQ's algorithm
//    (fixtures/quant.json "histograms", written by fixtures/make_quant.py) on Gaussian, Laplace and
//    Gaussian-with-outliers batches: bin counts after each batch, width and every count exactly,
//    and the amax of percentile (four p), mse and entropy as the exact same bin edge or centre.
//    Exact, not within a bin: both sides do the same float32 operations on the same float32
//    samples (bin index floor(v/width), edges i·width, centres (e_i + e_{i+1})/2) and sum integer
//    counts exactly in double; what differs (numpy's pairwise sums and its vectorised log in
//    the mse errors and KL divergences, against sequential sums and glibc's log here) moves a
//    score by ~1e-16 relative, far below the gap between two candidates on these samples.
//  - The growth rule: old counts stay, new bins have the same width, a value at the old range's
//    end lands past it once the range grows; zeros before the first nonzero batch.
//  - Max calibration per tensor and per channel, and the errors on non-finite values.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "quant/calibrators.h"
#include "tests/support/expect_error.h"
#include "tests/support/fixture.h"
#include "tests/support/gradcheck.h"
#include "tests/support/thread_count.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

const nlohmann::json& histogram_fixture() {
    static const nlohmann::json root = read_fixture_json("quant.json", "tests/fixtures/make_quant.py");
    return root.at("histograms");
}

Tensor batch_tensor(const nlohmann::json& ints) {
    std::vector<float> v;
    for (const nlohmann::json& n : ints) v.push_back((float)n.get<int64_t>() * 0x1.0p-16f);
    return from_vector({(int64_t)v.size()}, v);
}


class HistogramFixture : public ::testing::TestWithParam<std::string> {
protected:
    HistogramCalibrator collected() {
        const nlohmann::json& c = histogram_fixture().at(GetParam());
        HistogramCalibrator calib;
        calib.initial_bins = c.at("initial_bins");
        std::vector<int64_t> bins_after_batch;
        for (const nlohmann::json& batch : c.at("batches")) {
            collect(calib, batch_tensor(batch));
            bins_after_batch.push_back((int64_t)calib.counts.size());
        }
        EXPECT_EQ(bins_after_batch, c.at("bins_after_batch").get<std::vector<int64_t>>());
        return calib;
    }
};

}  // namespace

TEST_P(HistogramFixture, CountsAreTheNumpyStatementsExactly) {
    const nlohmann::json& c = histogram_fixture().at(GetParam());
    HistogramCalibrator calib = collected();
    EXPECT_EQ(calib.width, c.at("width").get<float>());
    std::vector<int64_t> expected = c.at("counts");
    ASSERT_EQ(calib.counts.size(), expected.size());
    int mismatches = 0;
    for (size_t i = 0; i < expected.size(); ++i)
        if (calib.counts[i] != expected[i] && mismatches++ < 5)
            ADD_FAILURE() << "bin " << i << ": " << calib.counts[i] << ", numpy " << expected[i];
    EXPECT_EQ(mismatches, 0);
}

TEST_P(HistogramFixture, PercentileMseAndEntropyPickTheSameAmax) {
    const nlohmann::json& c = histogram_fixture().at(GetParam());
    HistogramCalibrator calib = collected();
    for (const auto& [p, amax] : c.at("percentile").items())
        EXPECT_EQ(percentile_amax(calib, std::stod(p)), amax.get<float>()) << "percentile " << p;
    EXPECT_EQ(mse_amax(calib), c.at("mse").get<float>());
    EXPECT_EQ(entropy_amax(calib), c.at("entropy").get<float>());
}

// Restricting the candidates to start_bin = the pick, any stride, keeps the pick (it is the
// argmin over a superset); starting one past it cannot.
TEST_P(HistogramFixture, StartBinAndStrideChooseTheCandidates) {
    HistogramCalibrator calib = collected();
    float mse = mse_amax(calib), entropy = entropy_amax(calib);
    auto bin_of = [&](float amax) { return (int64_t)std::floor(amax / calib.width); };
    int64_t mse_bin = bin_of(mse), entropy_bin = (int64_t)std::lround(entropy / calib.width);
    EXPECT_EQ(mse_amax(calib, mse_bin, 7), mse);
    EXPECT_NE(mse_amax(calib, mse_bin + 1, 1), mse);
    EXPECT_NE(mse_amax(calib, mse_bin - 1, 2), mse);  // the stride steps over the pick
    EXPECT_EQ(entropy_amax(calib, entropy_bin, 5), entropy);
    EXPECT_NE(entropy_amax(calib, entropy_bin + 1, 1), entropy);
    EXPECT_NE(entropy_amax(calib, entropy_bin - 1, 2), entropy);
}

INSTANTIATE_TEST_SUITE_P(Quant, HistogramFixture,
                         ::testing::Values("gaussian", "laplace", "gaussian_outliers"),
                         [](const auto& info) { return info.param; });

TEST(HistogramCalibrator, GrowingKeepsOldCountsAndTheWidth) {
    HistogramCalibrator calib{.initial_bins = 4};
    collect(calib, from_vector({5}, {0.1f, -0.3f, 0.6f, -0.9f, 1.0f}));  // width 0.25
    EXPECT_EQ(calib.width, 0.25f);
    EXPECT_EQ(calib.counts, (std::vector<int64_t>{1, 1, 1, 2}));  // 1.0 closes the last bin
    // 2.1 needs bins up to edge 9·0.25 = 2.25. 1.0, the old range's end, now opens bin 4.
    collect(calib, from_vector({3}, {2.1f, -1.0f, 0.2f}));
    EXPECT_EQ(calib.width, 0.25f);
    EXPECT_EQ(calib.counts, (std::vector<int64_t>{2, 1, 1, 2, 1, 0, 0, 0, 1}));
    // Within the range: no growth; the end of the range stays in the last bin.
    collect(calib, from_vector({2}, {2.25f, 0.0f}));
    EXPECT_EQ(calib.counts, (std::vector<int64_t>{3, 1, 1, 2, 1, 0, 0, 0, 2}));
    reset(calib);
    EXPECT_TRUE(calib.counts.empty());
    EXPECT_EQ(calib.width, 0.0f);
}

// width = 0.3/4 = 0.075 (float32). v = the float after 0.375 = edge(5) has fl(v/width) = 5, so
// ceil gives 5 bins, whose range ends just below v: a sixth bin is needed.
TEST(HistogramCalibrator, GrowthCoversTheLargestValue) {
    HistogramCalibrator calib{.initial_bins = 4};
    collect(calib, from_vector({1}, {0.3f}));
    float v = std::nextafter(0.375f, 1.0f);
    ASSERT_EQ(std::ceil(v / calib.width), 5.0f);
    collect(calib, from_vector({1}, {v}));
    EXPECT_EQ(calib.counts, (std::vector<int64_t>{0, 0, 0, 1, 0, 1}));
    EXPECT_GE(histogram_edge(calib, 6), v);
}

TEST(HistogramCalibrator, ZerosBeforeTheFirstNonzeroBatchCountInBinZero) {
    HistogramCalibrator calib{.initial_bins = 8};
    collect(calib, zeros({3, 2}));
    EXPECT_EQ(calib.width, 0.0f);
    EXPECT_THROW(percentile_amax(calib), std::runtime_error);
    collect(calib, from_vector({2}, {0.0f, 4.0f}));
    EXPECT_EQ(calib.width, 0.5f);
    EXPECT_EQ(calib.counts, (std::vector<int64_t>{7, 0, 0, 0, 0, 0, 0, 1}));
}

TEST(HistogramCalibrator, CountsDoNotDependOnTheThreadCount) {
    Tensor first = random_tensor({200000}, 1, -1.0f, 1.0f);
    Tensor second = random_tensor({300000}, 2, -3.0f, 3.0f);  // grows the range
    auto run = [&](int threads) {
        const qdq::testing::ThreadCount count(threads);
        HistogramCalibrator calib;
        collect(calib, first);
        collect(calib, second);
        return calib.counts;
    };
    std::vector<int64_t> one = run(1), two = run(2);
    EXPECT_EQ(one, two);
    int64_t total = 0;
    for (int64_t c : one) total += c;
    EXPECT_EQ(total, 500000);
}

TEST(HistogramCalibrator, PercentileIsTheLeftEdgeOfTheBinWhereTheCdfReachesP) {
    HistogramCalibrator calib{.initial_bins = 4};
    collect(calib, from_vector({8}, {0.1f, 0.2f, 0.3f, 0.4f, 0.6f, 1.1f, 1.2f, 2.0f}));  // width 0.5
    // counts {4, 1, 2, 1}: the CDF is 0.5, 0.625, 0.875, 1.
    EXPECT_EQ(percentile_amax(calib, 50.0), 0.0f);
    EXPECT_EQ(percentile_amax(calib, 60.0), 0.5f);
    EXPECT_EQ(percentile_amax(calib, 87.5), 1.0f);
    EXPECT_EQ(percentile_amax(calib, 100.0), 1.5f);
    expect_error([&] { percentile_amax(calib, 100.5); }, {"percentile", "[0, 100]"});
}

TEST(HistogramCalibrator, ErrorsNameTheProblem) {
    HistogramCalibrator empty_calib;
    expect_error([&] { mse_amax(empty_calib); }, {"mse_amax", "collect first"});
    expect_error([&] { entropy_amax(empty_calib); }, {"entropy_amax", "collect first"});
    HistogramCalibrator small{.initial_bins = 64};
    collect(small, random_tensor({100}, 3));
    expect_error([&] { mse_amax(small); }, {"mse_amax", "start_bin 128", "64 bins"});
    expect_error([&] { entropy_amax(small, 16, 0); }, {"entropy_amax", "stride"});
    expect_error([&] { collect(small, from_vector({2}, {1.0f, NAN})); }, {"NaN or infinite"});
    expect_error([&] { collect(small, from_vector({1}, {1e30f})); }, {"bins", "beyond reason"});
}

// Hand-made histograms (width 1, 256 bins) whose candidates tie exactly, for PQ's tie rules,
// and one whose best candidate is the last.
TEST(HistogramCalibrator, MseTakesTheFirstOfEqualErrorsAndReachesTheLastCentre) {
    HistogramCalibrator calib{.width = 1.0f, .counts = std::vector<int64_t>(256, 0)};
    // Only centre 0.5: every candidate amax >= 128.5 rounds it to code 0, the same error.
    calib.counts[0] = 3;
    EXPECT_EQ(mse_amax(calib), 128.5f);
    // Only the last bin: clipping it to any smaller candidate costs more than quantizing it.
    calib.counts[0] = 0;
    calib.counts[255] = 3;
    EXPECT_EQ(mse_amax(calib), 255.5f);
}

TEST(HistogramCalibrator, EntropyTakesTheLastOfEqualDivergences) {
    // Equal counts in bins [0, 100), none above: for every candidate i >= 128 the reference has
    // no tail and each level averages equal counts, so Q = P and every divergence is 0.
    HistogramCalibrator calib{.width = 1.0f, .counts = std::vector<int64_t>(256, 0)};
    for (int j = 0; j < 100; ++j) calib.counts[(size_t)j] = 5;
    EXPECT_EQ(entropy_amax(calib), 256.0f);
}

TEST(MaxCalibrator, RunningMaxOfAbsolutePerTensor) {
    MaxCalibrator calib;
    collect(calib, from_vector({3}, {0.5f, -2.0f, 1.0f}));
    collect(calib, from_vector({2}, {1.5f, -0.25f}));
    EXPECT_EQ(compute_amax(calib), (std::vector<float>{2.0f}));
    collect(calib, from_vector({1}, {-3.0f}));
    EXPECT_EQ(compute_amax(calib), (std::vector<float>{3.0f}));
    reset(calib);
    expect_error([&] { compute_amax(calib); }, {"MaxCalibrator", "no tensor"});
}

TEST(MaxCalibrator, PerChannelAxis0And1) {
    // [2, 3, 2]
    Tensor x = from_vector({2, 3, 2}, {1, -7, 2, 0, -3, 4,  //
                                       -5, 6, 0.5, 0, 2, -8});
    MaxCalibrator axis0{.axis = 0}, axis1{.axis = 1}, last{.axis = -1};
    collect(axis0, x);
    collect(axis1, x);
    collect(last, x);
    EXPECT_EQ(compute_amax(axis0), (std::vector<float>{7, 8}));
    EXPECT_EQ(compute_amax(axis1), (std::vector<float>{7, 2, 8}));
    EXPECT_EQ(compute_amax(last), (std::vector<float>{5, 8}));
    collect(axis1, from_vector({1, 3, 1}, {9, -1, 0}));
    EXPECT_EQ(compute_amax(axis1), (std::vector<float>{9, 2, 8}));
    expect_error([&] { collect(axis1, from_vector({1, 2, 1}, {9, 1})); },
                 {"MaxCalibrator", "shape changed", "3 channels before, 2 now"});
    expect_error([&] { collect(axis0, from_vector({2, 1}, {1, INFINITY})); }, {"NaN or infinite"});
}

TEST(MaxCalibrator, ManyChannelsAcrossThreadChunks) {
    Tensor w = random_tensor({300, 700}, 4, -2.0f, 2.0f);  // 210k elements: several chunks
    MaxCalibrator calib{.axis = 0};
    collect(calib, w);
    std::vector<float> v = w.to_vector(), amax = compute_amax(calib);
    for (int64_t r = 0; r < 300; ++r) {
        float m = 0;
        for (int64_t k = 0; k < 700; ++k) m = std::max(m, std::fabs(v[(size_t)(r * 700 + k)]));
        ASSERT_EQ(amax[(size_t)r], m) << "row " << r;
    }
}
