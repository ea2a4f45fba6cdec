// Element-wise entry points of the backend: the functors of cuda/kernels/elementwise.cuh (the
// same text the tests run on host threads) over device pointers.
#include "cuda/backend.h"
#include "cuda/kernels/elementwise.cuh"

namespace qdq::cuda {

void add(float* out, const float* a, const float* b, int64_t n) { for_each(n, AddOp{out, a, b}); }
void gelu_forward(float* y, const float* x, int64_t n) { for_each(n, GeluForwardOp{y, x}); }
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) { for_each(n, GeluBackwardOp{dx, dy, x}); }

}  // namespace qdq::cuda
