// The element-wise kernels' entry points (cuda/kernels/elementwise.cuh) over device pointers.
#include "cuda/backend.h"
#include "cuda/kernels/elementwise.cuh"

namespace qdq::cuda {

void fill(float* y, float value, int64_t n) { for_each(n, FillOp{y, value}); }
void add(float* out, const float* a, const float* b, int64_t n) { for_each(n, AddOp{out, a, b}); }
void add_scalar(float* y, const float* x, float s, int64_t n) { for_each(n, AddScalarOp{y, x, s}); }
void pow_forward(float* y, const float* x, float e, int64_t n) { for_each(n, PowForwardOp{y, x, e}); }
void pow_backward(float* dx, const float* dy, const float* x, float e, int64_t n) { for_each(n, PowBackwardOp{dx, dy, x, e}); }
void scale_copy(float* y, const float* x, float s, bool accumulate, int64_t n) { for_each(n, ScaleCopyOp{y, x, s, accumulate}); }
void gelu_forward(float* y, const float* x, int64_t n) { for_each(n, GeluForwardOp{y, x}); }
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) { for_each(n, GeluBackwardOp{dx, dy, x}); }
void tanh_forward(float* y, const float* x, int64_t n) { for_each(n, TanhForwardOp{y, x}); }
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n) { for_each(n, TanhBackwardOp{dx, dy, y}); }

}  // namespace qdq::cuda
