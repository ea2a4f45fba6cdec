// What the weight-file tests share: a test's own scratch folder (IoTest), files as bytes,
// tensors whose bits a lossy path would disturb, and comparisons of bits, never of values.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "autograd/named_tensors.h"
#include "autograd/tensor.h"

namespace qdq::testing {

inline std::vector<uint32_t> bits_of(const Tensor& t) {
    std::vector<uint32_t> bits((size_t)t.numel());
    if (!bits.empty()) std::memcpy(bits.data(), t.raw(), bits.size() * 4);
    return bits;
}

inline std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), (std::streamsize)bytes.size());
}

// Tensors whose bits a lossy path would disturb: NaN payloads, -0, subnormals, extremes.
inline NamedTensors awkward_tensors() {
    Tensor nan_payloads = empty({2, 3});
    const uint32_t patterns[] = {0x7fc00001, 0xffa00005, 0x80000000, 0x00000001, 0x7f7fffff, 0xff800000};
    std::memcpy(nan_payloads.raw(), patterns, sizeof(patterns));
    return {{"bert.encoder.layer.0.attention.self.query.weight", nan_payloads},
            {"bert.embeddings.position_ids", from_ints({1, 4}, {0, 1, INT32_MAX, INT32_MIN})},
            {"bert.pooler.dense.bias", from_vector({3}, {1.0f / 3, -2.5e-39f, 6.0e37f})},
            {"cls.scalar", from_vector({}, {0.1f})},
            {"cls.empty", zeros({0, 3})}};
}

inline void expect_same_tensors(const NamedTensors& actual, const NamedTensors& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
        SCOPED_TRACE(expected[i].name);
        EXPECT_EQ(actual[i].name, expected[i].name);
        EXPECT_EQ(actual[i].tensor.dtype(), expected[i].tensor.dtype());
        EXPECT_EQ(shape_str(actual[i].tensor.shape()), shape_str(expected[i].tensor.shape()));
        EXPECT_EQ(bits_of(actual[i].tensor), bits_of(expected[i].tensor));
    }
}

class IoTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("qdq_test_io_" + std::to_string(getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    std::filesystem::path dir_;
};

}  // namespace qdq::testing
