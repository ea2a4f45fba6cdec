#include "data/loader.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "autograd/rng.h"

namespace qdq {
namespace {

// Uniform in [0, range) without modulo bias: 2^64 - threshold is a multiple of range.
uint64_t bounded_draw(Rng& rng, uint64_t range) {
    const uint64_t threshold = (0 - range) % range;
    for (;;) {
        const uint64_t r = rng.next_u64();
        if (r >= threshold) return r % range;
    }
}

void shuffle(std::vector<int64_t>& order, uint64_t seed, int64_t epoch) {
    Rng rng(mix64(seed ^ mix64((uint64_t)epoch)));
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[bounded_draw(rng, i)]);
}

void group_by_length(std::vector<int64_t>& order, const std::vector<int32_t>& lengths, const LoaderOptions& options) {
    const auto longer = [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; };
    const size_t mega = (size_t)mega_batch_size((int64_t)order.size(), options);
    for (size_t begin = 0; begin < order.size(); begin += mega) {
        const size_t end = std::min(order.size(), begin + mega);
        std::stable_sort(order.begin() + begin, order.begin() + end, longer);
    }
    const size_t batch = (size_t)options.batch_size;
    const size_t longest = std::min_element(order.begin(), order.end(), longer) - order.begin();
    const size_t first = longest / batch * batch;
    if (first != 0 && first + batch <= order.size())
        std::swap_ranges(order.begin(), order.begin() + batch, order.begin() + first);
}

void check_options(int64_t count, const std::vector<int32_t>& lengths, const LoaderOptions& options) {
    if (count < 0) throw std::invalid_argument("BatchLoader: negative example count");
    if (options.batch_size <= 0) throw std::invalid_argument("BatchLoader: batch_size must be positive");
    if (!options.group_by_length) return;
    if ((int64_t)lengths.size() != count)
        throw std::invalid_argument("BatchLoader: group_by_length needs one length per example (" +
                                    std::to_string(lengths.size()) + " for " + std::to_string(count) + ")");
    if (options.mega_batch_factor < 0) throw std::invalid_argument("BatchLoader: mega_batch_factor must not be negative");
    if (options.batches_per_step <= 0) throw std::invalid_argument("BatchLoader: batches_per_step must be positive");
}

}  // namespace

int64_t mega_batch_size(int64_t count, const LoaderOptions& options) {
    const int64_t step_batch = options.batch_size * options.batches_per_step;
    const int64_t hugging_face_factor = std::max<int64_t>(1, std::min<int64_t>(count / (4 * step_batch), 50));
    const int64_t factor = options.mega_batch_factor > 0 ? options.mega_batch_factor : hugging_face_factor;
    return factor * step_batch;
}

std::vector<int64_t> epoch_order(int64_t count, const std::vector<int32_t>& lengths, const LoaderOptions& options,
                                 int64_t epoch) {
    check_options(count, lengths, options);
    std::vector<int64_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    if (options.shuffle) shuffle(order, options.seed, epoch);
    if (options.group_by_length) group_by_length(order, lengths, options);
    return order;
}

BatchLoader::BatchLoader(int64_t count, const LoaderOptions& options, std::vector<int32_t> lengths)
    : count_(count), options_(options), lengths_(std::move(lengths)) {
    check_options(count_, lengths_, options_);
}

int64_t BatchLoader::batches_per_epoch() const {
    const int64_t b = options_.batch_size;
    return options_.drop_last ? count_ / b : (count_ + b - 1) / b;
}

void BatchLoader::seek(const LoaderPosition& position) {
    if (position.epoch < 0 || position.index < 0 || position.index > count_)
        throw std::invalid_argument("BatchLoader: position (epoch " + std::to_string(position.epoch) + ", index " +
                                    std::to_string(position.index) + ") outside " + std::to_string(count_) +
                                    " examples");
    position_ = position;
}

bool BatchLoader::epoch_is_over() const {
    const int64_t remaining = count_ - position_.index;
    return remaining <= 0 || (options_.drop_last && remaining < options_.batch_size);
}

bool BatchLoader::next(std::vector<int64_t>& batch) {
    batch.clear();
    if (epoch_is_over()) {
        position_ = {position_.epoch + 1, 0};
        return false;
    }
    if (order_epoch_ != position_.epoch) {
        order_ = epoch_order(count_, lengths_, options_, position_.epoch);
        order_epoch_ = position_.epoch;
    }
    const int64_t take = std::min(count_ - position_.index, options_.batch_size);
    batch.assign(order_.begin() + position_.index, order_.begin() + position_.index + take);
    position_.index += take;
    return true;
}

Batch collate(const std::vector<Encoding>& features, const std::vector<int32_t>& labels,
              const std::vector<int64_t>& indices, const PaddingOptions& options) {
    if (!labels.empty() && labels.size() != features.size())
        throw std::invalid_argument("collate: " + std::to_string(labels.size()) + " labels for " +
                                    std::to_string(features.size()) + " features");
    if (options.padding == Padding::max_length && options.max_length <= 0)
        throw std::invalid_argument("collate: Padding::max_length needs max_length > 0");
    size_t width = options.padding == Padding::max_length ? (size_t)options.max_length : 0;
    for (int64_t i : indices) {
        if (i < 0 || i >= (int64_t)features.size())
            throw std::invalid_argument("collate: index " + std::to_string(i) + " outside " +
                                        std::to_string(features.size()) + " features");
        const Encoding& f = features[i];
        if (f.token_type_ids.size() != f.ids.size() || f.attention_mask.size() != f.ids.size())
            throw std::invalid_argument("collate: feature " + std::to_string(i) + " has fields of unequal lengths");
        if (options.max_length > 0 && f.ids.size() > (size_t)options.max_length)
            throw std::invalid_argument("collate: feature " + std::to_string(i) + " has " +
                                        std::to_string(f.ids.size()) + " tokens, over max_length " +
                                        std::to_string(options.max_length));
        width = std::max(width, f.ids.size());
    }
    const int64_t rows = (int64_t)indices.size(), T = (int64_t)width;
    Batch batch;
    batch.input_ids = empty({rows, T}, DType::I32);
    std::fill_n(batch.input_ids.i32(), rows * T, options.pad_id);
    batch.token_type_ids = zeros({rows, T}, DType::I32);
    batch.attention_mask = zeros({rows, T}, DType::I32);
    for (int64_t r = 0; r < rows; ++r) {
        const Encoding& f = features[indices[r]];
        std::copy(f.ids.begin(), f.ids.end(), batch.input_ids.i32() + r * T);
        std::copy(f.token_type_ids.begin(), f.token_type_ids.end(), batch.token_type_ids.i32() + r * T);
        std::copy(f.attention_mask.begin(), f.attention_mask.end(), batch.attention_mask.i32() + r * T);
    }
    if (!labels.empty()) {
        batch.labels = empty({rows}, DType::I32);
        for (int64_t r = 0; r < rows; ++r) batch.labels.i32()[r] = labels[indices[r]];
    }
    return batch;
}

}  // namespace qdq
