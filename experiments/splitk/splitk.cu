// Experiment splitk: chapter 10's kernel (10_grouped_order's file, here on 128 x 128 tiles in clusters of one, rung 10's
// launch at N = 1024) with each tile's K range cut into SPLITS pieces run by different CTAs, and a deterministic
// fix-up. BF16 in, FP32 accumulate, BF16 out, sm_90a. The shared pieces come from common/persistent.cuh.
//   Units of work: unit u < (SPLITS - 1) x tiles computes split 1 + u / tiles of tile u % tiles; the last `tiles`
//     units compute split 0, the tile's owner. Every CTA walks its units in order, so an owner waits only for units
//     that every CTA reaches before its own owners, and those never wait: no deadlock while the whole grid is
//     resident (it is persistent, never more CTAs than fit).
//   Split s covers k tiles [s x k_tiles / SPLITS, (s + 1) x k_tiles / SPLITS): ragged when SPLITS does not divide.
//   A split other than 0 stores its fp32 partial sums in splitk_ws, lane-major (each store instruction writes 512
//     contiguous bytes), then bumps its consumer's flag (release: bar.sync, then thread 0's fence and atomic add).
//   The owner waits for its flag to count SPLITS - 1 (bounded: it traps after MBARRIER_TIMEOUT_NS), resets it for
//     the next launch, adds the partials in split order (the same sum every run), and writes C as chapter 10 does.
// The workspace and flags are __device__ arrays of the module (zero at load), sized for the shapes the runner takes.
//
// C[M,N] = A[M,K] @ Bt[N,K]^T: A, Bt bf16 row-major (tensor maps), C bf16 row-major (tensor map; the pointer keeps
// rung 10's argument order); M % (BM * CLUSTER), N % BN, K % BK == 0. Grid: one CTA per SM that a cluster can use.
#include <cuda_bf16.h>
#include "common/cluster.cuh"
#include "common/epilogue.cuh"
#include "common/mbarrier.cuh"
#include "common/mma_sync.cuh"
#include "common/setmaxnreg.cuh"
#include "common/smem.cuh"
#include "common/swizzle.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"
#include "common/persistent.cuh"

constexpr int CLUSTER = 1;                   // CTAs per cluster along M; they share the B tile
constexpr int SCHEDULE = 1;                  // 0: tiles row by row, 1: grouped, GROUP_M tile rows per group
constexpr int GROUP_M = 8;                   // tile rows (of CLUSTER_BM) that a group walks down before moving right
constexpr int WS_FLOATS = 1 << 22;           // fp32 partials: (SPLITS - 1) x tiles x BM x BN must fit (16 MiB)
constexpr int FLAGS = 1 << 14;               // one flag a consumer's 64 x BN of a tile
// The constants are globals of the module too: after these five, the arrays keep the constant-bank slots they had in
// the builds the record holds, so their SASS is the same.
__device__ float splitk_ws[WS_FLOATS];
__device__ unsigned splitk_flags[FLAGS];
constexpr int SPLITS = 1;                    // pieces each tile's K range is cut into
constexpr int CONSUMERS = 2;                 // consumer warpgroups
constexpr int WGMMA_N = 128;                 // n of one wgmma: 64 (m64n64k16) ... 256 (m64n256k16)
constexpr int BM = 64 * CONSUMERS;           // rows of C per tile
constexpr int BN = 128;                      // columns of C per tile
constexpr int BK = 64;                       // k per stage: one 128-byte row of bf16, the swizzle atom width
constexpr int CLUSTER_BM = BM * CLUSTER;     // rows of C per cluster: what M must divide into
constexpr int UNITS_PER_TILE = SPLITS;      // units of work per cluster tile: the launch sizes the grid by them
constexpr int B_BOX_ROWS = BN / CLUSTER;     // rows of Bt each CTA of the cluster fetches and multicasts
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int A_TILE = BM * BK;              // bf16 elements of one stage's A tile, [BM, BK]
constexpr int B_TILE = BN * BK;              // and of its B tile, [BN, BK]
constexpr int STAGE_BYTES = (A_TILE + B_TILE) * 2;  // one ring slot
constexpr int TX_BYTES = (A_TILE + B_TILE) * 2;     // bytes landing in THIS CTA per slot: its A, both halves of B
constexpr int C_CHUNK = 64;                         // columns per TMA store: 64 bf16 = one 128-byte swizzled row
constexpr int C_BUFFER_BYTES = 64 * C_CHUNK * 2;    // [64, C_CHUNK] bf16, 128B swizzle: one consumer's chunk
constexpr int C_BUFFERS = 2;                       // staging buffers per consumer: a store drains while the next fills
constexpr int C_STAGING = CONSUMERS * C_BUFFERS * C_BUFFER_BYTES;
constexpr int SMEM_BUDGET = 227 * 1024;
constexpr int STAGES = (SMEM_BUDGET - 1024 - C_STAGING) / STAGE_BYTES;    // ring depth from what is left
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + C_STAGING + 1024;       // + 1024 to align the ring

constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;

static_assert(STAGES >= 2 && SMEM_BYTES <= SMEM_BUDGET, "the budget must hold at least two stages");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536 / THREADS / 8 * 8 * THREADS,
              "the split must fit the registers the CTA was given at launch");
static_assert(CLUSTER == 1 || CLUSTER == 2, "the multicast mask below is written for pairs");
static_assert(BN % C_CHUNK == 0 && WGMMA_N == BN, "one wgmma spans the tile's width");


extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
gemm_chip(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
                   const __grid_constant__ TensorMap tmC, __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    extern __shared__ unsigned char smem[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    // The swizzle is a function of address bits 4-9, so the ring starts on a 1024-byte boundary.
    const unsigned ring = (smem_addr(smem) + 1023) & ~1023u;  // STAGES x ([BM, BK] A, [BN, BK] B), swizzled
    unsigned char* cstage = smem + (ring - smem_addr(smem)) + STAGES * STAGE_BYTES;  // [CONSUMERS][C_BUFFERS]

    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const unsigned rank = CLUSTER > 1 ? cluster_ctarank() : 0;
    const int tiles_m = M / CLUSTER_BM, tiles_n = N / BN, tiles = tiles_m * tiles_n, k_tiles = K / BK;
    const int first_tile = blockIdx.x / CLUSTER, tile_step = gridDim.x / CLUSTER;
    ring_init(full, empty, CONSUMERS * CLUSTER);  // every consumer of the cluster frees a slot
    if constexpr (CLUSTER > 1) {
        barrier_cluster_sync();
    } else {
        __syncthreads();
    }

    if (wg == 0) {  // producer warpgroup: one thread issues every copy
        setmaxnreg_dec<PRODUCER_REGS>();
        if (t == 0) {
            int it = 0;  // k tiles issued so far, over all tiles: slot = it % STAGES, lap = it / STAGES
            for (int unit = first_tile; unit < tiles * SPLITS; unit += tile_step) {
                const int split = unit < (SPLITS - 1) * tiles ? 1 + unit / tiles : 0, tile = unit % tiles;
                int row0, col0;
                tile_origin<SCHEDULE, GROUP_M, CLUSTER_BM, BN>(tile, tiles_m, tiles_n, row0, col0);
                for (int kt = split * k_tiles / SPLITS; kt < (split + 1) * k_tiles / SPLITS; ++kt, ++it) {
                    ring_fill<CLUSTER, STAGES, STAGE_BYTES, A_TILE, TX_BYTES, BM, BK, B_BOX_ROWS>(
                        full, empty, ring, it, kt, &tmA, &tmB, row0, col0, rank);
                }
            }
        }
    } else {  // consumer warpgroups
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1, warp = t / 32, lane = t % 32;
        float acc[WGMMA_N / 2];
        int it = 0;
        auto release = [&](int s) {
            if (t != 0) return;
            ring_release<CLUSTER>(empty, s);
        };
        for (int unit = first_tile, j = 0; unit < tiles * SPLITS; unit += tile_step, ++j) {
            const int split = unit < (SPLITS - 1) * tiles ? 1 + unit / tiles : 0, tile = unit % tiles;
            const int k0 = split * k_tiles / SPLITS, k1 = (split + 1) * k_tiles / SPLITS;
            int row0, col0;
            tile_origin<SCHEDULE, GROUP_M, CLUSTER_BM, BN>(tile, tiles_m, tiles_n, row0, col0);
            for (int kt = k0; kt < k1; ++kt, ++it) {
                const int s = it % STAGES;
                ring_wait_full(full, it);
                const unsigned sA = ring + s * STAGE_BYTES + c * 64 * 128,
                               sB = ring + s * STAGE_BYTES + A_TILE * 2;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)  // scale-d = 0 on the split's first k step: no zeroing
                    wgmma_m64nNk16_bf16<WGMMA_N>(acc, wgmma_desc(sA + kk * 32), wgmma_desc(sB + kk * 32),
                                                 kt + kk > k0);
                wgmma_commit_group();
                wgmma_wait_group<1>();  // the previous k tile's group is done reading its slot
                if (kt > k0) release((it - 1) % STAGES);
            }
            wgmma_wait_group<0>();
            release((it - 1) % STAGES);  // the producer may refill it while we write C
            if constexpr (SPLITS > 1) {
                const int slot = (tile * CLUSTER + rank) * CONSUMERS + c;  // this consumer's 64 x BN of C
                unsigned* flag = &splitk_flags[slot];
                if (split > 0) {
                    float* ws = splitk_ws + ((size_t)(split - 1) * tiles * CLUSTER * CONSUMERS + slot)
                                            * 64 * BN;
#pragma unroll
                    for (int i = 0; i < WGMMA_N / 2; ++i) ws[i * 128 + t] = acc[i];
                    bar_sync(1 + c, 128);
                    if (t == 0) {
                        __threadfence();
                        atomicAdd(flag, 1u);
                    }
                    continue;
                }
                if (t == 0) {
                    const unsigned long long start = globaltimer_ns();
                    while (atomicAdd(flag, 0u) < SPLITS - 1)
                        if (globaltimer_ns() - start > MBARRIER_TIMEOUT_NS) __trap();
                    __threadfence();
                    *flag = 0;  // ready for the next launch: every split of this launch has arrived
                }
                bar_sync(1 + c, 128);
                for (int p = 1; p < SPLITS; ++p) {  // in split order: the same sum every run
                    const float* ws = splitk_ws + ((size_t)(p - 1) * tiles * CLUSTER * CONSUMERS + slot)
                                                  * 64 * BN;
#pragma unroll
                    for (int i = 0; i < WGMMA_N / 2; ++i) acc[i] += __ldcg(ws + i * 128 + t);
                }
            }

            const int row = row0 + rank * BM + c * 64;
            tma_store_accumulators<BN, C_CHUNK, C_BUFFERS>(&tmC, cstage, c * C_BUFFERS, acc, row, col0, 1 + c, t, warp,
                                                           lane);
        }
        if (t == 0) cp_async_bulk_wait_group<0>();  // shared memory must outlive the stores
    }
    // No CTA leaves while its partner may still arrive on its barriers.
    if constexpr (CLUSTER > 1) {
        barrier_cluster_sync();
    }
}
