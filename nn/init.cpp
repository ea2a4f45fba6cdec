#include "nn/init.h"

#include <algorithm>
#include <exception>
#include <vector>

#include "autograd/parallel.h"

namespace qdq::nn {

namespace {

// Where a deferred tensor's values begin in its stream, and how to make them.
struct Deferred {
    Tensor tensor;
    std::array<uint64_t, 4> stream_at;
    float stddev;
    int64_t zero_row;
};

// This thread's open scopes and the tensors they hold back; a model is built on one thread.
struct DeferredScopes {
    int open = 0;
    std::vector<Deferred> pending;
};

thread_local DeferredScopes scopes;

Tensor draw_normal_tensor(const Shape& shape, float stddev, Rng& rng, int64_t zero_row) {
    // The values of rng.normal called element by element, in pieces on every core: each piece's
    // stream jumps from the tensor's first draw to its own, so the draws and Box-Muller's log and
    // cos, the whole cost at BERT's sizes, run in parallel and give the same bits whatever the
    // thread count. A tensor of one piece draws from `rng` itself and jumps nothing.
    constexpr int64_t kPiece = int64_t{1} << 16;
    Tensor t = empty(shape);
    float* p = t.f32();
    const int64_t n = t.numel();
    const Rng first = rng;
    parallel_for(n, kPiece, [&](int64_t begin, int64_t end) {
        Rng stream = first;
        stream.jump(2 * (uint64_t)begin);  // Box-Muller takes two draws a value
        for (int64_t i = begin; i < end; ++i) {
            const uint64_t u1 = stream.next_u64();
            p[i] = normal_from_draws(u1, stream.next_u64(), 0.0f, stddev);
        }
        if (end == n) rng = stream;  // the last piece leaves the stream where the tensor ends
    });
    if (zero_row != kNoPadding) {
        const int64_t row = n / shape[0];
        std::fill_n(p + zero_row * row, row, 0.0f);
    }
    return t;
}

}  // namespace

Tensor normal_tensor(const Shape& shape, float stddev, Rng& rng, int64_t zero_row) {
    check(zero_row == kNoPadding || (!shape.empty() && zero_row >= 0 && zero_row < shape[0]),
          "normal_tensor: row " + std::to_string(zero_row) + " is outside the " + shape_str(shape) + " tensor");
    if (scopes.open == 0) return draw_normal_tensor(shape, stddev, rng, zero_row);
    Tensor t = empty(shape);
    scopes.pending.push_back({t, rng.state, stddev, zero_row});
    rng.jump(2 * (uint64_t)t.numel());  // Box-Muller takes two draws a value
    return t;
}

DeferredInit::DeferredInit() : outermost_(scopes.open == 0), exceptions_at_start_(std::uncaught_exceptions()) {
    ++scopes.open;
}

DeferredInit::~DeferredInit() {
    if (std::uncaught_exceptions() > exceptions_at_start_) {
        if (outermost_) scopes.pending.clear();
    } else {
        finish();
    }
    --scopes.open;
}

void DeferredInit::finish() {
    if (!outermost_) return;
    std::vector<Deferred> pending = std::move(scopes.pending);
    scopes.pending.clear();
    for (Deferred& d : pending) {
        Rng rng;
        rng.state = d.stream_at;
        d.tensor.copy_from(draw_normal_tensor(d.tensor.shape(), d.stddev, rng, d.zero_row));  // wherever it now lives
    }
}

int64_t DeferredInit::pending() { return (int64_t)scopes.pending.size(); }

void loaded_over_deferred(const Tensor& t) {
    std::erase_if(scopes.pending, [&](const Deferred& d) { return d.tensor.same_as(t); });
}

}  // namespace qdq::nn
