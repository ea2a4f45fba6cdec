// The AMX micro-kernel: 32 rows × 32 columns of C in four 16×16 FP32 tiles (tmm0-3), fed by
// two A tiles (tmm4-5: 16 rows × 32 bf16) and two B tiles (tmm6-7: 16 pair rows × 16 columns)
// per 32 of depth; TDPBF16PS multiplies a pair of tiles into an accumulator tile.
//
// Two facts of Linux and of the virtual machines this was written on shape it:
// - Linux hands out the 8 KB tile register state only to a process that asks for it
//   (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA); without that the first tile instruction
//   dies with SIGILL.
// - Some hypervisors hide CPUID leaf 0x1D, which describes the tile palettes; libraries that
//   read it (oneDNN 2.6) then configure palette 0 and die. Palette 1 (8 tiles of 16 rows × 64
//   bytes) is the one every AMX CPU has, so it is configured directly.
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

#include "autograd/gemm_bf16_kernels.h"

#define QDQ_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl")))

namespace qdq::bf16 {

namespace {

constexpr int kRows = 32;
constexpr int kTileRows = 16;
constexpr int kTileBytes = 64;  // bytes of one tile row

struct alignas(64) TileConfig {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
};

QDQ_AMX void configure_tiles() {
    TileConfig config{};
    config.palette_id = 1;
    for (int i = 0; i < 8; ++i) {
        config.bytes_per_row[i] = kTileBytes;
        config.rows[i] = kTileRows;
    }
    // GCC 12's ldtilecfg builtin does not tell the optimizer that it reads `config`: without
    // this barrier the stores above are dropped as dead, every tile gets zero rows, and the
    // first tile instruction dies with SIGILL.
    asm volatile("" : : "r"(&config) : "memory");
    _tile_loadconfig(&config);
}

QDQ_AMX void release_tiles() { _tile_release(); }

QDQ_AMX void run(const Tile& t) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const int64_t a_stride = t.depth * 2;        // bytes from one row of A to the next
    const int64_t b_stride = 2 * kPanelCols * 2;  // bytes from one pair row of B to the next
    const uint16_t* a_top = t.a;
    const uint16_t* a_bottom = t.a + kTileRows * t.depth;
    for (int64_t k = 0; k < t.depth; k += kDepthStep) {
        const uint16_t* b = t.b + (k / 2) * 2 * kPanelCols;
        _tile_loadd(4, a_top + k, a_stride);
        _tile_loadd(5, a_bottom + k, a_stride);
        _tile_loadd(6, b, b_stride);
        _tile_loadd(7, b + kPanelCols, b_stride);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    alignas(64) float out[kRows][kPanelCols];
    const int64_t out_stride = kPanelCols * 4;
    _tile_stored(0, &out[0][0], out_stride);
    _tile_stored(1, &out[0][16], out_stride);
    _tile_stored(2, &out[kTileRows][0], out_stride);
    _tile_stored(3, &out[kTileRows][16], out_stride);
    for (int r = 0; r < t.rows; ++r)
        store_row(t.c + r * t.ldc, _mm512_load_ps(out[r]), _mm512_load_ps(out[r] + 16), t.cols,
                  t.alpha, t.beta);
}

}  // namespace

MicroKernel amx_kernel() { return {kRows, &run, &configure_tiles, &release_tiles}; }

bool amx_permission_granted() {
    static bool granted = false;
    static std::once_flag once;
    std::call_once(once, [] {
        constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
        constexpr long kTileData = 18;                // XFEATURE_XTILEDATA
        granted = syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
    });
    return granted;
}

}  // namespace qdq::bf16
