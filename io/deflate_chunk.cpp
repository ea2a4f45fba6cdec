#include "io/deflate_chunk.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include <libdeflate.h>

namespace qdq {

std::vector<uint8_t> shuffle_bytes(const void* data, size_t bytes, size_t element_size) {
    if (element_size == 0 || bytes % element_size != 0)
        throw std::invalid_argument("shuffle_bytes: the size is not a whole number of elements");
    const auto* in = static_cast<const uint8_t*>(data);
    const size_t count = bytes / element_size;
    std::vector<uint8_t> out(bytes);
    // One pass over the input, writing element_size runs side by side.
    for (size_t i = 0; i < count; ++i)
        for (size_t k = 0; k < element_size; ++k) out[k * count + i] = in[i * element_size + k];
    return out;
}

namespace {

// A plane whose bytes carry at least this many bits each (their order-0 entropy) is stored as it
// is: deflate's Huffman codes could save at most 2.5% of it, and its matches find nothing in
// bytes that look random. The low mantissa bytes of float weights are such planes. In BERT-base's
// initial weights planes 0, 1 and 2 carry 7.888, 8.000 and 7.968 bits a byte and the sign and
// exponent plane 2.7; in the shipped BERT-mini's trained weights 7.999, 7.999, 7.949 and 2.1.
// Deflating the first three was three quarters of the work for 0.06% (the shipped weights) to
// 0.24% (initial weights) of the file.
constexpr double kStoredPlaneBits = 7.8;

double bits_per_byte(const uint8_t* bytes, size_t n) {
    // Four tables, so that a run of equal bytes does not wait on its own increments.
    std::vector<size_t> counts(4 * 256, 0);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (size_t k = 0; k < 4; ++k) ++counts[k * 256 + bytes[i + k]];
    for (; i < n; ++i) ++counts[bytes[i]];
    double bits = 0;
    for (size_t b = 0; b < 256; ++b) {
        const size_t c = counts[b] + counts[256 + b] + counts[512 + b] + counts[768 + b];
        if (c == 0) continue;
        const double p = (double)c / (double)n;
        bits -= p * std::log2(p);
    }
    return bits;
}

// Deflate's stored blocks (RFC 1951, 3.2.4): a header byte (BFINAL, BTYPE 00, padding to the
// byte), LEN and its one's complement, then LEN bytes as they are, 65,535 at most.
void append_stored_blocks(std::vector<uint8_t>& out, const uint8_t* bytes, size_t n, bool final) {
    constexpr size_t kMaxBlock = 65535;
    do {
        const size_t len = std::min(n, kMaxBlock);
        const bool last = final && len == n;
        out.push_back(last ? 1 : 0);
        for (const uint16_t field : {(uint16_t)len, (uint16_t)~len}) {
            out.push_back((uint8_t)(field & 0xff));
            out.push_back((uint8_t)(field >> 8));
        }
        out.insert(out.end(), bytes, bytes + len);
        bytes += len;
        n -= len;
    } while (n > 0);
}

}  // namespace

std::vector<uint8_t> zlib_deflate(const std::vector<uint8_t>& shuffled, size_t element_size) {
    if (element_size == 0 || shuffled.size() % element_size != 0)
        throw std::invalid_argument("zlib_deflate: the size is not a whole number of elements");
    const size_t plane = shuffled.size() / element_size;
    size_t stored = 0;  // leading planes kept as they are
    while (stored < element_size && plane > 0 && bits_per_byte(shuffled.data() + stored * plane, plane) >= kStoredPlaneBits)
        ++stored;
    const size_t stored_bytes = stored * plane;
    const size_t rest = shuffled.size() - stored_bytes;

    // Level 1: past it libdeflate saves under 1% more on float weights at half the speed or
    // less; zlib's level 6 saved 1.4% more on the shipped BERT-mini weights in twice the time.
    std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)> compressor(
        libdeflate_alloc_compressor(1), libdeflate_free_compressor);
    if (!compressor) throw std::bad_alloc();
    const size_t bound = libdeflate_deflate_compress_bound(compressor.get(), rest);
    std::vector<uint8_t> out;
    out.reserve(2 + stored_bytes + (stored_bytes / 65535 + 1) * 5 + bound + 4);
    out.push_back(0x78);  // zlib's header: deflate with a 32 KiB window,
    out.push_back(0x01);  // the fastest level
    if (stored_bytes > 0) append_stored_blocks(out, shuffled.data(), stored_bytes, rest == 0);
    if (rest > 0 || stored_bytes == 0) {
        const size_t at = out.size();
        out.resize(at + bound);
        const size_t size = libdeflate_deflate_compress(compressor.get(), shuffled.data() + stored_bytes, rest,
                                                        out.data() + at, bound);
        if (size == 0) throw std::runtime_error("libdeflate: the compressed chunk did not fit its bound");
        out.resize(at + size);
    }
    const uint32_t adler = libdeflate_adler32(1, shuffled.data(), shuffled.size());
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back((uint8_t)(adler >> shift));
    return out;
}

void inflate_and_unshuffle(const std::vector<uint8_t>& compressed, void* out, size_t bytes, size_t element_size) {
    if (element_size == 0 || bytes % element_size != 0)
        throw std::invalid_argument("inflate_and_unshuffle: the size is not a whole number of elements");
    std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> decompressor(
        libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
    if (!decompressor) throw std::bad_alloc();
    std::vector<uint8_t> shuffled(bytes);
    size_t inflated = 0;
    const libdeflate_result result = libdeflate_zlib_decompress(decompressor.get(), compressed.data(), compressed.size(),
                                                                shuffled.data(), bytes, &inflated);
    if (result != LIBDEFLATE_SUCCESS || inflated != bytes)
        throw std::runtime_error("the stored chunk (" + std::to_string(compressed.size()) +
                                 " bytes) does not inflate to the dataset's " + std::to_string(bytes) + " bytes");
    auto* elements = static_cast<uint8_t*>(out);
    const size_t count = bytes / element_size;
    for (size_t i = 0; i < count; ++i)
        for (size_t k = 0; k < element_size; ++k) elements[i * element_size + k] = shuffled[k * count + i];
}

}  // namespace qdq
