// Rung 05_cp_async: tensor cores, step 5. BF16 in, FP32 accumulate.
// Builds on: 04_swizzle. The global -> shared copies become cp.async: 16 bytes per instruction, straight into
// the swizzled tile without passing through registers, and asynchronous. Shared memory holds a ring of STAGES
// tiles: while the warps run ldmatrix + mma.sync on stage s, the copies for the next STAGES-1 tiles are already
// in flight. cp.async.commit_group closes one tile's copies into a group, cp.async.wait_group<STAGES-2> waits
// until the oldest one has landed. STAGES = 2 is the classic double buffer (registry rung 05_double_buffer).
// STAGES = 1 is no ring at all (registry rung 05_one_stage): each tile is copied with cp.async and waited for
// before its math, in rung 04's load, barrier, compute, barrier order. It separates what the instruction buys
// (no registers in the copy) from what the overlap buys.
// New PTX: cp.async.cg.shared.global, commit_group, wait_group (kernels/common/cp_async.cuh).  Requires: sm_80+.
//
// C[M,N] = A[M,K] @ B[K,N]: A, B bf16 row-major, C fp32 row-major; M a multiple of BM, N of BN, K of BK.
#include <cuda_bf16.h>
#include "common/cp_async.cuh"
#include "common/mma_sync.cuh"
#include "common/swizzle.cuh"

constexpr int BM = 128;                      // rows of C per block
constexpr int BN = 128;                      // columns of C per block
constexpr int BK = 32;                       // depth of one pipeline stage
constexpr int WM = 64;                       // rows of C per warp
constexpr int WN = 64;                       // columns of C per warp (64 x 64: see chapter 05 for why)
constexpr int STAGES = 4;                    // tiles in the shared-memory ring (1: no overlap, see the header)
constexpr int MIN_BLOCKS = 2;                // blocks per SM the register budget must allow (__launch_bounds__)
constexpr int MMA_M = WM / 16;
constexpr int MMA_N = WN / 8;
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = 32 * (BM / WM) * WARPS_N;
constexpr int A_LOADS = BM * BK / 8 / THREADS;     // cp.async of 16 bytes per thread per stage, for A
constexpr int B_LOADS = BK * BN / 8 / THREADS;     // and for B
constexpr int STAGE_ELEMS = BM * BK + BK * BN;     // bf16 elements of one stage (A tile then B tile)
constexpr int SMEM_BYTES = STAGES * STAGE_ELEMS * 2;  // dynamic shared memory the launch asks for

constexpr int WAIT = STAGES > 1 ? STAGES - 2 : 0;  // groups that may stay in flight when tile t is needed
static_assert(STAGES >= 1, "at least one tile of shared memory");
static_assert(SMEM_BYTES <= 227 * 1024, "the ring must fit the 227 KiB a block can opt in to");
static_assert(A_LOADS >= 1 && B_LOADS >= 1 && MMA_N % 2 == 0, "tile shapes must split evenly");

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_cp_async(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
              int M, int N, int K) {
    extern __shared__ __align__(128) __nv_bfloat16 smem[];  // STAGES x ([BM, BK] A, [BK, BN] B), swizzled

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const __nv_bfloat16* gA = A + blockIdx.y * BM * K;
    const __nv_bfloat16* gB = B + blockIdx.x * BN;
    const int tiles = K / BK;

    // Issue (not wait for) the copies of k-tile t into ring slot t % STAGES.
    auto load_tile = [&](int t) {
        __nv_bfloat16* sA = smem + (t % STAGES) * STAGE_ELEMS;
        __nv_bfloat16* sB = sA + BM * BK;
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS, r = f / (BK / 8), c = f % (BK / 8) * 8;
            cp_async_16(smem_addr(&sA[swizzle<BK>(r, c)]), &gA[r * K + t * BK + c]);
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS, r = f / (BN / 8), c = f % (BN / 8) * 8;
            cp_async_16(smem_addr(&sB[swizzle<BN>(r, c)]), &gB[(t * BK + r) * N + c]);
        }
    };

    float acc[MMA_M][MMA_N][4] = {};

    // Prologue: fill STAGES-1 slots. Every thread commits one group per tile, even an empty one past the
    // end of K, so "wait until at most STAGES-2 groups are pending" always means "tile t has landed".
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        if (t < tiles) load_tile(t);
        cp_async_commit_group();
    }

    for (int t = 0; t < tiles; ++t) {
        if (STAGES == 1) {                  // no ring: tile t is copied only now, into the one slot
            load_tile(t);
            cp_async_commit_group();
        }
        cp_async_wait_group<WAIT>();        // this thread's copies of tile t are in shared memory
        __syncthreads();                    // ...and everyone's; also, everyone is done with tile t-1's slot
        if (STAGES > 1) {
            if (t + STAGES - 1 < tiles) load_tile(t + STAGES - 1);  // refill the slot tile t-1 used
            cp_async_commit_group();
        }

        const __nv_bfloat16* sA = smem + (t % STAGES) * STAGE_ELEMS;
        const __nv_bfloat16* sB = sA + BM * BK;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[MMA_M][4], b[MMA_N][2];
#pragma unroll
            for (int i = 0; i < MMA_M; ++i)
                ldmatrix_x4(a[i], smem_addr(&sA[swizzle<BK>(wm * WM + i * 16 + lane % 16, kk + lane / 16 * 8)]));
#pragma unroll
            for (int j = 0; j < MMA_N; j += 2) {
                unsigned r[4];
                ldmatrix_x4_trans(r, smem_addr(&sB[swizzle<BN>(kk + lane % 16, wn * WN + j * 8 + lane / 16 * 8)]));
                b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MMA_M; ++i)
#pragma unroll
                for (int j = 0; j < MMA_N; ++j) mma_m16n8k16_bf16(acc[i][j], a[i], b[j]);
        }
        if (STAGES == 1) __syncthreads();  // the next copy overwrites the slot slower warps may still read
    }
    cp_async_wait_group<0>();  // nothing may be left in flight when the block exits

    float* gC = C + (blockIdx.y * BM + wm * WM) * N + blockIdx.x * BN + wn * WN;
#pragma unroll
    for (int i = 0; i < MMA_M; ++i)
#pragma unroll
        for (int j = 0; j < MMA_N; ++j) {
            float* p = gC + (i * 16 + lane / 4) * N + j * 8 + lane % 4 * 2;
            *reinterpret_cast<float2*>(p) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(p + 8 * N) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
