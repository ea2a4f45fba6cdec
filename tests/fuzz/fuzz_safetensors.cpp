// libFuzzer target for the safetensors reader. Any input must either decode or throw
// std::runtime_error; a crash, a sanitizer report or any other exception is a finding.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        qdq::parse_safetensors(data, size, "fuzz input");
    } catch (const std::runtime_error&) {
    }
    return 0;
}
