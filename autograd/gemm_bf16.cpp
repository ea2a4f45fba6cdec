// The bf16 GEMM's driver: which kernel runs, how the operands are cut into blocks that stay in
// cache, how they are packed (rounded to bf16 on the way) and how threads share the work. The
// micro-kernels are in gemm_bf16_avx512.cpp and gemm_bf16_amx.cpp; docs/GEMM.md has the
// measurements behind the choices.
#include "autograd/gemm_bf16.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "autograd/cpu_level.h"
#include "autograd/gemm.h"
#include "autograd/gemm_bf16_kernels.h"
#include "autograd/gemm_bf16_pack.h"
#include "autograd/parallel.h"

namespace qdq {

namespace {

using bf16::kDepthStep;
using bf16::kPanelCols;

// Block sizes, measured on Zen 4 (32 KB L1, 1 MB L2): for each row step of A, whose 768-deep
// bf16 rows (18 KB for 12 rows) stay in L1, the kernel walks the panels of a packed B block
// (768 deep × 512 wide, 768 KB) from L2. Deep blocks matter most: C is read and written once
// per depth block, and 256-deep blocks ran 20-30% slower.
constexpr int64_t kDepthBlock = 768;
constexpr int64_t kColBlock = 512;
constexpr int64_t kRowBlock = 192;  // a multiple of both kernels' row steps (12, 32)

struct KernelChoice {
    Bf16Kernel kernel = Bf16Kernel::None;
    std::string why;
};

KernelChoice best_supported(const CpuFeatures& f) {
    if (f.amx_bf16)
        return {Bf16Kernel::Amx, "AMX tiles (TDPBF16PS)"};
    if (f.avx512_bf16 && f.amd)
        return {Bf16Kernel::Avx512Bf16, "AVX512-BF16 (VDPBF16PS, twice the FP32 FMA rate on AMD)"};
    if (f.avx512_bf16)
        return {Bf16Kernel::None, "this CPU has no AMX, and its AVX512-BF16 dot product is "
                                  "slower than FP32 on Intel cores"};
    return {Bf16Kernel::None, std::string("neither AMX nor AVX512-BF16 at CPU level ") + cpu_level_name(cpu_level())};
}

KernelChoice choose_kernel() {
    const CpuFeatures& f = cpu_features();
    const char* asked = std::getenv("QDQ_BF16_KERNEL");
    if (!asked || !*asked || std::strcmp(asked, "auto") == 0) return best_supported(f);
    std::string name = asked;
    for (Bf16Kernel k : {Bf16Kernel::Amx, Bf16Kernel::Avx512Bf16, Bf16Kernel::None}) {
        if (name != bf16_kernel_name(k)) continue;
        if (k == Bf16Kernel::None)
            return {k, "QDQ_BF16_KERNEL=none"};
        if (bf16_kernel_supported(k)) return {k, std::string("QDQ_BF16_KERNEL=") + asked};
        KernelChoice best = best_supported(f);
        best.why = std::string("QDQ_BF16_KERNEL=") + asked + " is not supported here; " + best.why;
        return best;
    }
    KernelChoice best = best_supported(f);
    best.why = std::string("QDQ_BF16_KERNEL=") + asked +
               " is not one of auto, amx, avx512_bf16, none; " + best.why;
    return best;
}

const KernelChoice& process_kernel() {
    static KernelChoice choice;
    static std::once_flag once;
    std::call_once(once, [] { choice = choose_kernel(); });
    return choice;
}

// Aligned scratch that grows as needed, one per thread, reused across calls.
struct Scratch {
    std::unique_ptr<uint16_t[], decltype(&std::free)> data{nullptr, &std::free};
    int64_t capacity = 0;
    uint16_t* get(int64_t count) {
        if (count > capacity) {
            int64_t bytes = (count * 2 + 63) / 64 * 64;
            data.reset(static_cast<uint16_t*>(std::aligned_alloc(64, (size_t)bytes)));
            capacity = bytes / 2;
        }
        return data.get();
    }
};

struct Product {
    bool trans_a, trans_b;
    int64_t M, N, K;
    float alpha;
    const float* A;
    int64_t lda;
    const float* B;
    int64_t ldb;
    float beta;
    float* C;
    int64_t ldc;
};

int64_t round_up(int64_t x, int64_t step) { return (x + step - 1) / step * step; }

// C[m0:m1, n0:n1] of the product on one thread. Depth blocks are the outer loop so that each
// depth block of A is packed once, every row block of it, and reused by every column block:
// the masked-LM decoder's 30,522 columns would otherwise pack the same rows sixty times. Each
// tile of C still takes its depth blocks in ascending order, so the sums are those of a
// column-block-outer loop bit for bit.
void multiply_region(const Product& p, const bf16::MicroKernel& kernel, int64_t m0, int64_t m1,
                     int64_t n0, int64_t n1) {
    thread_local Scratch a_scratch, b_scratch;
    const int64_t row_blocks = (m1 - m0 + kRowBlock - 1) / kRowBlock;
    for (int64_t k0 = 0; k0 < p.K; k0 += kDepthBlock) {
        const int64_t depth = std::min(kDepthBlock, p.K - k0);
        const int64_t packed_depth = round_up(depth, kDepthStep);
        const int64_t block_stride = round_up(kRowBlock, kernel.rows) * packed_depth;
        uint16_t* a_blocks = a_scratch.get(row_blocks * block_stride);
        for (int64_t block = 0; block < row_blocks; ++block) {
            const int64_t i0 = m0 + block * kRowBlock, rows = std::min(kRowBlock, m1 - i0);
            bf16::pack_a(p.A, p.lda, p.trans_a, i0, rows, round_up(rows, kernel.rows), k0, depth, packed_depth,
                         a_blocks + block * block_stride);
        }
        const float beta = k0 == 0 ? p.beta : 1.0f;
        for (int64_t j0 = n0; j0 < n1; j0 += kColBlock) {
            const int64_t cols = std::min(kColBlock, n1 - j0);
            const int64_t panels = (cols + kPanelCols - 1) / kPanelCols;
            uint16_t* b = b_scratch.get(panels * kPanelCols * packed_depth);
            bf16::pack_b(p.B, p.ldb, p.trans_b, k0, depth, j0, cols, packed_depth, b);
            for (int64_t block = 0; block < row_blocks; ++block) {
                const int64_t i0 = m0 + block * kRowBlock, rows = std::min(kRowBlock, m1 - i0);
                const uint16_t* a = a_blocks + block * block_stride;
                for (int64_t r = 0; r < rows; r += kernel.rows) {
                    for (int64_t panel = 0; panel < panels; ++panel) {
                        bf16::Tile tile{a + r * packed_depth,
                                        b + panel * kPanelCols * packed_depth,
                                        packed_depth,
                                        p.C + (i0 + r) * p.ldc + j0 + panel * kPanelCols,
                                        p.ldc,
                                        (int)std::min<int64_t>(kernel.rows, rows - r),
                                        (int)std::min(kPanelCols, cols - panel * kPanelCols),
                                        p.alpha,
                                        beta};
                        kernel.run(tile);
                    }
                }
            }
        }
    }
}

// C = beta * C, for K == 0 (no product to add); beta == 0 writes zeros without reading C.
void scale_c(const Product& p) {
    for (int64_t i = 0; i < p.M; ++i) {
        float* row = p.C + i * p.ldc;
        for (int64_t j = 0; j < p.N; ++j) row[j] = p.beta == 0.0f ? 0.0f : p.beta * row[j];
    }
}

// Threads split the rows of C when there are enough for each to fill its row blocks, else
// the columns; each packs its own blocks (a B block is packed once per thread that uses it).
void multiply(const Product& p, const bf16::MicroKernel& kernel) {
    int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    bool split_rows = p.M >= p.N || p.M >= 2 * kRowBlock * threads;
    int64_t extent = split_rows ? p.M : p.N;
    int64_t step = split_rows ? kernel.rows : kPanelCols;
    int64_t units = (extent + step - 1) / step;
    parallel_for(units, 1, [&](int64_t u0, int64_t u1) {
        int64_t begin = u0 * step, end = std::min(extent, u1 * step);
        kernel.begin_thread();
        if (split_rows)
            multiply_region(p, kernel, begin, end, 0, p.N);
        else
            multiply_region(p, kernel, 0, p.M, begin, end);
        kernel.end_thread();
    });
}

}  // namespace

const char* bf16_kernel_name(Bf16Kernel kernel) {
    switch (kernel) {
        case Bf16Kernel::Amx: return "amx";
        case Bf16Kernel::Avx512Bf16: return "avx512_bf16";
        case Bf16Kernel::None: return "none";
    }
    return "?";
}

bool bf16_kernel_supported(Bf16Kernel kernel) {
    const CpuFeatures& features = cpu_features();
    switch (kernel) {
        // Packing uses AVX512-BF16 conversions, which every AMX CPU also has (cpu_level.h).
        case Bf16Kernel::Amx: return features.amx_bf16;
        case Bf16Kernel::Avx512Bf16: return features.avx512_bf16;
        case Bf16Kernel::None: return true;
    }
    return false;
}

Bf16Kernel bf16_kernel() { return process_kernel().kernel; }

std::string bf16_kernel_description() {
    const KernelChoice& choice = process_kernel();
    if (choice.kernel == Bf16Kernel::None)
        return "no bf16 kernel, matrix products run in FP32 (" + choice.why + ")";
    return std::string("bf16 kernel ") + bf16_kernel_name(choice.kernel) + ": " + choice.why;
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
               int64_t ldc) {
    gemm_bf16_on(bf16_kernel(), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_bf16_on(Bf16Kernel kernel, bool trans_a, bool trans_b, int64_t M, int64_t N,
                  int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float beta, float* C, int64_t ldc) {
    if (kernel == Bf16Kernel::None) {
        gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (!bf16_kernel_supported(kernel))
        throw std::runtime_error(std::string("gemm_bf16: kernel ") + bf16_kernel_name(kernel) +
                                 " is not supported on this CPU");
    if (M == 0 || N == 0) return;
    Product p{trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc};
    if (K == 0) {
        scale_c(p);
        return;
    }
    multiply(p, kernel == Bf16Kernel::Amx ? bf16::amx_kernel() : bf16::avx512_bf16_kernel());
}

float round_to_bf16(float x) {
    uint32_t bits = (uint32_t)bf16::bf16_bits(x) << 16;
    float y;
    std::memcpy(&y, &bits, 4);
    return y;
}

}  // namespace qdq
