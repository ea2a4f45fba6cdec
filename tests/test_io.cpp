// Safetensors I/O. Independent references: the file and float32 bits written by
// tests/fixtures/make_safetensors.py (its own writer, torch's conversions), the byte vector in
// the safetensors reference implementation's serialization test and the compiler's _Float16
// conversion. Every comparison is of bits: the format promises exact round trips, so no
// tolerance applies. HDF5: test_hdf5.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "tests/support/expect_error.h"
#include "tests/support/weight_files.h"

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

namespace {

// A safetensors file from its parts: length prefix `n`, header text, data.
std::string safetensors_bytes(uint64_t n, const std::string& header, const std::string& data) {
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &n, 8);
    return bytes + header + data;
}

std::string safetensors_bytes(const std::string& header, const std::string& data) {
    return safetensors_bytes(header.size(), header, data);
}

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
                 {path("d"), "duplicate tensor key \"a\""});
    expect_error([&] { save_safetensors(path("m"), {{"__metadata__", zeros({1})}}); }, {path("m"), "reserved"});
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
        expect_error([&] { load_safetensors(file); }, {file, c.problem});
        expect_error([&] { parse_safetensors((const uint8_t*)c.bytes.data(), c.bytes.size(), file); },
                     {file, c.problem});
    }
    expect_error([&] { load_safetensors(path("missing.safetensors")); },
                 {path("missing.safetensors"), "cannot read (No such file or directory)"});
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
