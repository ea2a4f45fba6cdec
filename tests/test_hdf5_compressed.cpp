// Compressed HDF5 files (io/hdf5_weights.h) hold chunks shuffled and deflated outside the library
// and are read back the same way (io/deflate_chunk.h). The reference is HDF5's own filter
// pipeline both ways: it decodes what the writer stored (H5Dread here), and the reader decodes
// what the pipeline stored (a file written through H5Dwrite, as h5py writes one).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <libdeflate.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/deflate_chunk.h"
#include "autograd/rng.h"
#include "io/hdf5_weights.h"
#include "tests/support/thread_count.h"

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

fs::path scratch(const std::string& name) {
    return fs::temp_directory_path() / ("qdq_hdf5_compressed_" + std::to_string(getpid()) + "_" + name);
}

hid_t native_type(const Tensor& t) { return t.dtype() == DType::F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32; }

// `expected` read through HDF5's own pipeline (H5Dread), bit for bit.
void expect_library_reads(const fs::path& file, const NamedTensors& expected) {
    hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    for (const NamedTensor& t : expected) {
        hid_t dataset = H5Dopen2(f, t.name.c_str(), H5P_DEFAULT);
        ASSERT_GE(dataset, 0) << t.name;
        Tensor back = empty(t.tensor.shape(), t.tensor.dtype());
        if (t.tensor.numel() > 0) {
            EXPECT_GE(H5Dread(dataset, native_type(t.tensor), H5S_ALL, H5S_ALL, H5P_DEFAULT, back.raw()), 0);
        }
        EXPECT_TRUE(same_bits(back, t.tensor)) << t.name;
        H5Dclose(dataset);
    }
    H5Fclose(f);
}

// `tensors` as HDF5's filters write them (one chunk per tensor, shuffle, gzip level 6).
void write_through_library_filters(const fs::path& file, const NamedTensors& tensors) {
    hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    for (const NamedTensor& t : tensors) {
        const std::vector<hsize_t> dims(t.tensor.shape().begin(), t.tensor.shape().end());
        hid_t space = H5Screate_simple((int)dims.size(), dims.data(), nullptr);
        hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(plist, (int)dims.size(), dims.data());
        H5Pset_shuffle(plist);
        H5Pset_deflate(plist, 6);
        const hid_t file_type = t.tensor.dtype() == DType::F32 ? H5T_IEEE_F32LE : H5T_STD_I32LE;
        hid_t dataset = H5Dcreate2(f, t.name.c_str(), file_type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
        H5Dwrite(dataset, native_type(t.tensor), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.tensor.raw());
        H5Dclose(dataset);
        H5Pclose(plist);
        H5Sclose(space);
    }
    H5Fclose(f);
}

// Weights as a model's initial ones are drawn: normal, standard deviation 0.02.
Tensor normal_weights(const Shape& shape, uint64_t seed) {
    Tensor t = empty(shape, DType::F32);
    Rng rng(seed);
    auto* values = static_cast<float*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i) values[i] = rng.normal(0.0f, 0.02f);
    return t;
}

// The chunk stored for dataset `name` (a one-chunk tensor), as it is in the file.
std::vector<uint8_t> stored_chunk(const fs::path& file, const std::string& name) {
    hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t dataset = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
    hid_t space = H5Dget_space(dataset);
    const std::vector<hsize_t> origin((size_t)H5Sget_simple_extent_ndims(space), 0);
    hsize_t size = 0;
    H5Dget_chunk_storage_size(dataset, origin.data(), &size);
    std::vector<uint8_t> chunk(size);
    uint32_t filters = 0;
    H5Dread_chunk(dataset, H5P_DEFAULT, origin.data(), &filters, chunk.data());
    H5Sclose(space);
    H5Dclose(dataset);
    H5Fclose(f);
    return chunk;
}

// The size of libdeflate's own zlib stream of `t` shuffled, at level 1: the chunk as it was
// written when every plane went through deflate.
size_t whole_stream_size(const Tensor& t) {
    const std::vector<uint8_t> shuffled = shuffle_bytes(t.raw(), (size_t)t.numel() * 4, 4);
    libdeflate_compressor* compressor = libdeflate_alloc_compressor(1);
    std::vector<uint8_t> out(libdeflate_zlib_compress_bound(compressor, shuffled.size()));
    const size_t size = libdeflate_zlib_compress(compressor, shuffled.data(), shuffled.size(), out.data(), out.size());
    libdeflate_free_compressor(compressor);
    return size;
}

}  // namespace

TEST(Hdf5Compressed, ShuffleGroupsEachByteOfEveryElement) {
    const uint8_t elements[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    EXPECT_EQ(shuffle_bytes(elements, 12, 4), (std::vector<uint8_t>{1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12}));
    EXPECT_THROW(shuffle_bytes(elements, 10, 4), std::invalid_argument);
}

// 96 MB of tensors: more than one compression window (64 MB), a window's tensors compressed on
// several threads, with an int32 tensor, a scalar and an empty tensor between them (stored
// unfiltered). Everything reads back bit for bit, in the order saved, through this reader and
// through HDF5's own filters.
TEST(Hdf5Compressed, AFileOfSeveralWindowsReadsBackInOrder) {
    const qdq::testing::ThreadCount threads(4);
    const NamedTensors tensors = {
        {"first", patterned({2048, 4096}, DType::F32, 1)},
        {"ids", patterned({3}, DType::I32, 2)},
        {"second", patterned({4096, 2048}, DType::F32, 3)},
        {"scalar", patterned({}, DType::F32, 4)},
        {"empty", empty({0, 5})},
        {"third", patterned({8, 1 << 20}, DType::F32, 5)},
    };
    const fs::path file = scratch("windows.h5");
    save_hdf5_weights(file.string(), tensors, "{}", Hdf5Storage::Compressed);
    const Hdf5Weights back = load_hdf5_weights(file.string());
    expect_library_reads(file, tensors);
    fs::remove(file);
    ASSERT_EQ(back.tensors.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        EXPECT_EQ(back.tensors[i].name, tensors[i].name);
        EXPECT_TRUE(same_bits(back.tensors[i].tensor, tensors[i].tensor)) << tensors[i].name;
    }
}

TEST(Hdf5Compressed, ReadsWhatHdf5sOwnFiltersWrote) {
    const NamedTensors tensors = {{"weight", patterned({300, 70}, DType::F32, 6)}, {"ids", patterned({9}, DType::I32, 7)}};
    const fs::path file = scratch("library.h5");
    write_through_library_filters(file, tensors);
    for (const NamedTensor& t : tensors) EXPECT_TRUE(same_bits(load_hdf5_tensor(file.string(), t.name), t.tensor)) << t.name;
    fs::remove(file);
}

// A byte flipped inside a stored chunk fails the stream's checksum: the error names the file and
// the key.
TEST(Hdf5Compressed, ACorruptChunkNamesTheFileAndKey) {
    const fs::path file = scratch("corrupt.h5");
    save_hdf5_weights(file.string(), {{"weight", patterned({256, 64}, DType::F32, 8)}}, "{}", Hdf5Storage::Compressed);
    hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t dataset = H5Dopen2(f, "weight", H5P_DEFAULT);
    const hsize_t origin[2] = {0, 0};
    unsigned mask = 0;
    haddr_t address = 0;
    hsize_t size = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(dataset, origin, &mask, &address, &size), 0);
    H5Dclose(dataset);
    H5Fclose(f);
    {
        std::fstream bytes(file, std::ios::in | std::ios::out | std::ios::binary);
        bytes.seekg((std::streamoff)(address + size / 2));
        const char flipped = (char)(bytes.peek() ^ 0x10);
        bytes.seekp((std::streamoff)(address + size / 2));
        bytes.put(flipped);
    }
    try {
        load_hdf5_weights(file.string());
        ADD_FAILURE() << "a corrupt chunk loaded";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("weight"), std::string::npos) << e.what();
    }
    fs::remove(file);
}

// Planes of bytes that look random go in deflate's stored blocks; the planes after the first
// that does not are deflated. Normal weights: the three low bytes stored (the stream opens with
// a stored block that is not the last, 65,535 bytes long), the sign and exponent plane deflated,
// the whole within 0.5% of deflating every plane. Bytes that are random in every plane: stored
// blocks alone, the last marked final and as long as what is left. A constant tensor: deflated. HDF5's own filters read each
// back bit for bit.
TEST(Hdf5Compressed, BytePlanesThatLookRandomAreStoredAndTheRestDeflated) {
    const NamedTensors tensors = {{"normal", normal_weights({512, 384}, 9)},
                                  {"random", patterned({300, 70}, DType::F32, 10)},
                                  {"constant", full({256, 64}, 1.0f)}};
    const fs::path file = scratch("planes.h5");
    save_hdf5_weights(file.string(), tensors, "{}", Hdf5Storage::Compressed);
    expect_library_reads(file, tensors);

    const size_t raw_normal = 512 * 384 * 4;
    const std::vector<uint8_t> normal = stored_chunk(file, "normal");
    ASSERT_GT(normal.size(), 7u);
    EXPECT_EQ(std::vector<uint8_t>(normal.begin() + 2, normal.begin() + 7), (std::vector<uint8_t>{0x00, 0xff, 0xff, 0x00, 0x00}));
    EXPECT_LT(normal.size(), raw_normal * 9 / 10);
    EXPECT_LT((double)normal.size(), 1.005 * (double)whole_stream_size(tensors[0].tensor));

    // 84,000 bytes in all: a stored block of 65,535, then a final one of the 18,465 left.
    const size_t raw_random = 300 * 70 * 4;
    const std::vector<uint8_t> random = stored_chunk(file, "random");
    ASSERT_EQ(random.size(), 2 + 5 + raw_random + 5 + 4);
    EXPECT_EQ(std::vector<uint8_t>(random.begin() + 2, random.begin() + 7), (std::vector<uint8_t>{0x00, 0xff, 0xff, 0x00, 0x00}));
    const uint8_t* last = random.data() + 2 + 5 + 65535;
    EXPECT_EQ(std::vector<uint8_t>(last, last + 5), (std::vector<uint8_t>{0x01, 18465 & 0xff, 18465 >> 8,
                                                                          (uint8_t)~(18465 & 0xff), (uint8_t)~(18465 >> 8)}));

    const std::vector<uint8_t> constant = stored_chunk(file, "constant");
    EXPECT_LT(constant.size(), 256u * 64 * 4 / 100);
    fs::remove(file);
}
