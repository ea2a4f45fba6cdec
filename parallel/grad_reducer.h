// Sums the parameters' gradients over the ranks of world() (parallel/communicator.h), the way
// PyTorch's DDP reducer does: the parameters are cut into buckets of about bucket_bytes, last
// parameter first (backward reaches the model's last layers first), and a bucket's sum starts as
// soon as the backward pass has made every gradient in it final (autograd/tape.h's
// BackwardObserver), buckets strictly in order so that every rank starts the same collectives in
// the same order. The transfer then overlaps the rest of the pass; finish() starts what is left,
// waits, and writes the sums back.
//
// A gradient no rank has (a parameter the step never read) stays undefined, as it would in one
// process, so AdamW skips it there too: each bucket carries one flag per parameter.
//
// Gradients on a GPU are staged through the buckets' host memory, so no CUDA-aware MPI is
// needed. Each bucket has a copy on the device that its gradients are gathered into as they
// become final (device to device, which the host does not wait for), so a bucket crosses to the
// host in one copy and back in one: two waits for the device per bucket and step, where a copy
// per parameter made about 400 at BERT-base. The sums are scattered back on the device.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "autograd/tape.h"
#include "autograd/tensor.h"
#include "parallel/communicator.h"

namespace qdq {

class GradReducer {
public:
    GradReducer(std::vector<Tensor> params, int64_t bucket_bytes);

    // For the backward pass of a step's last micro-batch (earlier ones only accumulate); a
    // rank with no examples in it runs no backward and calls finish() alone.
    BackwardObserver observer();
    // Starts the buckets not started yet (their gradients as they stand), waits for all,
    // replaces each gradient by its sum over the ranks, and makes ready for the next step.
    void finish();

    size_t bucket_count() const { return buckets_.size(); }
    // Seconds finish() spent waiting for sums, over every step so far.
    double wait_seconds() const { return wait_seconds_; }

private:
    struct Bucket {
        std::vector<size_t> params;  // indices into params_
        std::vector<float> flat;     // their gradients, then one defined-flag each
        Tensor staging;              // on the device, when the parameters are: the gradients of flat
        size_t pending = 0;          // gradients not yet final this step
        AsyncSum sum;
    };

    void reset();
    void gradient_final(size_t param);
    void copy_in(size_t param);
    void start_ready_buckets();
    size_t gradient_count(const Bucket& b) const { return b.flat.size() - b.params.size(); }

    std::vector<Tensor> params_;
    bool on_device_ = false;  // every parameter on the GPU, else every one on the CPU
    // By parameter: its bucket, its place in the bucket's flat and its flag's place after them.
    std::vector<size_t> bucket_of_, offset_of_, slot_of_;
    std::vector<bool> copied_;                   // this step
    std::unordered_map<const TensorImpl*, size_t> index_of_;
    std::vector<Bucket> buckets_;
    size_t next_ = 0;  // the next bucket to start
    double wait_seconds_ = 0;
};

}  // namespace qdq
