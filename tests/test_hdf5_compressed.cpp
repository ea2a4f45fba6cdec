// Compressed HDF5 files (io/hdf5_weights.h) hold chunks shuffled and deflated outside the library
// (io/deflate_chunk.h). The reference is HDF5's own filter pipeline, which decodes every chunk
// on reading: a chunk in any other layout reads back wrong or not at all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "io/deflate_chunk.h"
#include "io/hdf5_weights.h"

using namespace qdq;
namespace fs = std::filesystem;

namespace {

// Every bit pattern is as likely as any other: NaNs, infinities and subnormals included.
Tensor patterned(const Shape& shape, DType dtype, uint32_t seed) {
    Tensor t = empty(shape, dtype);
    uint32_t x = seed;
    auto* bits = static_cast<uint32_t*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i) bits[i] = x = x * 1664525u + 1013904223u;
    return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() &&
           std::memcmp(a.raw(), b.raw(), (size_t)a.numel() * dtype_size(a.dtype())) == 0;
}

}  // namespace

TEST(Hdf5Compressed, ShuffleGroupsEachByteOfEveryElement) {
    const uint8_t elements[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    EXPECT_EQ(shuffle_bytes(elements, 12, 4), (std::vector<uint8_t>{1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12}));
    EXPECT_THROW(shuffle_bytes(elements, 10, 4), std::invalid_argument);
}

// 96 MB of tensors: more than one compression window (64 MB), a window's tensors compressed on
// several threads, with an int32 tensor, a scalar and an empty tensor between them (stored
// unfiltered). Everything reads back bit for bit, in the order saved.
TEST(Hdf5Compressed, AFileOfSeveralWindowsReadsBackInOrder) {
    const NamedTensors tensors = {
        {"first", patterned({2048, 4096}, DType::F32, 1)},
        {"ids", patterned({3}, DType::I32, 2)},
        {"second", patterned({4096, 2048}, DType::F32, 3)},
        {"scalar", patterned({}, DType::F32, 4)},
        {"empty", empty({0, 5})},
        {"third", patterned({8, 1 << 20}, DType::F32, 5)},
    };
    const fs::path file = fs::temp_directory_path() / ("qdq_hdf5_compressed_" + std::to_string(getpid()) + ".h5");
    save_hdf5_weights(file.string(), tensors, "{}", Hdf5Storage::Compressed);
    const Hdf5Weights back = load_hdf5_weights(file.string());
    fs::remove(file);
    ASSERT_EQ(back.tensors.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        EXPECT_EQ(back.tensors[i].name, tensors[i].name);
        EXPECT_TRUE(same_bits(back.tensors[i].tensor, tensors[i].tensor)) << tensors[i].name;
    }
}
