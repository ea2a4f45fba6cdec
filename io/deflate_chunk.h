// HDF5's shuffle and deflate filters, applied outside the library. HDF5 runs a dataset's filters
// on one thread, chunk after chunk, with zlib: a BERT-base model.h5 took 8.9 s to write that way
// on a 2-core Zen 4. Here each chunk is shuffled and deflated by libdeflate (2.4 times zlib's
// speed at level 1 there, and slightly smaller; byte planes that look random are only copied),
// several chunks at once, and written as it is with H5Dwrite_chunk; reading takes the stored
// chunk (H5Dread_chunk) the other way. The bytes in the file are what the library's own filters
// decode: any HDF5 reader (h5py, h5dump) reads them through its usual pipeline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qdq {

// HDF5's shuffle: byte k of every element, for k = 0 .. element_size - 1, one run after another.
// `bytes` must be a multiple of element_size.
std::vector<uint8_t> shuffle_bytes(const void* data, size_t bytes, size_t element_size);

// The shuffled bytes (element_size planes, one after another) as one zlib stream: what HDF5's
// deflate filter inflates. The leading planes whose bytes look random (the low mantissa bytes of
// float weights) go in stored blocks, the rest through deflate at level 1.
std::vector<uint8_t> zlib_deflate(const std::vector<uint8_t>& shuffled, size_t element_size);

// The way back, for a chunk stored under both filters by any writer: `compressed` inflated to
// exactly `bytes` bytes and unshuffled into `out`. Throws when the stream is corrupt or inflates
// to another size.
void inflate_and_unshuffle(const std::vector<uint8_t>& compressed, void* out, size_t bytes, size_t element_size);

}  // namespace qdq
