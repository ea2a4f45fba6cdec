// Batches of example indices for training and evaluation, and the padded tensors of a batch.
//
// An epoch's order depends only on (seed, epoch, N, lengths, options): the shuffle is a
// Fisher-Yates over xoshiro256** (autograd/rng.h) with our own unbiased bounded draw, so it is
// the same on every platform and standard library (std::shuffle and std::uniform_int_distribution
// are not), and nothing here runs on threads, so the thread count cannot change it. Hence a
// checkpoint needs only LoaderPosition (with the same data and options) to resume mid-epoch.
//
// group_by_length (the idea of Hugging Face's LengthGroupedSampler, so that a batch pads little):
// shuffle as above, cut the order into mega-batches (mega_batch_size), sort each mega-batch by
// length, longest first (a stable sort, so equal lengths keep their shuffled order), and cut
// batches from that. Then, as Hugging Face does, the batch holding the longest example
// trades places with the first batch (when both are full), so that running out of memory happens
// at step 1, not hours into the run.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.h"
#include "data/tokenizer.h"

namespace qdq {

struct LoaderOptions {
    int64_t batch_size = 32;
    bool shuffle = true;  // false: 0..N-1 (evaluation)
    uint64_t seed = 0;
    bool drop_last = false;  // drop the epoch's last batch when it is short
    bool group_by_length = false;
    // Hugging Face's megabatch_mult; 0: its default, min(N / (4 x step batch), 50) and at least 1,
    // so that a small dataset is not sorted whole into the same batches every epoch.
    int64_t mega_batch_factor = 0;
    int64_t batches_per_step = 1;  // gradient accumulation: the step batch is batch_size times this
};

// Examples per mega-batch for `count` examples: the factor times the step batch, as Hugging
// Face's Trainer gives its sampler train_batch_size x gradient_accumulation_steps.
int64_t mega_batch_size(int64_t count, const LoaderOptions& options);

// Where a loader stands: the next batch starts at `index` of epoch `epoch`'s order.
struct LoaderPosition {
    int64_t epoch = 0;
    int64_t index = 0;
    bool operator==(const LoaderPosition&) const = default;
};

// Every index 0..N-1 once, in epoch `epoch`'s order (drop_last does not apply here).
// lengths: one per example when group_by_length, else ignored. Throws std::invalid_argument for
// options BatchLoader would reject.
std::vector<int64_t> epoch_order(int64_t count, const std::vector<int32_t>& lengths, const LoaderOptions& options,
                                 int64_t epoch);

class BatchLoader {
public:
    // lengths: the encoded length of each example, required with group_by_length.
    BatchLoader(int64_t count, const LoaderOptions& options, std::vector<int32_t> lengths = {});

    // The next batch of the current epoch; false when the epoch is over, after which the loader
    // stands at the start of the next one. A loop: while (loader.next(batch)) { ... }.
    bool next(std::vector<int64_t>& batch);
    // True when the current epoch has no batch left (with drop_last, a short one counts as none):
    // the next call of next() returns false.
    bool epoch_is_over() const;

    LoaderPosition position() const { return position_; }
    // Resumes where position() stood (a checkpoint's copy). Throws std::invalid_argument for a
    // position outside the data.
    void seek(const LoaderPosition& position);

    int64_t batches_per_epoch() const;
    int64_t size() const { return count_; }

private:
    int64_t count_;
    LoaderOptions options_;
    std::vector<int32_t> lengths_;
    LoaderPosition position_;
    std::vector<int64_t> order_;  // of order_epoch_
    int64_t order_epoch_ = -1;
};

enum class Padding {
    longest,     // to the longest feature in the batch
    max_length,  // to max_length (fixed shapes, e.g. for a graph capture)
};

struct PaddingOptions {
    Padding padding = Padding::longest;
    int32_t max_length = 0;  // required with Padding::max_length; else 0 means no limit
    int32_t pad_id = 0;      // [PAD] of the vocabulary (0 for BERT's)
};

struct Batch {
    Tensor input_ids, token_type_ids, attention_mask;  // [B, T] int32, pads: pad_id, 0, 0
    Tensor labels;                                     // [B] int32; undefined without labels
};

// The features `indices` points at, padded on the right. labels: one per feature, or empty.
// Throws std::invalid_argument for a feature longer than max_length or with fields of unequal
// lengths.
Batch collate(const std::vector<Encoding>& features, const std::vector<int32_t>& labels,
              const std::vector<int64_t>& indices, const PaddingOptions& options = {});

}  // namespace qdq
