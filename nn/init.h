// Initial weights: Hugging Face's BERT initialisation draws each weight matrix from
// normal(0, initializer_range), in construction order, from one seeded stream.
//
// Most models are built only to be overwritten: every command but a first pretraining run loads
// a file over the weights it just drew, and at BERT's sizes the drawing (Box-Muller's log and
// cos for every value) is most of a small command's time. While a DeferredInit is alive on this
// thread, normal_tensor therefore draws nothing: it notes where in the stream the tensor's values
// begin and jumps the stream past them (Rng::jump). A load drops the tensors it fills; the rest
// are drawn when the DeferredInit finishes, from the noted positions, so every value, and the
// stream left behind, is bit for bit what drawing at construction gives. This is from_pretrained's
// own behaviour: only the keys the file lacks are initialised.
#pragma once

#include <cstdint>

#include "autograd/ops.h"
#include "autograd/rng.h"

namespace qdq::nn {

// normal(0, stddev) values in the stream's order; row `zero_row` of a matrix (an embedding's
// padding row) is then set to zero. Deferred while a DeferredInit is alive.
Tensor normal_tensor(const Shape& shape, float stddev, Rng& rng, int64_t zero_row = kNoPadding);

// Values read between construction and the end of the scope are undefined unless loaded: put the
// scope around building a model and loading its file, nothing else. Scopes nest; the outermost
// one draws. Leaving the scope by an exception draws nothing (the model is being abandoned).
class DeferredInit {
public:
    DeferredInit();
    ~DeferredInit();
    DeferredInit(const DeferredInit&) = delete;
    DeferredInit& operator=(const DeferredInit&) = delete;

    // Draws every deferred tensor no load has filled; the innermost scopes' finish does nothing.
    void finish();
    // Tensors deferred and not yet loaded or drawn: a counter for tests.
    static int64_t pending();

private:
    bool outermost_;
    int exceptions_at_start_;
};

// Called by load_state_dict for each tensor it overwrote: no need to draw it any more.
void loaded_over_deferred(const Tensor& t);

}  // namespace qdq::nn
