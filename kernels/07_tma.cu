// Rung 07_tma: Hopper, step 2. BF16 in, FP32 accumulate, sm_90a.
// Builds on: 06_wgmma_wide (m64n256k16, 128 x 256 tiles, a 3-stage ring) and changes one thing, the copies: from
// cp.async to the Tensor Memory Accelerator. The tile and the ring's depth stay (07_four_stages deepens the ring).
// The host describes A and Bt once as tensor maps (shape, strides, a [rows, 64] box, the 128-byte swizzle), and a
// single thread asks the TMA for a whole tile per operand. Completion is tracked by an mbarrier per ring slot: the
// issuing thread announces the tile's bytes with expect_tx, the TMA counts them down as they land, and the phase
// completes at zero. Consumers wait on the slot's phase parity, which flips each time the ring wraps.
// New PTX: cp.async.bulk.tensor.2d (kernels/common/tma.cuh), mbarrier.init / arrive.expect_tx / try_wait.parity
// (kernels/common/mbarrier.cuh).  Requires: sm_90a.
//
// C[M,N] = A[M,K] @ Bt[N,K]^T: A, Bt bf16 row-major (given as tensor maps), C fp32; M % BM, N % BN, K % BK == 0.
#include <cuda_bf16.h>
#include "common/mbarrier.cuh"
#include "common/smem.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

constexpr int WGMMA_N = 256;                 // n of one wgmma: 64 (m64n64k16) ... 256 (m64n256k16)
constexpr int BM = 128;                      // rows of C per block: one 64-row slab per warpgroup
constexpr int BN = 256;                      // columns of C per block
constexpr int BK = 64;                       // k per stage: one 128-byte row of bf16, the swizzle atom width
constexpr int STAGES = 3;                    // tiles in the ring
constexpr int SWIZZLE_MODE = 1;              // descriptor swizzle field: 1 = 128 B, the layout the copies write
constexpr int WARPGROUPS = BM / 64;
constexpr int THREADS = 128 * WARPGROUPS;
constexpr int N_MMAS = BN / WGMMA_N;         // wgmma per warpgroup per k16 step
constexpr int A_TILE = BM * BK;              // bf16 elements of one stage's A tile, [BM, BK]
constexpr int B_TILE = BN * BK;              // and of its B tile, [BN, BK]
constexpr int STAGE_BYTES = (A_TILE + B_TILE) * 2;
constexpr int TX_BYTES = (A_TILE + B_TILE) * 2;     // what expect_tx announces: exactly the bytes the two boxes bring
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // +1024 to align the ring to a swizzle atom

static_assert(BM <= 256 && BN <= 256, "a TMA box has at most 256 rows");
static_assert(SMEM_BYTES <= 227 * 1024, "the ring must fit the 227 KiB a block can opt in to");

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_tma(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB, float* __restrict__ C,
         int M, int N, int K) {
    extern __shared__ unsigned char smem[];
    __shared__ __align__(8) unsigned long long full[STAGES];  // one barrier per ring slot: "tile landed"
    // The swizzle is a function of address bits 4-9, so the ring starts on a 1024-byte boundary.
    const unsigned ring = (smem_addr(smem) + 1023) & ~1023u;  // STAGES x ([BM, BK] A, [BN, BK] B), swizzled

    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const int tiles = K / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbarrier_init(smem_addr(&full[s]), 1);  // one arrival: the issuer's
        fence_mbarrier_init();
    }
    __syncthreads();

    // One thread: announce the bytes, then two TMA copies that count them down on the slot's barrier.
    auto load_tile = [&](int kt) {
        const int s = kt % STAGES;
        const unsigned bar = smem_addr(&full[s]), sA = ring + s * STAGE_BYTES;
        mbarrier_arrive_expect_tx(bar, TX_BYTES);
        tma_load_2d(sA, &tmA, kt * BK, blockIdx.y * BM, bar);
        tma_load_2d(sA + A_TILE * 2, &tmB, kt * BK, blockIdx.x * BN, bar);
    };

    float acc[N_MMAS][WGMMA_N / 2];  // this thread's share of the warpgroup's [64, BN] fp32 tile

    if (threadIdx.x == 0)
        for (int kt = 0; kt < STAGES - 1 && kt < tiles; ++kt) load_tile(kt);

    for (int kt = 0; kt < tiles; ++kt) {
        const int s = kt % STAGES;
        mbarrier_wait_parity(smem_addr(&full[s]), (kt / STAGES) & 1);  // parity flips on every lap of the ring
        __syncthreads();  // every warpgroup has finished tile kt-1, so its slot can be refilled
        if (threadIdx.x == 0 && kt + STAGES - 1 < tiles) load_tile(kt + STAGES - 1);

        const unsigned sA = ring + s * STAGE_BYTES + wg * 64 * 128;  // this warpgroup's 64 rows
        const unsigned sB = ring + s * STAGE_BYTES + A_TILE * 2;
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
