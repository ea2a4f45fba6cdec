// HDF5 weight files (io/hdf5_weights.h) against HDF5's C API, which writes files our writer never
// makes, and the h5dump tool: round trips keep every bit and the order, compressed storage is
// filtered and smaller, and each error names the file and the dataset or attribute.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/hdf5_weights.h"
#include "tests/support/expect_error.h"
#include "tests/support/weight_files.h"

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

namespace {

// Files our writer never produces, written with the HDF5 C API directly.
void write_foreign_hdf5(const std::string& path, bool with_config) {
    hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[1] = {2};
    hid_t space = H5Screate_simple(1, dims, nullptr);
    const double doubles[2] = {1.0, 2.0};
    hid_t f64 = H5Dcreate2(file, "f64", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(f64, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, doubles);
    const float floats[2] = {1.5f, -2.0f};
    hid_t big_endian = H5Dcreate2(file, "f32be", H5T_IEEE_F32BE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(big_endian, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, floats);
    hid_t group = H5Gcreate2(file, "bert", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (with_config) {
        hid_t scalar = H5Screate(H5S_SCALAR);
        hid_t attribute = H5Acreate2(file, "config", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT);
        const int value = 1;
        H5Awrite(attribute, H5T_NATIVE_INT, &value);
        H5Aclose(attribute);
        H5Sclose(scalar);
    }
    H5Gclose(group);
    H5Dclose(big_endian);
    H5Dclose(f64);
    H5Sclose(space);
    H5Fclose(file);
}

}  // namespace

TEST_F(IoTest, Hdf5RoundTripIsBitExactAndKeepsOrder) {
    const NamedTensors tensors = awkward_tensors();  // deliberately not sorted by key
    const std::string config = R"({"hidden_size": 768, "note": "ünï ✓", "layers": [1, 2]})";
    save_hdf5_weights(path("w.h5"), tensors, config);
    Hdf5Weights back = load_hdf5_weights(path("w.h5"));
    EXPECT_EQ(back.config_json, config);
    expect_same_tensors(back.tensors, tensors);

    Tensor one = load_hdf5_tensor(path("w.h5"), "bert.pooler.dense.bias");
    EXPECT_EQ(bits_of(one), bits_of(tensors[2].tensor));

    save_hdf5_weights(path("empty.h5"), {}, "");
    back = load_hdf5_weights(path("empty.h5"));
    EXPECT_EQ(back.config_json, "");
    EXPECT_TRUE(back.tensors.empty());
}

// Compressed storage (shuffle + deflate) is lossless on every bit pattern, leaves scalars and empty
// tensors as they are, and shrinks weights whose low mantissa bytes repeat (bf16-rounded values).
TEST_F(IoTest, Hdf5CompressedStorageIsBitExactFilteredAndSmaller) {
    NamedTensors tensors = awkward_tensors();
    Tensor weights = empty({256, 256});
    std::mt19937 gen(5);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (int64_t i = 0; i < weights.numel(); ++i) weights.f32()[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(normal(gen)) & 0xffff0000u);
    tensors.push_back({"weights", weights});
    save_hdf5_weights(path("plain.h5"), tensors, "{}");
    save_hdf5_weights(path("compressed.h5"), tensors, "{}", Hdf5Storage::Compressed);
    expect_same_tensors(load_hdf5_weights(path("compressed.h5")).tensors, tensors);
    EXPECT_LT(fs::file_size(path("compressed.h5")), fs::file_size(path("plain.h5")) * 3 / 4);

    hid_t file = H5Fopen(path("compressed.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    hid_t dataset = H5Dopen2(file, "weights", H5P_DEFAULT);
    hid_t plist = H5Dget_create_plist(dataset);
    EXPECT_EQ(H5Pget_nfilters(plist), 2);  // shuffle, then deflate
    unsigned flags = 0, filter_config = 0, values[4] = {};
    size_t count = 4;
    EXPECT_EQ(H5Pget_filter2(plist, 0, &flags, &count, values, 0, nullptr, &filter_config), H5Z_FILTER_SHUFFLE);
    count = 4;
    EXPECT_EQ(H5Pget_filter2(plist, 1, &flags, &count, values, 0, nullptr, &filter_config), H5Z_FILTER_DEFLATE);
    H5Pclose(plist);
    H5Dclose(dataset);
    H5Fclose(file);
}

TEST_F(IoTest, H5dumpSeesDatasetsDtypesAndConfig) {
    if (std::system("command -v h5dump > /dev/null 2>&1") != 0) GTEST_SKIP() << "h5dump is not installed";
    save_hdf5_weights(path("w.h5"), awkward_tensors(), R"({"hidden_size": 768})");
    // -m %a prints each value in hexadecimal floating point: exact, so it can be compared.
    const std::string command = "h5dump -m %a '" + path("w.h5") + "' 2>&1";
    std::string dump;
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) dump.append(buffer, n);
    ASSERT_EQ(pclose(pipe), 0) << dump;
    for (const char* expected :
         {"DATASET \"bert.encoder.layer.0.attention.self.query.weight\"", "H5T_IEEE_F32LE",
          "DATASET \"bert.embeddings.position_ids\"", "H5T_STD_I32LE", "SIMPLE { ( 1, 4 ) / ( 1, 4 ) }",
          "(0,2): 2147483647", "(0,3): -2147483648", "DATASET \"cls.scalar\"", "SCALAR", "SIMPLE { ( 0, 3 ) / ( 0, 3 ) }",
          "ATTRIBUTE \"config\"", "H5T_CSET_UTF8", R"((0): "{"hidden_size": 768}")",
          "0x1.555556p-2"})  // 1/3 in float32, from bert.pooler.dense.bias
        EXPECT_NE(dump.find(expected), std::string::npos) << "missing " << expected << " in\n" << dump;
}

TEST_F(IoTest, Hdf5ErrorsNameFileAndKey) {
    save_hdf5_weights(path("w.h5"), awkward_tensors(), "{}");
    expect_error([&] { load_hdf5_weights(path("missing.h5")); }, {path("missing.h5"), "no such file"});
    write_bytes(path("text.h5"), "not an HDF5 file, just text\n");
    expect_error([&] { load_hdf5_weights(path("text.h5")); }, {path("text.h5"), "not an HDF5 file"});
    expect_error([&] { load_hdf5_tensor(path("w.h5"), "bert.pooler.dense.weight"); },
                 {path("w.h5"), "dataset \"bert.pooler.dense.weight\" does not exist"});

    write_foreign_hdf5(path("foreign.h5"), false);
    expect_error([&] { load_hdf5_weights(path("foreign.h5")); },
                 {path("foreign.h5"), "no \"config\" attribute on the root group"});
    expect_error([&] { load_hdf5_tensor(path("foreign.h5"), "f64"); },
                 {path("foreign.h5"), "dataset \"f64\": unsupported dtype float64 (expected float32 or int32)"});
    expect_error([&] { load_hdf5_tensor(path("foreign.h5"), "bert"); },
                 {path("foreign.h5"), "dataset \"bert\" is not a dataset"});
    EXPECT_EQ(load_hdf5_tensor(path("foreign.h5"), "f32be").to_vector(), (std::vector<float>{1.5f, -2.0f}));
    write_foreign_hdf5(path("int_config.h5"), true);
    expect_error([&] { load_hdf5_weights(path("int_config.h5")); },
                 {path("int_config.h5"), "\"config\" attribute is not one variable-length string"});

    expect_error([&] { save_hdf5_weights(path("k.h5"), {{"a/b", zeros({1})}}, "{}"); },
                 {path("k.h5"), "key \"a/b\" cannot name a root dataset"});
    expect_error([&] { save_hdf5_weights(path("k.h5"), {{"a", zeros({1})},
                 {"a", zeros({1})}}, "{}"); }, {path("k.h5"), "duplicate key \"a\""});
    expect_error([&] { save_hdf5_weights(path("no_dir/k.h5"), {}, "{}"); }, {path("no_dir/k.h5"), "creating failed"});
}
