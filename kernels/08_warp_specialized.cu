// Rung 08_warp_specialized: Hopper, step 3. BF16 in, FP32 accumulate, sm_90a.
// Builds on: 07_tma. The warpgroups stop taking turns: warpgroup 0 is the PRODUCER and only issues TMA copies
// (one elected thread); the CONSUMERS warpgroups only issue wgmma. They meet at two mbarriers per ring slot:
//  - full[s]:  the producer's expect_tx arrival plus the TMA bytes complete it: "slot s holds a tile";
//  - empty[s]: one arrival per consumer warpgroup completes it: "everyone is done reading slot s".
// The producer runs up to STAGES tiles ahead; consumers keep one wgmma group in flight and release a slot as
// soon as the group that read it has finished. The ring is as deep as the shared-memory budget allows: 7 stages of
// this file's 128 x 128 tile. The main path's step, 08_same_tile, builds it with rung 07's 128 x 256 tile and
// 3-stage ring (WGMMA_N = BN = 256, STAGES = 3), so that against rung 07 only the roles change.
// The producer waits on empty[s] for the phase before the current lap's, which a fresh barrier counts as
// complete, so the ring starts empty with no initial arrivals (rungs 09 and 10 keep this convention).
// New PTX: mbarrier.arrive (kernels/common/mbarrier.cuh).  Requires: sm_90a.
//
// C[M,N] = A[M,K] @ Bt[N,K]^T: A, Bt bf16 row-major (given as tensor maps), C fp32; M % BM, N % BN, K % BK == 0.
#include <cuda_bf16.h>
#include "common/mbarrier.cuh"
#include "common/smem.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

constexpr int CONSUMERS = 2;                 // consumer warpgroups, 64 rows of C each
constexpr int WGMMA_N = 128;                 // n of one wgmma: 64 (m64n64k16) ... 256 (m64n256k16)
constexpr int BM = 64 * CONSUMERS;           // rows of C per block
constexpr int BN = 128;                      // columns of C per block
constexpr int BK = 64;                       // k per stage: one 128-byte row of bf16, the swizzle atom width
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int N_MMAS = BN / WGMMA_N;         // wgmma per warpgroup per k16 step
constexpr int B_BOX_ROWS = WGMMA_N;          // B comes in one box per wgmma slice: a TMA box has at most 256 rows
constexpr int A_TILE = BM * BK;              // bf16 elements of one stage's A tile, [BM, BK]
constexpr int B_TILE = BN * BK;              // and of its B tile, [BN, BK]
constexpr int STAGE_BYTES = (A_TILE + B_TILE) * 2;  // one ring slot
constexpr int TX_BYTES = (A_TILE + B_TILE) * 2;     // what expect_tx announces: exactly the bytes the two boxes bring
constexpr int SMEM_BUDGET = 227 * 1024;             // what one block can opt in to on an H100
constexpr int STAGES = (SMEM_BUDGET - 1024 - 1024) / STAGE_BYTES;  // ring depth from the budget (alignment, barriers)
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // +1024 to align the ring to a swizzle atom

constexpr int TRACE = 0;                     // 1: block (0, 0) stamps clock64 per tile and role into trace_clock
constexpr int TRACE_TILES = 256;             // k tiles the trace has room for

static_assert(STAGES >= 2 && SMEM_BYTES <= SMEM_BUDGET, "the budget must hold at least two stages");

// The instrumented build's record, read by the host after one launch (helpers/timeline.py):
// [role][tile][2] with role 0 = producer (empty slot acquired, copies issued), 1.. = consumers (tile landed,
// its wgmma group finished). Untouched unless TRACE = 1.
__device__ unsigned long long trace_clock[TRACE ? (1 + CONSUMERS) * TRACE_TILES * 2 : 1];

__device__ __forceinline__ void stamp(int role, int kt, int which) {
    if constexpr (TRACE) {
        if (blockIdx.x == 0 && blockIdx.y == 0 && kt < TRACE_TILES)
            trace_clock[(role * TRACE_TILES + kt) * 2 + which] = clock64();
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_warp_specialized(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
                      float* __restrict__ C, int M, int N, int K) {
    extern __shared__ unsigned char smem[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    // The swizzle is a function of address bits 4-9, so the ring starts on a 1024-byte boundary.
    const unsigned ring = (smem_addr(smem) + 1023) & ~1023u;  // STAGES x ([BM, BK] A, [BN, BK] B), swizzled

    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const int tiles = K / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(smem_addr(&full[s]), 1);
            mbarrier_init(smem_addr(&empty[s]), CONSUMERS);  // one release per consumer warpgroup per lap
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    if (wg == 0) {  // producer warpgroup: one thread issues every copy, the other 127 idle
        if (t == 0) {
            for (int kt = 0; kt < tiles; ++kt) {
                const int s = kt % STAGES;
                // Lap L needs the slot's L-th release, which completes phase L-1 of empty[s]. A fresh barrier sits
                // in phase 0, so on lap 0 the parity of phase "-1" (odd) passes at once: the ring starts empty.
                mbarrier_wait_parity(smem_addr(&empty[s]), ((kt / STAGES) & 1) ^ 1);
                stamp(0, kt, 0);
                const unsigned bar = smem_addr(&full[s]), sA = ring + s * STAGE_BYTES;
                mbarrier_arrive_expect_tx(bar, TX_BYTES);
                tma_load_2d(sA, &tmA, kt * BK, blockIdx.y * BM, bar);
#pragma unroll
                for (int j = 0; j < N_MMAS; ++j)
                    tma_load_2d(sA + (A_TILE + j * B_BOX_ROWS * BK) * 2, &tmB, kt * BK,
                                blockIdx.x * BN + j * B_BOX_ROWS, bar);
                stamp(0, kt, 1);
            }
        }
    } else {  // consumer warpgroups: wgmma only
        const int c = wg - 1;
        float acc[N_MMAS][WGMMA_N / 2];
        for (int kt = 0; kt < tiles; ++kt) {
            const int s = kt % STAGES;
            mbarrier_wait_parity(smem_addr(&full[s]), (kt / STAGES) & 1);
            if (t == 0) stamp(1 + c, kt, 0);
            const unsigned sA = ring + s * STAGE_BYTES + c * 64 * 128, sB = ring + s * STAGE_BYTES + A_TILE * 2;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
                for (int j = 0; j < N_MMAS; ++j)
                    wgmma_m64nNk16_bf16<WGMMA_N>(acc[j], wgmma_desc(sA + kk * 32),
                                                 wgmma_desc(sB + j * WGMMA_N * 128 + kk * 32), kt + kk > 0);
            wgmma_commit_group();
            wgmma_wait_group<1>();  // the group of tile kt-1 has finished: release its slot
            if (t == 0 && kt > 0) {
                stamp(1 + c, kt - 1, 1);
                mbarrier_arrive(smem_addr(&empty[(kt - 1) % STAGES]));
            }
        }
        wgmma_wait_group<0>();
        if (t == 0) stamp(1 + c, tiles - 1, 1);

        const int row = blockIdx.y * BM + c * 64 + (t / 32) * 16 + (t % 32) / 4;
#pragma unroll
        for (int j = 0; j < N_MMAS; ++j)
#pragma unroll
            for (int i = 0; i < WGMMA_N / 2; i += 2) {
                const int r = row + 8 * ((i / 2) % 2);
                const int col = blockIdx.x * BN + j * WGMMA_N + 8 * (i / 4) + 2 * (t % 4);
                *reinterpret_cast<float2*>(&C[r * N + col]) = make_float2(acc[j][i], acc[j][i + 1]);
            }
    }
}
