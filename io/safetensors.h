// Hugging Face safetensors files (model.safetensors), read and written without the Python or
// Rust package. Layout, from the format's README and reference reader:
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   a JSON object, space-padded: {"__metadata__": {string: string},
//             "<key>": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]}, ...}
//   the rest  the data: little-endian, row-major; offsets count from its first byte and the
//             tensors tile it exactly, without gaps, overlaps or trailing bytes.
// A file that breaks any of this throws std::runtime_error naming the file and the problem;
// nothing in a file can make the reader index out of bounds or allocate more than the file holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "autograd/named_tensors.h"

namespace qdq {

struct Safetensors {
    NamedTensors tensors;                         // in the order their data lies in the file
    std::map<std::string, std::string> metadata;  // "__metadata__", e.g. {"format": "pt"}
};

// F32, F16 and BF16 become float32 exactly; I32 and I64 become int32, and an I64 value outside
// int32's range is an error. Other dtypes (F64, U8, BOOL, ...) are errors.
Safetensors load_safetensors(const std::string& path);

// The same for a whole file already in memory; `source` names it in error messages.
Safetensors parse_safetensors(const uint8_t* bytes, size_t size, const std::string& source);

// float32 tensors become F32 and int32 tensors I32, laid out as the reference writer lays them
// out: data sorted by dtype (F32 first), then by key; header padded with spaces to a multiple
// of 8 so every tensor starts 8-byte aligned. Keys must be unique and not "__metadata__".
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Bit patterns to float32, exposed for the conversion tests.
float half_to_float(uint16_t bits);      // IEEE binary16
float bfloat16_to_float(uint16_t bits);  // bfloat16: the high half of a float32

}  // namespace qdq
