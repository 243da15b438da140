// Experiment clusters: chapter 10's kernel (10_grouped_order: 128 x 256 tiles, four stages, grouped order, TMA-store
// epilogue) in clusters of CLUSTER_M x CLUSTER_N CTAs: 2 x 1 as chapter 10 has it (two CTAs along M share B),
// 1 x 2 (two CTAs along N share A), 2 x 2 (each A tile shared along its row, each B tile along its column) and
// 1 x 1. BF16 in, FP32 accumulate, BF16 out, sm_90a. The shared pieces come from common/persistent.cuh.
// A CTA of rank r sits at row rm = r % CLUSTER_M, column rn = r / CLUSTER_M of its cluster:
//   its tile is row rm, column rn of the cluster tile (CLUSTER_M x BM rows, CLUSTER_N x BN columns);
//   A: the CLUSTER_N CTAs of a row need the same A tile; each fetches A_BOX_ROWS = BM / CLUSTER_N of its rows and
//     multicasts them to the row; B likewise along a column (B_BOX_ROWS = BN / CLUSTER_M rows each);
//   every consumer of the cluster frees a slot in every CTA (the empty barrier counts CONSUMERS x CLUSTER): a CTA's
//     slot is written by its row and its column, so its producer waits for all of them, and for 2 x 2 also for the
//     diagonal CTA, which writes nothing into it (one barrier for the cluster: simple, a little stricter than needed).
//
// C[M,N] = A[M,K] @ Bt[N,K]^T: A, Bt bf16 row-major (tensor maps), C bf16 row-major (tensor map; the pointer keeps
// rung 10's argument order); M % (BM * CLUSTER_M), N % (BN * CLUSTER_N), K % BK == 0. Grid: one CTA per SM that a
// cluster can use.
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

constexpr int CLUSTER_M = 2;                 // CTAs per cluster along M; they share the B tile
constexpr int CLUSTER_N = 1;                 // CTAs per cluster along N; they share the A tile
constexpr int CLUSTER = CLUSTER_M * CLUSTER_N;
constexpr int SCHEDULE = 1;                  // 0: tiles row by row, 1: grouped, GROUP_M tile rows per group
constexpr int GROUP_M = 8;                   // tile rows (of CLUSTER_BM) that a group walks down before moving right
constexpr int CONSUMERS = 2;                 // consumer warpgroups, 64 rows of C each
constexpr int WGMMA_N = 256;                 // n of one wgmma: 64 (m64n64k16) ... 256 (m64n256k16)
constexpr int BM = 64 * CONSUMERS;           // rows of C per CTA
constexpr int BN = 256;                      // columns of C per CTA
constexpr int BK = 64;                       // k per stage: one 128-byte row of bf16, the swizzle atom width
constexpr int CLUSTER_BM = BM * CLUSTER_M;   // rows of C per cluster: what M must divide into
constexpr int UNIT_M = CLUSTER_BM;           // rows and columns of C a cluster's unit of work covers (the launch
constexpr int UNIT_N = BN * CLUSTER_N;       // sizes the grid by them)
constexpr int B_BOX_ROWS = BN / CLUSTER_M;   // rows of Bt each CTA of a column fetches and multicasts
constexpr int A_BOX_ROWS = BM / CLUSTER_N;   // rows of A each CTA of a row fetches and multicasts
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
constexpr int STAGES = (SMEM_BUDGET - 1024 - C_STAGING) / STAGE_BYTES;    // ring depth from what is left (4 here)
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + C_STAGING + 1024;       // + 1024 to align the ring

constexpr int PRODUCER_REGS = 40;            // the tile scheduler's arithmetic needs more than rung 09's 24
constexpr int CONSUMER_REGS = 232;

static_assert(STAGES >= 2 && SMEM_BYTES <= SMEM_BUDGET, "the budget must hold at least two stages");
// setmaxnreg.inc draws from the CTA's pool: what it got at launch, 65536 / THREADS per thread rounded down to 8
// (168 x 384 = 64,512), not the SM's 65,536. A split past the pool would wait for registers forever.
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536 / THREADS / 8 * 8 * THREADS,
              "the split must fit the registers the CTA was given at launch");
static_assert(CLUSTER_M <= 2 && CLUSTER_N <= 2, "the multicast masks below are written for pairs");
static_assert(BN % C_CHUNK == 0 && WGMMA_N == BN, "one wgmma spans the tile's width");
static_assert(C_BUFFERS >= 1 && C_BUFFERS <= 8, "cp.async.bulk.wait_group.read takes an immediate of at most 7");

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
    const unsigned rm = rank % CLUSTER_M, rn = rank / CLUSTER_M;  // this CTA's row and column in the cluster
    const unsigned row_mask = ((1u << CLUSTER) - 1) / ((1u << CLUSTER_M) - 1) << rm;  // CTAs sharing A
    const unsigned col_mask = ((1u << CLUSTER_M) - 1) << (rn * CLUSTER_M);            // CTAs sharing B
    const int tiles_m = M / CLUSTER_BM, tiles_n = N / (BN * CLUSTER_N), tiles = tiles_m * tiles_n, k_tiles = K / BK;
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
            for (int tile = first_tile; tile < tiles; tile += tile_step) {
                int row0, col0;
                tile_origin<SCHEDULE, GROUP_M, CLUSTER_BM, BN * CLUSTER_N>(tile, tiles_m, tiles_n, row0, col0);
                col0 += rn * BN;
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    ring_wait_free(empty, it);
                    const unsigned bar = smem_addr(&full[s]), sA = ring + s * STAGE_BYTES, sB = sA + A_TILE * 2;
                    mbarrier_arrive_expect_tx(bar, TX_BYTES);
                    if constexpr (CLUSTER_N > 1) {
                        tma_load_2d_multicast(sA + rn * A_BOX_ROWS * 128, &tmA, kt * BK,
                                              row0 + rm * BM + rn * A_BOX_ROWS, bar, row_mask);
                    } else {
                        tma_load_2d(sA, &tmA, kt * BK, row0 + rm * BM, bar);
                    }
                    if constexpr (CLUSTER_M > 1) {
                        tma_load_2d_multicast(sB + rm * B_BOX_ROWS * 128, &tmB, kt * BK, col0 + rm * B_BOX_ROWS,
                                              bar, col_mask);
                    } else {
                        tma_load_2d(sB, &tmB, kt * BK, col0, bar);
                    }
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
        for (int tile = first_tile; tile < tiles; tile += tile_step) {
            int row0, col0;
            tile_origin<SCHEDULE, GROUP_M, CLUSTER_BM, BN * CLUSTER_N>(tile, tiles_m, tiles_n, row0, col0);
            col0 += rn * BN;
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                const int s = it % STAGES;
                ring_wait_full(full, it);
                const unsigned sA = ring + s * STAGE_BYTES + c * 64 * 128, sB = ring + s * STAGE_BYTES + A_TILE * 2;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)  // scale-d = 0 on the tile's first k step: no zeroing
                    wgmma_m64nNk16_bf16<WGMMA_N>(acc, wgmma_desc(sA + kk * 32), wgmma_desc(sB + kk * 32),
                                                 kt + kk > 0);
                wgmma_commit_group();
                wgmma_wait_group<1>();  // the previous k tile's group is done reading its slot
                if (kt > 0) release((it - 1) % STAGES);
            }
            wgmma_wait_group<0>();
            release((it - 1) % STAGES);  // the producer may refill it while we write C

            const int row = row0 + rm * BM + c * 64;
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
