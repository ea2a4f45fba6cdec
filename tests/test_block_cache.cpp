// The device allocator's reuse (cuda/block_cache.h): size classes that waste at most a quarter
// (or less than kMinBlock), keep cudaMalloc's alignment, and a freed block found again by any size of its class;
// a device chosen once memory is held refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/block_cache.h"

using namespace qdq::cuda;

TEST(BlockCache, SizeClassesWasteAtMostAQuarterAndKeepTheAlignment) {
    EXPECT_EQ(block_size_class(0), kMinBlock);
    EXPECT_EQ(block_size_class(1), kMinBlock);
    EXPECT_EQ(block_size_class(256), 256u);
    EXPECT_EQ(block_size_class(257), 512u);
    EXPECT_EQ(block_size_class(4096), 4096u);
    EXPECT_EQ(block_size_class(4097), 5120u);  // 4 KiB + a quarter of its octave
    EXPECT_EQ(block_size_class(7169), 8192u);
    for (size_t bytes = 1; bytes < (size_t(1) << 26); bytes = bytes * 3 / 2 + 7) {
        const size_t size = block_size_class(bytes);
        ASSERT_GE(size, bytes);
        ASSERT_EQ(size % kMinBlock, 0u) << bytes;
        ASSERT_LT(size - bytes, std::max(bytes / 4 + 1, kMinBlock)) << bytes;
        ASSERT_EQ(block_size_class(size), size) << "a class is its own class";
    }
}

TEST(BlockCache, AFreedBlockIsTakenAgainByItsClassOnly) {
    BlockCache cache;
    int storage[2];
    void* a = &storage[0];
    void* b = &storage[1];
    const size_t size = block_size_class(5000);
    EXPECT_EQ(cache.take(size), nullptr) << "an empty cache makes the caller allocate";
    cache.hand_out(a, size);
    cache.hand_out(b, block_size_class(100));
    EXPECT_TRUE(cache.give_back(a));
    EXPECT_FALSE(cache.give_back(a)) << "given back twice";
    EXPECT_EQ(cache.take(block_size_class(100)), nullptr);
    EXPECT_EQ(cache.take(block_size_class(4900)), a) << "4,900 and 5,000 bytes share a class";
    EXPECT_EQ(cache.take(size), nullptr);
    EXPECT_TRUE(cache.give_back(b));
    int other = 0;
    EXPECT_FALSE(cache.give_back(&other)) << "not handed out by this cache";
    EXPECT_EQ(cache.drain(), std::vector<void*>{b});
    EXPECT_EQ(cache.take(block_size_class(100)), nullptr) << "drained";
}

// A process's device is chosen before its first allocation: once the cache holds a block, made
// or kept, another device is refused with the bytes and both devices named; the same one is not.
TEST(BlockCache, AnotherDeviceIsRefusedOnceTheCacheHoldsABlock) {
    BlockCache cache;
    EXPECT_NO_THROW(check_device_switch(cache, 0, 1));
    static char block[512];
    cache.hand_out(block, 512);
    EXPECT_EQ(cache.bytes_held(), 512u);
    EXPECT_NO_THROW(check_device_switch(cache, 0, 0));
    try {
        check_device_switch(cache, 0, 1);
        ADD_FAILURE() << "device 1 selected while device 0 holds a block";
    } catch (const std::logic_error& e) {
        const std::string what = e.what();
        for (const char* part : {"selecting device 1", "device 0 already holds 512 bytes", "before anything is allocated"})
            EXPECT_NE(what.find(part), std::string::npos) << part << " in: " << what;
    }
    ASSERT_TRUE(cache.give_back(block));
    EXPECT_EQ(cache.bytes_held(), 512u) << "a kept block is still device 0's memory";
    EXPECT_THROW(check_device_switch(cache, 0, 1), std::logic_error);
    cache.drain();
    EXPECT_EQ(cache.bytes_held(), 0u);
    EXPECT_NO_THROW(check_device_switch(cache, 0, 1));
}

// The bytes handed out, and their peak since the last reset: what a step's peak device memory
// is read from (bench_train, beside torch.cuda.max_memory_allocated). Counted by size class.
TEST(BlockCache, CountsTheBytesHandedOutAndTheirPeak) {
    BlockCache cache;
    static char a[1024], b[1024];
    cache.hand_out(a, block_size_class(700));  // 768
    cache.hand_out(b, 256);
    EXPECT_EQ(cache.in_use_bytes, 1024u);
    ASSERT_TRUE(cache.give_back(a));
    EXPECT_EQ(cache.in_use_bytes, 256u);
    EXPECT_EQ(cache.peak_bytes, 1024u);
    cache.reset_peak();
    EXPECT_EQ(cache.peak_bytes, 256u);
    cache.hand_out(cache.take(768), 768);
    EXPECT_EQ(cache.peak_bytes, 1024u);
    EXPECT_EQ(cache.bytes_held(), 1024u);
}
