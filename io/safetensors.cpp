#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include <nlohmann/json.hpp>

#include "json/json_file.h"

namespace qdq {

// Data is copied with memcpy and read as host integers; a big-endian host would need swaps.
static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using nlohmann::json;

// The reference reader refuses longer headers; a BERT-large header is about 40 KB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

enum class FileDType { F32, F16, BF16, I32, I64 };

struct TensorEntry {
    std::string name;
    FileDType dtype;
    Shape shape;
    uint64_t begin = 0, end = 0;  // byte range within the data section
};

struct Header {
    std::vector<TensorEntry> entries;  // sorted by data offset
    std::map<std::string, std::string> metadata;
};

[[noreturn]] void fail(const std::string& source, const std::string& problem) {
    throw std::runtime_error(source + ": invalid safetensors file: " + problem);
}

// A name from the file, in quotes, cut short: a corrupt header can hold a 100 MB key.
std::string quoted(const std::string& name) {
    constexpr size_t kShown = 200;
    return "\"" + (name.size() <= kShown ? name : name.substr(0, kShown) + "...") + "\"";
}

size_t file_dtype_size(FileDType dtype) {
    switch (dtype) {
        case FileDType::F16:
        case FileDType::BF16: return 2;
        case FileDType::F32:
        case FileDType::I32: return 4;
        case FileDType::I64: return 8;
    }
    return 0;
}

FileDType parse_dtype(const std::string& name, const std::string& where, const std::string& source) {
    static const std::map<std::string, FileDType> supported = {
        {"F32", FileDType::F32}, {"F16", FileDType::F16}, {"BF16", FileDType::BF16},
        {"I32", FileDType::I32}, {"I64", FileDType::I64}};
    // Valid safetensors dtypes that have no exact float32/int32 reading here.
    static const std::set<std::string> unsupported = {"BOOL", "U8", "I8", "I16", "U16", "U32",
                                                       "U64", "F64", "F8_E5M2", "F8_E4M3"};
    if (auto it = supported.find(name); it != supported.end()) return it->second;
    if (unsupported.count(name)) fail(source, where + ": unsupported dtype " + name);
    fail(source, where + ": unknown dtype " + quoted(name));
}

// Header length from the first 8 bytes, checked against the limit and the file size.
uint64_t header_length(const uint8_t* prefix, uint64_t file_size, const std::string& source) {
    if (file_size < 8)
        fail(source, "file is " + std::to_string(file_size) +
                         " bytes, shorter than the 8-byte header length");
    uint64_t n;
    std::memcpy(&n, prefix, 8);
    if (n > kMaxHeaderBytes)
        fail(source, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
    if (n > file_size - 8)
        fail(source, "header length " + std::to_string(n) + " runs past the end of the file (" +
                         std::to_string(file_size) + " bytes)");
    return n;
}

// nlohmann::json keeps the last of duplicate keys without a word; a writer that repeats a
// key is broken, so duplicates at any depth are rejected. A safetensors header nests three
// levels deep at most (root, entry, shape), so deeper input is rejected as it is read.
json parse_header_json(std::string_view text, const std::string& source) {
    std::vector<std::set<std::string>> keys_per_open_object;
    auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                if (depth > 2) fail(source, "header nests deeper than a safetensors header can");
                if (event == json::parse_event_t::object_start) keys_per_open_object.emplace_back();
                break;
            case json::parse_event_t::object_end: keys_per_open_object.pop_back(); break;
            case json::parse_event_t::key:
                if (!keys_per_open_object.back().insert(parsed.get<std::string>()).second)
                    fail(source, "duplicate key " + quoted(parsed.get<std::string>()) + " in header");
                break;
            default: break;
        }
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), on_event);
    } catch (const json::exception& e) {  // syntax errors, and numbers too large for a double
        fail(source, "header is not valid JSON (" + json_error_text(e) + ")");
    }
}

uint64_t json_unsigned(const json& value, const std::string& what, const std::string& source) {
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer()) fail(source, what + " is negative");
    fail(source, what + " is a JSON " + value.type_name() + ", expected a non-negative integer");
}

TensorEntry parse_entry(const std::string& name, const json& info, const std::string& source) {
    const std::string where = "tensor " + quoted(name);
    if (!info.is_object()) fail(source, where + " is a JSON " + info.type_name() + ", expected an object");
    for (const auto& [field, value] : info.items())
        if (field != "dtype" && field != "shape" && field != "data_offsets")
            fail(source, where + ": unexpected field " + quoted(field));
    for (const char* field : {"dtype", "shape", "data_offsets"})
        if (!info.contains(field)) fail(source, where + ": missing \"" + field + "\"");

    TensorEntry entry;
    entry.name = name;
    const json& dtype = info.at("dtype");
    if (!dtype.is_string()) fail(source, where + ": dtype is not a string");
    entry.dtype = parse_dtype(dtype.get<std::string>(), where, source);

    const json& shape = info.at("shape");
    if (!shape.is_array()) fail(source, where + ": shape is not an array");
    uint64_t numel = 1;
    for (const json& d : shape) {
        if (d.is_number_integer() && !d.is_number_unsigned())
            fail(source, where + ": negative dimension " + std::to_string(d.get<int64_t>()));
        uint64_t dim = json_unsigned(d, where + ": dimension", source);
        if (dim > (uint64_t)std::numeric_limits<int64_t>::max() ||
            __builtin_mul_overflow(numel, dim, &numel))
            fail(source, where + ": shape overflows 64 bits");
        entry.shape.push_back((int64_t)dim);
    }

    const json& offsets = info.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2)
        fail(source, where + ": data_offsets is not a pair [begin, end]");
    entry.begin = json_unsigned(offsets[0], where + ": data_offsets begin", source);
    entry.end = json_unsigned(offsets[1], where + ": data_offsets end", source);
    if (entry.begin > entry.end)
        fail(source, where + ": data_offsets [" + std::to_string(entry.begin) + ", " +
                         std::to_string(entry.end) + "] end before they begin");

    uint64_t bytes;
    if (__builtin_mul_overflow(numel, (uint64_t)file_dtype_size(entry.dtype), &bytes))
        fail(source, where + ": shape overflows 64 bits");
    if (bytes != entry.end - entry.begin)
        fail(source, where + ": shape " + shape_str(entry.shape) + " of " + dtype.get<std::string>() +
                         " needs " + std::to_string(bytes) + " bytes but data_offsets span " +
                         std::to_string(entry.end - entry.begin));
    return entry;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& source) {
    if (!value.is_object()) fail(source, "__metadata__ is not an object");
    std::map<std::string, std::string> metadata;
    for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) fail(source, "__metadata__ value " + quoted(key) + " is not a string");
        metadata[key] = text.get<std::string>();
    }
    return metadata;
}

// The reference reader's rule: sorted by offset, the tensors cover [0, data_size) exactly.
// Anything else is either a truncated file or one whose tensors alias each other's bytes.
void check_tiling(const std::vector<TensorEntry>& entries, uint64_t data_size,
                  const std::string& source) {
    uint64_t covered = 0;
    const TensorEntry* previous = nullptr;
    for (const TensorEntry& e : entries) {
        if (e.end > data_size)
            fail(source, "tensor " + quoted(e.name) + " data_offsets end " + std::to_string(e.end) +
                             " is past the end of the data (" + std::to_string(data_size) + " bytes)");
        if (e.begin < covered)
            fail(source, "tensor " + quoted(e.name) + " overlaps tensor " + quoted(previous->name));
        if (e.begin > covered)
            fail(source, "gap of " + std::to_string(e.begin - covered) + " bytes before tensor " +
                             quoted(e.name) + " (offsets must be contiguous)");
        covered = e.end;
        previous = &e;
    }
    if (covered != data_size)
        fail(source, std::to_string(data_size - covered) +
                         " bytes after the last tensor belong to no tensor");
}

Header parse_header(std::string_view text, uint64_t data_size, const std::string& source) {
    json root = parse_header_json(text, source);
    if (!root.is_object()) fail(source, std::string("header is a JSON ") + root.type_name() + ", not an object");
    Header header;
    for (const auto& [key, value] : root.items()) {
        if (key == "__metadata__")
            header.metadata = parse_metadata(value, source);
        else
            header.entries.push_back(parse_entry(key, value, source));
    }
    std::sort(header.entries.begin(), header.entries.end(), [](const auto& a, const auto& b) {
        return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
    });
    check_tiling(header.entries, data_size, source);
    return header;
}

template <typename T>
T load_le(const uint8_t* p) {
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

// `data` holds exactly the entry's end - begin bytes.
Tensor decode_tensor(const TensorEntry& entry, const uint8_t* data, const std::string& source) {
    const int64_t n = shape_numel(entry.shape);
    const size_t bytes = entry.end - entry.begin;
    switch (entry.dtype) {
        case FileDType::F32: {
            Tensor t = empty(entry.shape);
            if (bytes) std::memcpy(t.raw(), data, bytes);  // an empty tensor's data may be null
            return t;
        }
        case FileDType::F16:
        case FileDType::BF16: {
            Tensor t = empty(entry.shape);
            float* out = t.f32();
            auto convert = entry.dtype == FileDType::F16 ? half_to_float : bfloat16_to_float;
            for (int64_t i = 0; i < n; ++i) out[i] = convert(load_le<uint16_t>(data + 2 * i));
            return t;
        }
        case FileDType::I32: {
            Tensor t = empty(entry.shape, DType::I32);
            if (bytes) std::memcpy(t.raw(), data, bytes);
            return t;
        }
        case FileDType::I64: {
            Tensor t = empty(entry.shape, DType::I32);
            int32_t* out = t.i32();
            for (int64_t i = 0; i < n; ++i) {
                int64_t v = load_le<int64_t>(data + 8 * i);
                if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
                    fail(source, "tensor " + quoted(entry.name) + ": I64 value " + std::to_string(v) +
                                     " at index " + std::to_string(i) + " does not fit int32");
                out[i] = (int32_t)v;
            }
            return t;
        }
    }
    fail(source, "tensor " + quoted(entry.name) + ": unhandled dtype");
}

void read_exact(std::ifstream& in, uint64_t offset, void* dst, uint64_t n, const std::string& path) {
    in.seekg((std::streamoff)offset);
    in.read(static_cast<char*>(dst), (std::streamsize)n);
    if (!in) fail(path, "read of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) + " failed");
}

const char* file_dtype_name(DType dtype) { return dtype == DType::F32 ? "F32" : "I32"; }

}  // namespace

float half_to_float(uint16_t bits) {
    const uint32_t sign = (uint32_t)(bits & 0x8000) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1f;
    const uint32_t mantissa = bits & 0x3ff;
    uint32_t out;
    if (exponent == 0x1f) {
        // Inf, or NaN with its payload: a conversion makes a signaling NaN quiet (IEEE 754
        // 6.2; F16C hardware and torch's Half::float() agree), so the quiet bit is set.
        out = sign | 0x7f800000 | (mantissa << 13) | (mantissa ? 0x400000 : 0);
    } else if (exponent != 0) {
        out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        out = sign;
    } else {
        // Subnormal m·2^-24: shift m's leading 1 into the implicit-bit position (bit 10);
        // each shift lowers the exponent by one from that of 2^-14, the smallest normal.
        const int shift = std::countl_zero((uint16_t)mantissa) - 5;
        out = sign | ((uint32_t)(127 - 14 - shift) << 23) | (((mantissa << shift) & 0x3ff) << 13);
    }
    return std::bit_cast<float>(out);
}

float bfloat16_to_float(uint16_t bits) { return std::bit_cast<float>((uint32_t)bits << 16); }

Safetensors parse_safetensors(const uint8_t* bytes, size_t size, const std::string& source) {
    const uint64_t n = header_length(bytes, size, source);
    const uint8_t* data = bytes + 8 + n;
    Header header = parse_header({(const char*)bytes + 8, n}, size - 8 - n, source);
    Safetensors out{{}, std::move(header.metadata)};
    for (const TensorEntry& e : header.entries)
        out.tensors.push_back({e.name, decode_tensor(e, data + e.begin, source)});
    return out;
}

Safetensors load_safetensors(const std::string& path) {
    std::error_code error;
    const uint64_t file_size = std::filesystem::file_size(path, error);
    if (error) throw std::runtime_error(path + ": cannot read (" + error.message() + ")");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
    uint8_t prefix[8] = {};
    if (file_size >= 8) read_exact(in, 0, prefix, 8, path);
    const uint64_t n = header_length(prefix, file_size, path);
    std::string text(n, '\0');
    read_exact(in, 8, text.data(), n, path);
    Header header = parse_header(text, file_size - 8 - n, path);

    Safetensors out{{}, std::move(header.metadata)};
    std::vector<uint8_t> buffer;
    for (const TensorEntry& e : header.entries) {
        buffer.resize(e.end - e.begin);
        read_exact(in, 8 + n + e.begin, buffer.data(), buffer.size(), path);
        out.tensors.push_back({e.name, decode_tensor(e, buffer.data(), path)});
    }
    return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
    std::set<std::string> names;
    for (const NamedTensor& t : tensors) {
        check(t.tensor.defined(), path + ": tensor \"" + t.name + "\" is undefined");
        check(t.name != "__metadata__", path + ": \"__metadata__\" is reserved, not a tensor key");
        check(names.insert(t.name).second, path + ": duplicate tensor key \"" + t.name + "\"");
    }
    std::vector<const NamedTensor*> order;
    for (const NamedTensor& t : tensors) order.push_back(&t);
    // The reference writer sorts by descending dtype alignment, then by key: F32 before I32.
    std::sort(order.begin(), order.end(), [](const NamedTensor* a, const NamedTensor* b) {
        return std::make_tuple(a->tensor.dtype() != DType::F32, std::string_view(a->name)) <
               std::make_tuple(b->tensor.dtype() != DType::F32, std::string_view(b->name));
    });

    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const NamedTensor* t : order) {
        const uint64_t bytes = (uint64_t)t->tensor.numel() * dtype_size(t->tensor.dtype());
        header[t->name] = {{"dtype", file_dtype_name(t->tensor.dtype())},
                           {"shape", t->tensor.shape()},
                           {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');

    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(path + ": cannot create (" + std::strerror(errno) + ")");
    const uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), (std::streamsize)n);
    for (const NamedTensor* t : order) {
        Tensor host = t->tensor.is_cuda() ? t->tensor.to(Device::CPU) : t->tensor;
        out.write(static_cast<const char*>(host.raw()),
                  (std::streamsize)(host.numel() * dtype_size(host.dtype())));
    }
    out.close();
    if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace qdq
