#include "parallel/grad_reducer.h"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "cuda/backend.h"

namespace qdq {

GradReducer::GradReducer(std::vector<Tensor> params, int64_t bucket_bytes) : params_(std::move(params)) {
    if (bucket_bytes <= 0) throw std::invalid_argument("GradReducer: bucket_bytes must be > 0");
    bucket_of_.resize(params_.size());
    offset_of_.resize(params_.size());
    slot_of_.resize(params_.size());
    int64_t bytes = 0;
    for (size_t k = params_.size(); k-- > 0;) {
        const Tensor& p = params_[k];
        if (p.dtype() != DType::F32) throw std::invalid_argument("GradReducer: parameters must be float32 tensors");
        index_of_[p.impl()] = k;
        const int64_t param_bytes = p.numel() * (int64_t)sizeof(float);
        // A new bucket where this one would overflow: a large parameter (the word embeddings)
        // travels alone rather than holding back the ones before it.
        if (buckets_.empty() || (bytes > 0 && bytes + param_bytes > bucket_bytes)) {
            buckets_.emplace_back();
            bytes = 0;
        }
        Bucket& b = buckets_.back();
        bucket_of_[k] = buckets_.size() - 1;
        offset_of_[k] = b.flat.size();
        b.params.push_back(k);
        b.flat.resize(b.flat.size() + (size_t)p.numel());
        bytes += param_bytes;
    }
    on_device_ = !params_.empty() && params_[0].is_cuda();
    for (const Tensor& p : params_)
        if (p.is_cuda() != on_device_) throw std::invalid_argument("GradReducer: parameters on the CPU and the GPU together");
    for (Bucket& b : buckets_) {
        for (size_t slot = 0; slot < b.params.size(); ++slot) slot_of_[b.params[slot]] = slot;
        if (on_device_) b.staging = empty({(int64_t)b.flat.size()}, DType::F32, Device::CUDA);
        b.flat.resize(b.flat.size() + b.params.size());  // the flags
    }
    reset();
}

void GradReducer::reset() {
    for (Bucket& b : buckets_) b.pending = b.params.size();
    copied_.assign(params_.size(), false);
    next_ = 0;
}

BackwardObserver GradReducer::observer() {
    return {[this](const Tensor& leaf) {
                auto it = index_of_.find(leaf.impl());
                if (it != index_of_.end()) gradient_final(it->second);
            },
            [this] {
                for (size_t i = 0; i < next_; ++i) buckets_[i].sum.poll();
            }};
}

// Copies a final gradient (zeros and flag 0 where there is none) into its bucket, on the
// device into the bucket's staging copy.
void GradReducer::copy_in(size_t k) {
    Bucket& b = buckets_[bucket_of_[k]];
    const Tensor& p = params_[k];
    const Tensor g = p.grad();
    const size_t bytes = (size_t)p.numel() * sizeof(float);
    if (on_device_) {
        float* dst = b.staging.f32() + offset_of_[k];
        if (g.defined()) cuda::copy(dst, true, g.f32(), true, bytes);
        else cuda::memset_zero(dst, bytes);
    } else {
        float* dst = b.flat.data() + offset_of_[k];
        if (g.defined()) std::memcpy(dst, g.f32(), bytes);
        else std::memset(dst, 0, bytes);
    }
    b.flat[gradient_count(b) + slot_of_[k]] = g.defined() ? 1.0f : 0.0f;
    copied_[k] = true;
}

void GradReducer::gradient_final(size_t k) {
    if (copied_[k]) return;
    copy_in(k);
    --buckets_[bucket_of_[k]].pending;
    start_ready_buckets();
}

void GradReducer::start_ready_buckets() {
    while (next_ < buckets_.size() && buckets_[next_].pending == 0) {
        Bucket& b = buckets_[next_++];
        if (on_device_) cuda::copy(b.flat.data(), false, b.staging.f32(), true, gradient_count(b) * sizeof(float));
        b.sum = AsyncSum(b.flat.data(), (int64_t)b.flat.size());
    }
}

void GradReducer::finish() {
    for (size_t k = 0; k < params_.size(); ++k)
        if (!copied_[k]) {
            copy_in(k);
            --buckets_[bucket_of_[k]].pending;
        }
    start_ready_buckets();
    const auto begin = std::chrono::steady_clock::now();
    for (Bucket& b : buckets_) b.sum.wait();
    wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    for (Bucket& b : buckets_) {
        const size_t flags = gradient_count(b);
        if (on_device_) cuda::copy(b.staging.f32(), true, b.flat.data(), false, flags * sizeof(float));
        for (size_t slot = 0; slot < b.params.size(); ++slot) {
            const size_t k = b.params[slot];
            Tensor p = params_[k];
            if (b.flat[flags + slot] == 0) {
                p.zero_grad();  // no rank has it
                continue;
            }
            const Tensor grad = p.grad_buffer();
            const size_t bytes = (size_t)p.numel() * sizeof(float);
            if (on_device_) cuda::copy(grad.f32(), true, b.staging.f32() + offset_of_[k], true, bytes);
            else std::memcpy(grad.f32(), b.flat.data() + offset_of_[k], bytes);
        }
    }
    reset();
}

}  // namespace qdq
