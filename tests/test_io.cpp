// Weights I/O. Independent references: the safetensors file and float32 bits written by
// tests/fixtures/make_safetensors.py (its own writer, torch's conversions), the byte vector
// in the safetensors reference implementation's serialization test, the compiler's _Float16
// conversion, HDF5's C API (files our writer never makes) and the h5dump tool. Every
// comparison is of bits: the formats promise exact round trips, so no tolerance applies.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include "io/hdf5_weights.h"
#include "io/safetensors.h"

using namespace qdq;
namespace fs = std::filesystem;

namespace {

std::vector<uint32_t> bits_of(const Tensor& t) {
    std::vector<uint32_t> bits((size_t)t.numel());
    if (!bits.empty()) std::memcpy(bits.data(), t.raw(), bits.size() * 4);
    return bits;
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), (std::streamsize)bytes.size());
}

// A safetensors file from its parts: length prefix `n`, header text, data.
std::string safetensors_bytes(uint64_t n, const std::string& header, const std::string& data) {
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &n, 8);
    return bytes + header + data;
}

std::string safetensors_bytes(const std::string& header, const std::string& data) {
    return safetensors_bytes(header.size(), header, data);
}

// Tensors whose bits a lossy path would disturb: NaN payloads, -0, subnormals, extremes.
NamedTensors awkward_tensors() {
    Tensor nan_payloads = empty({2, 3});
    const uint32_t patterns[] = {0x7fc00001, 0xffa00005, 0x80000000, 0x00000001, 0x7f7fffff, 0xff800000};
    std::memcpy(nan_payloads.raw(), patterns, sizeof(patterns));
    return {{"bert.encoder.layer.0.attention.self.query.weight", nan_payloads},
            {"bert.embeddings.position_ids", from_ints({1, 4}, {0, 1, INT32_MAX, INT32_MIN})},
            {"bert.pooler.dense.bias", from_vector({3}, {1.0f / 3, -2.5e-39f, 6.0e37f})},
            {"cls.scalar", from_vector({}, {0.1f})},
            {"cls.empty", zeros({0, 3})}};
}

void expect_same_tensors(const NamedTensors& actual, const NamedTensors& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
        SCOPED_TRACE(expected[i].name);
        EXPECT_EQ(actual[i].name, expected[i].name);
        EXPECT_EQ(actual[i].tensor.dtype(), expected[i].tensor.dtype());
        EXPECT_EQ(shape_str(actual[i].tensor.shape()), shape_str(expected[i].tensor.shape()));
        EXPECT_EQ(bits_of(actual[i].tensor), bits_of(expected[i].tensor));
    }
}

// `call` must throw std::runtime_error naming `path` and containing `problem`.
template <typename Call>
void expect_error(Call call, const std::string& path, const std::string& problem) {
    try {
        call();
        ADD_FAILURE() << "no error; expected one about: " << problem;
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(path), std::string::npos) << message;
        EXPECT_NE(message.find(problem), std::string::npos) << message;
    }
}

class IoTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("qdq_test_io_" + std::to_string(getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

const std::string kReference = std::string(QDQ_FIXTURE_DIR) + "/safetensors_reference.safetensors";

}  // namespace

TEST(Safetensors, ReadsReferenceFileExactlyAsTorchConverts) {
    std::ifstream in(std::string(QDQ_FIXTURE_DIR) + "/safetensors_reference.json");
    const nlohmann::json expected = nlohmann::json::parse(in);
    const Safetensors file = load_safetensors(kReference);

    EXPECT_EQ(file.metadata, expected.at("metadata").get<decltype(file.metadata)>());
    ASSERT_EQ(file.tensors.size(), expected.at("file_order").size());
    for (size_t i = 0; i < file.tensors.size(); ++i) {
        const NamedTensor& t = file.tensors[i];
        SCOPED_TRACE(t.name);
        EXPECT_EQ(t.name, expected.at("file_order")[i].get<std::string>());
        const nlohmann::json& e = expected.at("tensors").at(t.name);
        EXPECT_EQ(t.tensor.shape(), e.at("shape").get<Shape>());
        if (e.contains("int_values")) {
            ASSERT_EQ(t.tensor.dtype(), DType::I32);
            std::vector<int32_t> values(t.tensor.i32(), t.tensor.i32() + t.tensor.numel());
            EXPECT_EQ(values, e.at("int_values").get<std::vector<int32_t>>());
        } else {
            ASSERT_EQ(t.tensor.dtype(), DType::F32);
            EXPECT_EQ(bits_of(t.tensor), e.at("float32_bits").get<std::vector<uint32_t>>());
        }
    }
}

TEST(Safetensors, HalfConversionMatchesCompilerForEveryBitPattern) {
#ifdef __FLT16_MANT_DIG__
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const float expected = (float)std::bit_cast<_Float16>((uint16_t)h);
        ASSERT_EQ(std::bit_cast<uint32_t>(half_to_float((uint16_t)h)), std::bit_cast<uint32_t>(expected))
            << "half bits 0x" << std::hex << h;
    }
#else
    GTEST_SKIP() << "this compiler has no _Float16 to compare with";
#endif
}

TEST_F(IoTest, SafetensorsWriteThenReadIsBitExact) {
    const NamedTensors tensors = awkward_tensors();
    const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "üñï ✓"}};
    save_safetensors(path("w.safetensors"), tensors, metadata);
    Safetensors back = load_safetensors(path("w.safetensors"));
    EXPECT_EQ(back.metadata, metadata);

    // The file orders F32 before I32, then by key.
    NamedTensors expected = tensors;
    std::stable_sort(expected.begin(), expected.end(), [](const NamedTensor& a, const NamedTensor& b) {
        return std::make_pair(a.tensor.dtype() != DType::F32, a.name) <
               std::make_pair(b.tensor.dtype() != DType::F32, b.name);
    });
    expect_same_tensors(back.tensors, expected);

    const std::string bytes = read_bytes(path("w.safetensors"));
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u) << "data must start 8-byte aligned";
    Safetensors from_memory = parse_safetensors((const uint8_t*)bytes.data(), bytes.size(), "memory");
    expect_same_tensors(from_memory.tensors, expected);
}

TEST_F(IoTest, SafetensorsWriterMatchesReferenceSerializationVector) {
    // safetensors/src/tensor.rs, test_serialization: one F32 tensor "attn.0" of shape [1, 2, 3]
    // holding 0..5 serializes to a 64-byte header (already 8-aligned, so unpadded) and the data;
    // test_empty: no tensors serialize to "{}" padded with six spaces.
    const std::vector<float> values = {0, 1, 2, 3, 4, 5};
    save_safetensors(path("a.safetensors"), {{"attn.0", from_vector({1, 2, 3}, values)}});
    std::string data(24, '\0');
    std::memcpy(data.data(), values.data(), 24);
    EXPECT_EQ(read_bytes(path("a.safetensors")),
              safetensors_bytes(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})", data));

    save_safetensors(path("empty.safetensors"), {});
    EXPECT_EQ(read_bytes(path("empty.safetensors")), safetensors_bytes("{}      ", ""));
}

TEST_F(IoTest, SafetensorsWriterRejectsDuplicateAndReservedKeys) {
    expect_error([&] { save_safetensors(path("d"), {{"a", zeros({1})}, {"a", zeros({2})}}); },
                 path("d"), "duplicate tensor key \"a\"");
    expect_error([&] { save_safetensors(path("m"), {{"__metadata__", zeros({1})}}); }, path("m"),
                 "reserved");
}

TEST_F(IoTest, CorruptSafetensorsThrowNamingFileAndProblem) {
    const std::string f32_4 = std::string(16, '\0');
    auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape,
                    const std::string& offsets) {
        return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
               ",\"data_offsets\":" + offsets + "}";
    };
    const std::string good = entry("a", "F32", "[2,2]", "[0,16]");
    struct Case {
        const char* label;
        std::string bytes;
        std::string problem;
    };
    const std::string deep = std::string(200, '[') + std::string(200, ']');
    const std::string long_key(100'000, 'k');
    const std::vector<Case> cases = {
        {"empty file", "", "0 bytes, shorter than the 8-byte header length"},
        {"5-byte file", std::string("\x10\0\0\0\0", 5), "5 bytes, shorter than the 8-byte header length"},
        {"length past file", safetensors_bytes(1000, "{" + good + "}", f32_4), "runs past the end of the file"},
        {"absurd length", safetensors_bytes(uint64_t(1) << 40, "{}", ""), "exceeds the 100 MB limit"},
        {"just over 100 MB", safetensors_bytes(100'000'001, "{}", ""), "exceeds the 100 MB limit"},
        {"not JSON", safetensors_bytes("{\"a\":", ""), "header is not valid JSON"},
        {"number beyond double", safetensors_bytes("{\"a\":1e400}", ""), "number overflow"},
        {"not UTF-8", safetensors_bytes("{\"\xff\":1}", ""), "header is not valid JSON"},
        {"array header", safetensors_bytes("[1,2]", ""), "header is a JSON array, not an object"},
        {"deep nesting", safetensors_bytes("{\"a\":" + deep + "}", ""), "nests deeper"},
        {"unknown dtype", safetensors_bytes("{" + entry("a", "F33", "[2,2]", "[0,16]") + "}", f32_4),
         "tensor \"a\": unknown dtype \"F33\""},
        {"long key in a message", safetensors_bytes("{" + entry(long_key, "F33", "[4]", "[0,16]") + "}", f32_4),
         "tensor \"" + long_key.substr(0, 200) + "...\": unknown dtype"},
        {"unsupported dtype", safetensors_bytes("{" + entry("a", "F64", "[2]", "[0,16]") + "}", f32_4),
         "tensor \"a\": unsupported dtype F64"},
        {"size mismatch", safetensors_bytes("{" + entry("a", "F32", "[2,2]", "[0,12]") + "}", f32_4),
         "shape [2, 2] of F32 needs 16 bytes but data_offsets span 12"},
        {"past the end", safetensors_bytes("{" + entry("a", "F32", "[2,4]", "[0,32]") + "}", f32_4),
         "past the end of the data (16 bytes)"},
        {"overlap", safetensors_bytes("{" + good + "," + entry("b", "F32", "[2]", "[8,16]") + "}", f32_4),
         "tensor \"b\" overlaps tensor \"a\""},
        {"gap", safetensors_bytes("{" + entry("a", "F32", "[2]", "[0,8]") + "," +
                                      entry("b", "F32", "[1]", "[12,16]") + "}", f32_4),
         "gap of 4 bytes before tensor \"b\""},
        {"trailing bytes", safetensors_bytes("{" + good + "}", f32_4 + "xxxx"), "4 bytes after the last tensor"},
        {"begin after end", safetensors_bytes("{" + entry("a", "F32", "[0]", "[16,0]") + "}", f32_4),
         "end before they begin"},
        {"negative dim", safetensors_bytes("{" + entry("a", "F32", "[-2,-2]", "[0,16]") + "}", f32_4),
         "negative dimension -2"},
        {"fractional dim", safetensors_bytes("{" + entry("a", "F32", "[2.5]", "[0,16]") + "}", f32_4),
         "dimension is a JSON number, expected a non-negative integer"},
        {"overflowing shape",
         safetensors_bytes("{" + entry("a", "F32", "[4294967296,4294967296]", "[0,16]") + "}", f32_4),
         "shape overflows 64 bits"},
        {"negative offset", safetensors_bytes("{" + entry("a", "F32", "[2,2]", "[-16,0]") + "}", f32_4),
         "data_offsets begin is negative"},
        {"duplicate key", safetensors_bytes("{" + good + "," + good + "}", f32_4), "duplicate key \"a\""},
        {"duplicate field",
         safetensors_bytes(R"({"a":{"dtype":"F32","dtype":"I32","shape":[4],"data_offsets":[0,16]}})", f32_4),
         "duplicate key \"dtype\""},
        {"missing field", safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4]}})", f32_4),
         "tensor \"a\": missing \"data_offsets\""},
        {"extra field",
         safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16],"x":1}})", f32_4),
         "unexpected field \"x\""},
        {"metadata value", safetensors_bytes(R"({"__metadata__":{"format":1}})", ""),
         "__metadata__ value \"format\" is not a string"},
        {"I64 overflow", safetensors_bytes("{" + entry("ids", "I64", "[2]", "[0,16]") + "}",
                                           std::string("\1\0\0\0\0\0\0\0\0\0\0\x80\0\0\0\0", 16)),
         "I64 value 2147483648 at index 1 does not fit int32"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.label);
        const std::string file = path(std::string(c.label) + ".safetensors");
        write_bytes(file, c.bytes);
        expect_error([&] { load_safetensors(file); }, file, c.problem);
        expect_error([&] { parse_safetensors((const uint8_t*)c.bytes.data(), c.bytes.size(), file); },
                     file, c.problem);
    }
    expect_error([&] { load_safetensors(path("missing.safetensors")); }, path("missing.safetensors"),
                 "cannot read (No such file or directory)");
}

// Random damage to a valid file (the reference fixture, which holds every supported dtype):
// every outcome must be a clean load or a std::runtime_error, and the file and in-memory
// readers must agree. Seeded, so a failure reproduces.
TEST_F(IoTest, MutatedSafetensorsLoadOrThrowRuntimeError) {
    const std::string original = read_bytes(kReference);
    ASSERT_GT(original.size(), 100u);
    std::mt19937_64 rng(20240611);
    auto below = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
    uint64_t header_end;
    std::memcpy(&header_end, original.data(), 8);
    header_end += 8;
    int loaded = 0, rejected = 0;
    const std::string file = path("mutant.safetensors");
    for (int iteration = 0; iteration < 3000; ++iteration) {
        std::string bytes = original;
        switch (below(4)) {
            case 0:  // flip bits in 1-4 bytes, mostly in the header where the structure lives
                for (uint64_t k = 0, flips = 1 + below(4); k < flips; ++k)
                    bytes[below(below(4) ? header_end : bytes.size())] ^= (char)(1 + below(255));
                break;
            case 1: bytes.resize(below(bytes.size())); break;
            case 2: {  // a new header length: near the true one, or anything at all
                uint64_t n = header_end - 8;
                n = below(2) ? n + below(17) - 8 : rng() >> below(64);
                std::memcpy(bytes.data(), &n, 8);
                break;
            }
            default:  // overwrite a byte with a JSON-significant character
                bytes[8 + below(header_end - 8)] = "{}[]\",:-0123456789e. "[below(21)];
        }
        fs::remove(file);  // rewriting in place would make ext4 flush on every close
        write_bytes(file, bytes);
        std::string file_error = "loaded", memory_error = "loaded";
        try {
            load_safetensors(file);
            ++loaded;
        } catch (const std::runtime_error& e) {
            file_error = e.what();
            ++rejected;
        }
        try {
            parse_safetensors((const uint8_t*)bytes.data(), bytes.size(), file);
        } catch (const std::runtime_error& e) {
            memory_error = e.what();
        }
        ASSERT_EQ(file_error, memory_error) << "iteration " << iteration;
        if (file_error != "loaded") {
            ASSERT_NE(file_error.find(file), std::string::npos) << file_error;
        }
    }
    RecordProperty("loaded", loaded);
    RecordProperty("rejected", rejected);
    // Both outcomes must occur, or the mutations are not probing the parser.
    EXPECT_GT(loaded, 30);
    EXPECT_GT(rejected, 1500);
}

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

// Files our writer never produces, written with the HDF5 C API directly.
static void write_foreign_hdf5(const std::string& path, bool with_config) {
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

TEST_F(IoTest, Hdf5ErrorsNameFileAndKey) {
    save_hdf5_weights(path("w.h5"), awkward_tensors(), "{}");
    expect_error([&] { load_hdf5_weights(path("missing.h5")); }, path("missing.h5"), "no such file");
    write_bytes(path("text.h5"), "not an HDF5 file, just text\n");
    expect_error([&] { load_hdf5_weights(path("text.h5")); }, path("text.h5"), "not an HDF5 file");
    expect_error([&] { load_hdf5_tensor(path("w.h5"), "bert.pooler.dense.weight"); }, path("w.h5"),
                 "dataset \"bert.pooler.dense.weight\" does not exist");

    write_foreign_hdf5(path("foreign.h5"), false);
    expect_error([&] { load_hdf5_weights(path("foreign.h5")); }, path("foreign.h5"),
                 "no \"config\" attribute on the root group");
    expect_error([&] { load_hdf5_tensor(path("foreign.h5"), "f64"); }, path("foreign.h5"),
                 "dataset \"f64\": unsupported dtype float64 (expected float32 or int32)");
    expect_error([&] { load_hdf5_tensor(path("foreign.h5"), "bert"); }, path("foreign.h5"),
                 "dataset \"bert\" is not a dataset");
    EXPECT_EQ(load_hdf5_tensor(path("foreign.h5"), "f32be").to_vector(), (std::vector<float>{1.5f, -2.0f}));
    write_foreign_hdf5(path("int_config.h5"), true);
    expect_error([&] { load_hdf5_weights(path("int_config.h5")); }, path("int_config.h5"),
                 "\"config\" attribute is not one variable-length string");

    expect_error([&] { save_hdf5_weights(path("k.h5"), {{"a/b", zeros({1})}}, "{}"); }, path("k.h5"),
                 "key \"a/b\" cannot name a root dataset");
    expect_error([&] { save_hdf5_weights(path("k.h5"), {{"a", zeros({1})}, {"a", zeros({1})}}, "{}"); },
                 path("k.h5"), "duplicate key \"a\"");
    expect_error([&] { save_hdf5_weights(path("no_dir/k.h5"), {}, "{}"); }, path("no_dir/k.h5"),
                 "creating failed");
}
