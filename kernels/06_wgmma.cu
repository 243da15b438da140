// Rung 06_wgmma: Hopper, step 1. BF16 in, FP32 accumulate, sm_90a.
// Builds on: 05_cp_async (same cp.async ring). The math changes from mma.sync to wgmma.mma_async:
//  - a warpgroup (4 warps, 128 threads) issues one instruction for a 64 x WGMMA_N x 16 product;
//  - A and B are read straight from shared memory through 64-bit descriptors: no ldmatrix, no fragments;
//  - shared tiles use the hardware's 128-byte swizzle (16-byte chunk ^ row % 8 inside 8-row, 1024-byte atoms),
//    which for 64-wide bf16 rows is chapter 04's swizzle<64>, so the copies write what the descriptors describe;
//  - the accumulators live in registers across all of K; scale-d = 0 on the very first k step overwrites them,
//    so they are never zeroed;
//  - wgmma is asynchronous: fence, issue, commit_group, then wait_group before the registers are read.
// From this rung on B is stored K-major, as Bt[N, K]: wgmma reads both operands K-major without transposes,
// and cuBLAS is timed on the same layout.
// New PTX: wgmma.fence / mma_async / commit_group / wait_group, fence.proxy.async (kernels/common/wgmma.cuh).
// Requires: sm_90a.
//
// C[M,N] = A[M,K] @ Bt[N,K]^T: A, Bt bf16 row-major, C fp32 row-major; M % BM, N % BN, K % BK == 0.
#include <cuda_bf16.h>
#include "common/cp_async.cuh"
#include "common/smem.cuh"
#include "common/swizzle.cuh"
#include "common/wgmma.cuh"

constexpr int WGMMA_N = 64;                 // n of one wgmma: 64 (m64n64k16) ... 256 (m64n256k16)
constexpr int BM = 128;                      // rows of C per block: one 64-row slab per warpgroup
constexpr int BN = 128;                      // columns of C per block
constexpr int BK = 64;                       // k per stage: one 128-byte row of bf16, the swizzle atom width
constexpr int STAGES = 4;                    // tiles in the ring
constexpr int SWIZZLE_MODE = 1;              // descriptor swizzle field: 1 = 128 B, the layout the copies write
constexpr int WARPGROUPS = BM / 64;
constexpr int THREADS = 128 * WARPGROUPS;
constexpr int N_MMAS = BN / WGMMA_N;         // wgmma per warpgroup per k16 step
constexpr int A_TILE = BM * BK;              // bf16 elements of one stage's A tile, [BM, BK]
constexpr int B_TILE = BN * BK;              // and of its B tile, [BN, BK]
constexpr int STAGE_BYTES = (A_TILE + B_TILE) * 2;
constexpr int A_LOADS = A_TILE / 8 / THREADS;      // 16-byte copies per thread per stage
constexpr int B_LOADS = B_TILE / 8 / THREADS;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // +1024 to align the ring to a swizzle atom

static_assert(BN % WGMMA_N == 0 && A_LOADS >= 1 && B_LOADS >= 1, "tile shapes must split evenly");
static_assert(BK * 2 == 128, "one tile row is one 128-byte line: swizzle<BK> is then the hardware's 128B swizzle");
static_assert(SMEM_BYTES <= 227 * 1024, "the ring must fit the 227 KiB a block can opt in to");

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_wgmma(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ Bt, float* __restrict__ C,
           int M, int N, int K) {
    extern __shared__ unsigned char smem[];
    // The swizzle is a function of address bits 4-9, so the ring starts on a 1024-byte boundary.
    const unsigned ring = (smem_addr(smem) + 1023) & ~1023u;  // STAGES x ([BM, BK] A, [BN, BK] B), swizzled

    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const __nv_bfloat16* gA = A + blockIdx.y * BM * K;
    const __nv_bfloat16* gB = Bt + blockIdx.x * BN * K;
    const int tiles = K / BK;

    auto load_tile = [&](int kt) {
        const unsigned sA = ring + (kt % STAGES) * STAGE_BYTES, sB = sA + A_TILE * 2;
        // Unsigned indices: / 8 and % 8 become a shift and a mask, cheap enough to recompute in the loop (with int,
        // ptxas hoists every swizzled offset into registers: 194 instead of 165 for the wide tile).
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const unsigned f = threadIdx.x + i * THREADS, r = f / 8, c = f % 8;
            cp_async_16(sA + 2 * swizzle<BK>(r, c * 8), &gA[r * K + kt * BK + c * 8]);  // 2 bytes per bf16
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const unsigned f = threadIdx.x + i * THREADS, r = f / 8, c = f % 8;
            cp_async_16(sB + 2 * swizzle<BK>(r, c * 8), &gB[r * K + kt * BK + c * 8]);
        }
    };

    float acc[N_MMAS][WGMMA_N / 2];  // this thread's share of the warpgroup's [64, BN] fp32 tile

#pragma unroll
    for (int kt = 0; kt < STAGES - 1; ++kt) {
        if (kt < tiles) load_tile(kt);
        cp_async_commit_group();
    }

    for (int kt = 0; kt < tiles; ++kt) {
        cp_async_wait_group<STAGES - 2>();
        fence_proxy_async_shared_cta();  // the copies were generic-proxy writes; wgmma reads via the async proxy
        __syncthreads();
        if (kt + STAGES - 1 < tiles) load_tile(kt + STAGES - 1);  // tile kt-1's slot: its wgmmas have finished
        cp_async_commit_group();

        const unsigned sA = ring + (kt % STAGES) * STAGE_BYTES + wg * 64 * 128;  // this warpgroup's 64 rows
        const unsigned sB = ring + (kt % STAGES) * STAGE_BYTES + A_TILE * 2;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)          // 16 k = 32 bytes further along each swizzled row
#pragma unroll
            for (int j = 0; j < N_MMAS; ++j)
                wgmma_m64nNk16_bf16<WGMMA_N>(acc[j], wgmma_desc(sA + kk * 32, SWIZZLE_MODE),
                                             wgmma_desc(sB + j * WGMMA_N * 128 + kk * 32, SWIZZLE_MODE), kt + kk > 0);
        wgmma_commit_group();
        wgmma_wait_group<0>();  // simplest correct choice: done before the slot can be refilled (rung 08 overlaps)
    }
    cp_async_wait_group<0>();

    // Accumulator layout of m64nNk16: warp w of the warpgroup owns rows 16w..16w+15; register i of 8-column
    // block i/4 holds row (lane/4) + 8*((i/2)%2), column 2*(lane%4) + i%2 -- the m16n8 layout, N/8 times.
    const int row = blockIdx.y * BM + wg * 64 + (t / 32) * 16 + (t % 32) / 4;
#pragma unroll
    for (int j = 0; j < N_MMAS; ++j)
#pragma unroll
        for (int i = 0; i < WGMMA_N / 2; i += 2) {
            const int r = row + 8 * ((i / 2) % 2);
            const int col = blockIdx.x * BN + j * WGMMA_N + 8 * (i / 4) + 2 * (t % 4);
            *reinterpret_cast<float2*>(&C[r * N + col]) = make_float2(acc[j][i], acc[j][i + 1]);
        }
}
