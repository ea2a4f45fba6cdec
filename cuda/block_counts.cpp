// What backend.h's counters read of the block cache (cuda/block_cache.h), one text for the GPU
// (cuda/device_memory.cu) and the emulated device (cuda/emulated/device_memory.cpp).
#include "cuda/backend.h"
#include "cuda/block_cache.h"

namespace qdq::cuda {

int64_t blocks_made() { return locked_block_cache().cache.made; }

int64_t peak_bytes_in_use() { return (int64_t)locked_block_cache().cache.peak_bytes; }

void reset_peak_bytes() { locked_block_cache().cache.reset_peak(); }

}  // namespace qdq::cuda
