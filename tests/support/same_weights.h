// Two saved models (model.h5 or checkpoints) compared tensor by tensor, bit for bit: how the
// resume tests show that a stopped and resumed run ends where a run never stopped does.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "io/hdf5_weights.h"

namespace qdq::testing {

inline void expect_same_weights(const std::filesystem::path& a, const std::filesystem::path& b) {
    Hdf5Weights x = load_hdf5_weights(a.string()), y = load_hdf5_weights(b.string());
    ASSERT_EQ(x.tensors.size(), y.tensors.size());
    for (size_t i = 0; i < x.tensors.size(); ++i) {
        ASSERT_EQ(x.tensors[i].name, y.tensors[i].name);
        const Tensor& p = x.tensors[i].tensor;
        const Tensor& q = y.tensors[i].tensor;
        ASSERT_EQ(p.shape(), q.shape());
        EXPECT_EQ(0, std::memcmp(p.raw(), q.raw(), (size_t)p.numel() * 4)) << x.tensors[i].name;
    }
}

}  // namespace qdq::testing
