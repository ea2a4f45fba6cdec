// Tensor: an N-d, row-major, always-contiguous buffer of float32 or int32 on one device.
// A Tensor is a handle: copying it shares the data, the gradient and the autograd flag
// (like torch.Tensor). Views (reshape) share storage; everything else allocates.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace qdq {

enum class DType : uint8_t { F32, I32 };
enum class Device : uint8_t { CPU, CUDA };

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);
const char* dtype_name(DType dtype);
const char* device_name(Device device);
size_t dtype_size(DType dtype);

struct TensorImpl {
    Shape shape;
    DType dtype = DType::F32;
    Device device = Device::CPU;
    std::shared_ptr<void> storage;  // owns the bytes; views share it
    void* data = nullptr;           // first element (storage start for every tensor here)
    bool requires_grad = false;
    std::shared_ptr<TensorImpl> grad;
};

class Tensor {
public:
    Tensor() = default;
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    bool defined() const { return impl_ != nullptr; }
    const Shape& shape() const { return impl_->shape; }
    int64_t dim() const { return (int64_t)impl_->shape.size(); }
    int64_t size(int64_t axis) const;  // negative axis counts from the end
    int64_t numel() const { return shape_numel(impl_->shape); }
    DType dtype() const { return impl_->dtype; }
    Device device() const { return impl_->device; }
    bool is_cuda() const { return impl_->device == Device::CUDA; }

    float* f32() const;    // checks dtype F32
    int32_t* i32() const;  // checks dtype I32
    void* raw() const { return impl_->data; }

    bool requires_grad() const { return impl_ && impl_->requires_grad; }
    Tensor& set_requires_grad(bool on = true);
    Tensor grad() const;  // undefined until a backward pass reaches this tensor
    void zero_grad();     // drops the gradient (the next backward allocates it zeroed)

    // Gradient buffer of this tensor, allocated zeroed on first use; backward kernels
    // accumulate into it with +=.
    Tensor grad_buffer() const;

    // A handle on the same data that is outside autograd.
    Tensor detach() const;
    Tensor clone() const;  // deep copy of the data, outside autograd
    Tensor to(Device device) const;
    // This tensor on the CPU: itself when it is there, else a copy (torch's .cpu()).
    Tensor cpu() const { return is_cuda() ? to(Device::CPU) : *this; }
    // Overwrites the values with src's (same shape and dtype), whichever devices the two are on.
    void copy_from(const Tensor& src) const;
    // Moves the data to `device` in place, so that every handle on this tensor sees it there (a
    // model's parameters, moved once before a run); the gradient is dropped. Views taken before
    // keep the old copy.
    void move_to(Device device);

    bool same_as(const Tensor& other) const { return impl_ == other.impl_; }
    TensorImpl* impl() const { return impl_.get(); }

    // Host-side element access for tests and small utilities (CPU tensors only).
    std::vector<float> to_vector() const;
    float item() const;

private:
    std::shared_ptr<TensorImpl> impl_;
};

// Factories. Every new float tensor is zero-filled unless it is `empty`.
Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::CPU);
Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = Device::CPU);
Tensor full(const Shape& shape, float value, Device device = Device::CPU);
Tensor from_vector(const Shape& shape, const std::vector<float>& values);
Tensor from_ints(const Shape& shape, const std::vector<int32_t>& values);
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);

// Throw std::runtime_error(message) when !ok. The const char* form builds no std::string unless
// it throws; a message put together with + is built on every call, so hot paths test first.
void check(bool ok, const char* message);
void check(bool ok, const std::string& message);
void check_same_shape(const Tensor& a, const Tensor& b, const char* op);
// The inputs an op reads together must be on one device: "<op>: inputs on different devices,
// cuda and cpu; move them to one device" otherwise. Undefined tensors (an absent bias or mask)
// are skipped; the message is built only when the check fails.
void check_same_device(const char* op, std::initializer_list<std::reference_wrapper<const Tensor>> tensors);
void check_same_device(const char* op, const std::vector<Tensor>& tensors);
// The float gradient buffer of t when t requires grad (an undefined t does not), else null:
// backward kernels skip the inputs that need no gradient.
float* grad_data_or_null(const Tensor& t);

}  // namespace qdq
