// The batch loader: reproducible shuffles, exact mid-epoch resume, drop_last, length grouping, and
// the padded int32 tensors of a batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "autograd/rng.h"
#include "data/loader.h"

namespace qdq {
namespace {

using Batches = std::vector<std::vector<int64_t>>;

// Every batch of `epochs` epochs, with the position the loader stood at before each.
struct LoaderRun {
    Batches batches;
    std::vector<LoaderPosition> before;
};

LoaderRun run_epochs(BatchLoader& loader, int epochs) {
    LoaderRun run;
    std::vector<int64_t> batch;
    for (int e = 0; e < epochs; ++e) {
        for (LoaderPosition at = loader.position(); loader.next(batch); at = loader.position()) {
            run.batches.push_back(batch);
            run.before.push_back(at);
        }
    }
    return run;
}

std::vector<int64_t> sorted_indices(const Batches& batches, size_t first, size_t count) {
    std::vector<int64_t> all;
    for (size_t b = first; b < first + count; ++b) all.insert(all.end(), batches[b].begin(), batches[b].end());
    std::sort(all.begin(), all.end());
    return all;
}

std::vector<int32_t> random_lengths(int64_t count, uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> lengths(count);
    for (auto& length : lengths) length = 1 + (int32_t)(rng.next_u64() % 512);
    return lengths;
}

TEST(BatchLoader, EveryIndexOncePerEpochInAnOrderTheSeedDecides) {
    const LoaderOptions options{.batch_size = 10, .seed = 3};
    BatchLoader loader(103, options);
    EXPECT_EQ(loader.batches_per_epoch(), 11);
    const LoaderRun run = run_epochs(loader, 2);
    ASSERT_EQ(run.batches.size(), 22u);
    EXPECT_EQ(run.batches[10].size(), 3u);
    std::vector<int64_t> all(103);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted_indices(run.batches, 0, 11), all);
    EXPECT_EQ(sorted_indices(run.batches, 11, 11), all);
    EXPECT_NE(run.batches[0], run.batches[11]) << "each epoch draws a new order";
    EXPECT_EQ(loader.position(), (LoaderPosition{2, 0}));

    BatchLoader same(103, options);
    EXPECT_EQ(run_epochs(same, 2).batches, run.batches);
    BatchLoader other(103, {.batch_size = 10, .seed = 4});
    EXPECT_NE(run_epochs(other, 1).batches[0], run.batches[0]);
    BatchLoader in_order(5, {.batch_size = 2, .shuffle = false});
    EXPECT_EQ(run_epochs(in_order, 1).batches, (Batches{{0, 1}, {2, 3}, {4}}));
}

// The order must not depend on the standard library or platform: these orders come from a
// Python transcription of the documented rule (xoshiro256** seeded through splitmix64 with
// mix64(seed ^ mix64(epoch)), Fisher-Yates from the top, rejection-sampled draws).
TEST(BatchLoader, OrderMatchesAnIndependentTranscription) {
    EXPECT_EQ(epoch_order(10, {}, {.seed = 42}, 0), (std::vector<int64_t>{1, 6, 0, 2, 5, 3, 8, 7, 4, 9}));
    EXPECT_EQ(epoch_order(10, {}, {.seed = 42}, 1), (std::vector<int64_t>{8, 1, 4, 5, 7, 9, 0, 6, 2, 3}));
    EXPECT_EQ(epoch_order(12, {}, {.seed = 7}, 3), (std::vector<int64_t>{3, 11, 8, 6, 9, 2, 7, 0, 5, 4, 1, 10}));
}

TEST(BatchLoader, ResumingFromASavedPositionReproducesTheRest) {
    const std::vector<int32_t> lengths = random_lengths(230, 9);
    const std::vector<LoaderOptions> variants = {
        {.batch_size = 16, .seed = 1},
        {.batch_size = 16, .seed = 1, .drop_last = true},
        {.batch_size = 8, .seed = 2, .group_by_length = true, .mega_batch_factor = 4},
    };
    for (const LoaderOptions& options : variants) {
        BatchLoader uninterrupted(230, options, lengths);
        const LoaderRun run = run_epochs(uninterrupted, 3);
        for (size_t cut : {size_t(1), size_t(7), run.batches.size() / 2, run.batches.size() - 1}) {
            SCOPED_TRACE("resume before batch " + std::to_string(cut));
            BatchLoader resumed(230, options, lengths);  // a fresh process, as after a restart
            resumed.seek(run.before[cut]);
            Batches rest;
            std::vector<int64_t> batch;
            while (rest.size() < run.batches.size() - cut) {
                if (resumed.next(batch)) rest.push_back(batch);
            }
            EXPECT_EQ(rest, Batches(run.batches.begin() + (std::ptrdiff_t)cut, run.batches.end()));
        }
    }
}

TEST(BatchLoader, DropLastDropsOnlyTheShortBatch) {
    BatchLoader loader(25, {.batch_size = 10, .seed = 5, .drop_last = true});
    EXPECT_EQ(loader.batches_per_epoch(), 2);
    const LoaderRun run = run_epochs(loader, 2);
    ASSERT_EQ(run.batches.size(), 4u);
    for (const auto& batch : run.batches) EXPECT_EQ(batch.size(), 10u);
    BatchLoader exact(20, {.batch_size = 10, .drop_last = true});
    EXPECT_EQ(run_epochs(exact, 1).batches.size(), 2u);
}

// The trainer ends an epoch (logs, evaluates, saves under "epoch") when its loader has no batch
// left: after the last full batch with drop_last, after the short one without.
TEST(BatchLoader, EpochIsOverAfterItsLastBatch) {
    for (const bool drop_last : {false, true}) {
        BatchLoader loader(25, {.batch_size = 10, .seed = 5, .drop_last = drop_last});
        std::vector<int64_t> batch;
        std::vector<bool> over;
        for (int i = 0; i < 5; ++i) {
            while (!loader.next(batch)) {}
            over.push_back(loader.epoch_is_over());
        }
        const std::vector<bool> expected =
            drop_last ? std::vector<bool>{false, true, false, true, false} : std::vector<bool>{false, false, true, false, false};
        EXPECT_EQ(over, expected) << "drop_last " << drop_last;
    }
}

double mean_batch_variance(const Batches& batches, const std::vector<int32_t>& lengths) {
    double total = 0;
    for (const auto& batch : batches) {
        double mean = 0, square = 0;
        for (int64_t i : batch) mean += lengths[i];
        mean /= (double)batch.size();
        for (int64_t i : batch) square += (lengths[i] - mean) * (lengths[i] - mean);
        total += square / (double)batch.size();
    }
    return total / (double)batches.size();
}

TEST(BatchLoader, GroupByLengthBatchesSimilarLengths) {
    const std::vector<int32_t> lengths = random_lengths(2000, 11);
    BatchLoader grouped(2000, {.batch_size = 16, .seed = 1, .group_by_length = true}, lengths);
    BatchLoader plain(2000, {.batch_size = 16, .seed = 1}, lengths);
    const LoaderRun grouped_run = run_epochs(grouped, 1), plain_run = run_epochs(plain, 1);
    std::vector<int64_t> all(2000);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted_indices(grouped_run.batches, 0, grouped_run.batches.size()), all);
    // Uniform lengths in 1..512 have variance ~21800 in a random batch; a mega-batch of 496
    // (31 batches: 2000 / 64) sorted leaves ~(512/496)^2 x 16^2 / 12 ~ 23 within a batch. 1%
    // leaves a wide margin.
    const double grouped_variance = mean_batch_variance(grouped_run.batches, lengths);
    const double plain_variance = mean_batch_variance(plain_run.batches, lengths);
    EXPECT_LT(grouped_variance, 0.01 * plain_variance) << grouped_variance << " vs " << plain_variance;
    const int32_t longest = *std::max_element(lengths.begin(), lengths.end());
    const auto& first = grouped_run.batches[0];
    EXPECT_TRUE(std::any_of(first.begin(), first.end(), [&](int64_t i) { return lengths[i] == longest; }))
        << "the longest example comes first, so that memory runs out at step 1 if at all";
}

// Hugging Face's mega-batches: min(N / (4 x step batch), 50) step batches, at least one, where
// the step batch is batch_size x gradient_accumulation_steps. Each mega-batch is sorted, so the
// lengths fall within one and rise where the next starts; 1,000 examples in batches of 8 with 4
// accumulated: 7 x 32 = 224, not sorted whole.
TEST(BatchLoader, MegaBatchesAreHuggingFacesSize) {
    EXPECT_EQ(mega_batch_size(1000, {.batch_size = 8, .batches_per_step = 4}), 224);
    EXPECT_EQ(mega_batch_size(100000, {.batch_size = 8, .batches_per_step = 4}), 50 * 32);
    EXPECT_EQ(mega_batch_size(100, {.batch_size = 32}), 32);
    EXPECT_EQ(mega_batch_size(1000, {.batch_size = 8, .mega_batch_factor = 3}), 24);
    const std::vector<int32_t> lengths = random_lengths(1000, 3);
    const LoaderOptions options{.batch_size = 8, .seed = 4, .group_by_length = true, .batches_per_step = 4};
    const std::vector<int64_t> order = epoch_order(1000, lengths, options, 0);
    std::vector<size_t> rises;
    for (size_t i = 8; i + 1 < order.size(); ++i)  // past the first batch, which the longest one's took
        if (lengths[(size_t)order[i]] < lengths[(size_t)order[i + 1]]) rises.push_back(i + 1);
    // Where each mega-batch starts, and at most the two edges of the batch that traded places.
    int64_t at_starts = 0;
    for (size_t rise : rises) at_starts += rise % 224 == 0;
    EXPECT_GE(at_starts, 3) << "of the 4 mega-batch starts";
    EXPECT_LE(rises.size() - (size_t)at_starts, 2u);
}

TEST(BatchLoader, RejectsBadArguments) {
    EXPECT_THROW(BatchLoader(10, {.batch_size = 0}), std::invalid_argument);
    EXPECT_THROW(BatchLoader(10, {.group_by_length = true}, std::vector<int32_t>(9, 1)), std::invalid_argument);
    BatchLoader loader(10, {});
    EXPECT_THROW(loader.seek({0, 11}), std::invalid_argument);
    EXPECT_THROW(loader.seek({-1, 0}), std::invalid_argument);
}

Encoding feature(std::vector<int32_t> ids, std::vector<int32_t> types) {
    Encoding e;
    e.attention_mask.assign(ids.size(), 1);
    e.ids = std::move(ids);
    e.token_type_ids = std::move(types);
    return e;
}

std::vector<int32_t> values(const Tensor& t) { return std::vector<int32_t>(t.i32(), t.i32() + t.numel()); }

TEST(Collate, PadsToTheLongestOrToMaxLength) {
    const std::vector<Encoding> features = {
        feature({101, 7, 102}, {0, 0, 0}),
        feature({101, 8, 102, 9, 102}, {0, 0, 0, 1, 1}),
        feature({101, 102}, {0, 0}),
    };
    const std::vector<int32_t> labels = {2, 0, 1};
    const Batch longest = collate(features, labels, {2, 1});
    EXPECT_EQ(longest.input_ids.shape(), (Shape{2, 5}));
    EXPECT_EQ(longest.input_ids.dtype(), DType::I32);
    EXPECT_EQ(values(longest.input_ids), (std::vector<int32_t>{101, 102, 0, 0, 0, 101, 8, 102, 9, 102}));
    EXPECT_EQ(values(longest.token_type_ids), (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1}));
    EXPECT_EQ(values(longest.attention_mask), (std::vector<int32_t>{1, 1, 0, 0, 0, 1, 1, 1, 1, 1}));
    EXPECT_EQ(longest.labels.shape(), (Shape{2}));
    EXPECT_EQ(values(longest.labels), (std::vector<int32_t>{1, 0}));

    const Batch fixed = collate(features, {}, {0}, {.padding = Padding::max_length, .max_length = 6, .pad_id = 3});
    EXPECT_EQ(fixed.input_ids.shape(), (Shape{1, 6}));
    EXPECT_EQ(values(fixed.input_ids), (std::vector<int32_t>{101, 7, 102, 3, 3, 3}));
    EXPECT_EQ(values(fixed.attention_mask), (std::vector<int32_t>{1, 1, 1, 0, 0, 0}));
    EXPECT_FALSE(fixed.labels.defined());

    EXPECT_THROW(collate(features, labels, {1}, {.padding = Padding::max_length, .max_length = 4}),
                 std::invalid_argument);
    EXPECT_THROW(collate(features, labels, {3}), std::invalid_argument);
    EXPECT_THROW(collate({feature({1, 2}, {0})}, {}, {0}), std::invalid_argument);
}

}  // namespace
}  // namespace qdq
