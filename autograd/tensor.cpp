#include "autograd/tensor.h"

#include <malloc.h>

#include <algorithm>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "cuda/backend.h"

namespace qdq {

void check(bool ok, const char* message) {
    if (!ok) throw std::runtime_error(message);
}

void check(bool ok, const std::string& message) {
    if (!ok) throw std::runtime_error(message);
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* op) {
    if (a.shape() != b.shape())
        throw std::runtime_error(std::string(op) + ": shapes differ, " + shape_str(a.shape()) + " vs " +
                                 shape_str(b.shape()));
}

namespace {

template <typename Tensors>
void check_one_device(const char* op, const Tensors& tensors) {
    const Tensor* first = nullptr;
    for (const Tensor& t : tensors) {
        if (!t.defined()) continue;
        if (!first) first = &t;
        else if (t.device() != first->device())
            throw std::runtime_error(std::string(op) + ": inputs on different devices, " + device_name(first->device()) +
                                     " and " + device_name(t.device()) + "; move them to one device");
    }
}

}  // namespace

void check_same_device(const char* op, std::initializer_list<std::reference_wrapper<const Tensor>> tensors) {
    check_one_device(op, tensors);
}

void check_same_device(const char* op, const std::vector<Tensor>& tensors) { check_one_device(op, tensors); }

float* grad_data_or_null(const Tensor& t) {
    return t.defined() && t.requires_grad() ? t.grad_buffer().f32() : nullptr;
}

int64_t shape_numel(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shape_str(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

const char* dtype_name(DType dtype) { return dtype == DType::F32 ? "float32" : "int32"; }
const char* device_name(Device device) { return device == Device::CPU ? "cpu" : "cuda"; }
size_t dtype_size(DType) { return 4; }

int64_t Tensor::size(int64_t axis) const {
    int64_t n = dim();
    if (axis < 0) axis += n;
    if (axis < 0 || axis >= n)
        throw std::runtime_error("axis " + std::to_string(axis) + " out of range for shape " + shape_str(shape()));
    return impl_->shape[(size_t)axis];
}

float* Tensor::f32() const {
    check(impl_ && impl_->dtype == DType::F32, "expected a float32 tensor");
    return static_cast<float*>(impl_->data);
}

int32_t* Tensor::i32() const {
    check(impl_ && impl_->dtype == DType::I32, "expected an int32 tensor");
    return static_cast<int32_t*>(impl_->data);
}

Tensor& Tensor::set_requires_grad(bool on) {
    check(!on || impl_->dtype == DType::F32, "only float tensors can require grad");
    impl_->requires_grad = on;
    return *this;
}

Tensor Tensor::grad() const { return Tensor(impl_->grad); }

void Tensor::zero_grad() { impl_->grad.reset(); }

Tensor Tensor::grad_buffer() const {
    if (!impl_->grad) impl_->grad = zeros(impl_->shape, DType::F32, impl_->device).impl_;
    return Tensor(impl_->grad);
}

Tensor Tensor::detach() const {
    auto impl = std::make_shared<TensorImpl>(*impl_);
    impl->requires_grad = false;
    impl->grad.reset();
    return Tensor(impl);
}

Tensor Tensor::clone() const { return to(device()); }

Tensor Tensor::to(Device device) const {
    Tensor out = empty(shape(), dtype(), device);
    size_t bytes = (size_t)numel() * dtype_size(dtype());
    if (device == Device::CPU && this->device() == Device::CPU)
        std::memcpy(out.raw(), raw(), bytes);
    else
        cuda::copy(out.raw(), device == Device::CUDA, raw(), is_cuda(), bytes);
    return out;
}

void Tensor::copy_from(const Tensor& src) const {
    check(src.shape() == shape() && src.dtype() == dtype(),
          "copy_from: " + std::string(dtype_name(src.dtype())) + " " + shape_str(src.shape()) + " into " +
              dtype_name(dtype()) + " " + shape_str(shape()));
    const size_t bytes = (size_t)numel() * dtype_size(dtype());
    if (!is_cuda() && !src.is_cuda()) std::memmove(raw(), src.raw(), bytes);
    else cuda::copy(raw(), is_cuda(), src.raw(), src.is_cuda(), bytes);
}

void Tensor::move_to(Device device) {
    if (this->device() == device) return;
    Tensor moved = to(device);
    impl_->storage = moved.impl_->storage;
    impl_->data = moved.impl_->data;
    impl_->device = device;
    impl_->grad.reset();
}

std::vector<float> Tensor::to_vector() const {
    const Tensor host = cpu();
    if (dtype() == DType::I32) return std::vector<float>(host.i32(), host.i32() + numel());
    return std::vector<float>(host.f32(), host.f32() + numel());
}

float Tensor::item() const {
    check(numel() == 1, "item() needs a one-element tensor, got " + shape_str(shape()));
    return to_vector()[0];
}

// A training step allocates and frees the same activation sizes every step. glibc serves
// blocks above its mmap threshold (at most 32 MB) with fresh mmaps and gives freed memory at the
// top of the heap back to the system past its trim threshold, so each step would page-fault
// and zero its activations anew (6% of a BERT-mini step). Raised once, both keep freed blocks
// in the heap for the next step; the peak the process holds does not change.
static void keep_freed_memory() {
    static const bool done = [] {
        mallopt(M_MMAP_THRESHOLD, 1 << 30);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
        return true;
    }();
    (void)done;
}

static std::shared_ptr<void> allocate(size_t bytes, Device device) {
    if (device == Device::CUDA) return std::shared_ptr<void>(cuda::device_alloc(bytes), cuda::device_free);
    keep_freed_memory();
    // 64-byte alignment: one AVX-512 vector, one cache line.
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded ? rounded : 64);
    check(p != nullptr, "out of memory allocating " + std::to_string(bytes) + " bytes");
    return std::shared_ptr<void>(p, std::free);
}

Tensor empty(const Shape& shape, DType dtype, Device device) {
    for (int64_t d : shape) check(d >= 0, "negative dimension in shape " + shape_str(shape));
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->dtype = dtype;
    impl->device = device;
    impl->storage = allocate((size_t)shape_numel(shape) * dtype_size(dtype), device);
    impl->data = impl->storage.get();
    return Tensor(impl);
}

Tensor zeros(const Shape& shape, DType dtype, Device device) {
    Tensor t = empty(shape, dtype, device);
    size_t bytes = (size_t)t.numel() * dtype_size(dtype);
    if (device == Device::CUDA)
        cuda::memset_zero(t.raw(), bytes);
    else
        std::memset(t.raw(), 0, bytes);
    return t;
}

Tensor full(const Shape& shape, float value, Device device) {
    Tensor t = empty(shape, DType::F32, device);
    if (device == Device::CUDA) {
        cuda::fill(t.f32(), value, t.numel());
        return t;
    }
    float* p = t.f32();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = value;
    return t;
}

Tensor from_vector(const Shape& shape, const std::vector<float>& values) {
    check((int64_t)values.size() == shape_numel(shape),
          "from_vector: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
    Tensor t = empty(shape);
    std::copy(values.begin(), values.end(), t.f32());  // memcpy from an empty vector's null data is UB
    return t;
}

Tensor from_ints(const Shape& shape, const std::vector<int32_t>& values) {
    check((int64_t)values.size() == shape_numel(shape),
          "from_ints: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
    Tensor t = empty(shape, DType::I32);
    std::copy(values.begin(), values.end(), t.i32());
    return t;
}

Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }

}  // namespace qdq
