// Calling the HDF5 C library safely: identifiers closed by their owner, the library's own error
// printing off where a failure is expected, and failures as exceptions that name the file and
// HDF5's reason. Only io/ includes this; the rest of the project sees weight files, not HDF5.
#pragma once

#include <stdexcept>
#include <string>

#include <hdf5.h>

namespace qdq::hdf5 {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
public:
    Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
    ~Handle() {
        if (id_ >= 0) close_(id_);
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    operator hid_t() const { return id_; }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

// HDF5 prints its error stack to stderr on every failure, including the probes here that are
// expected to fail; the printing is off while a guard lives and failures become exceptions.
class QuietErrors {
public:
    QuietErrors() {
        H5Eget_auto2(H5E_DEFAULT, &saved_function_, &saved_data_);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, saved_function_, saved_data_); }
    QuietErrors(const QuietErrors&) = delete;
    QuietErrors& operator=(const QuietErrors&) = delete;

private:
    H5E_auto2_t saved_function_ = nullptr;
    void* saved_data_ = nullptr;
};

// The deepest description on HDF5's error stack, where the cause is named ("file exists",
// "unable to open file", ...); the outer entries only repeat which API call failed.
inline std::string hdf5_error_reason() {
    std::string reason;
    auto keep_last = [](unsigned, const H5E_error2_t* error, void* out) -> herr_t {
        if (error->desc && *error->desc) *static_cast<std::string*>(out) = error->desc;
        return 0;
    };
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_last, &reason);
    H5Eclear2(H5E_DEFAULT);
    return reason.empty() ? "no detail from HDF5" : reason;
}

// HDF5 returns negative identifiers and statuses on failure.
template <typename T>
T checked(T result, const std::string& path, const std::string& what) {
    if (result < 0) throw std::runtime_error(path + ": " + what + " failed (" + hdf5_error_reason() + ")");
    return result;
}

}  // namespace qdq::hdf5
