// Experiment bf16_stores: was chapter 10's first bf16 step slower than rung 09 because of its bf16x2 stores or
// because of the cluster launch path it brought in; and do paired stores fix it? BF16 in, FP32 accumulate, BF16 out,
// sm_90a.
// Builds on: kernels/10_chip.cu with the direct-store epilogue (EPILOGUE = 0, C bf16), as its first steps
// were built when these experiments ran: the same persistent kernel, its shared pieces from common/persistent.cuh.
// Each lane wrote its accumulators row by row, one bf16x2 (4 bytes) per pair of neighbouring columns, so the 4 lanes
// of a row covered 16 bytes, half a 32-byte sector, per instruction. It changes two things, each a switch:
//   PAIRED = 1: lanes pair up before storing (common/epilogue.cuh, store_accumulators_paired), as chapter 10's file
//     has done since: one 8-byte store fills a sector. 0 is the kernel "as built" then.
//   CLUSTER_LAUNCH = 0: the kernel without __cluster_dims__(CLUSTER, 1, 1), launched outside the cluster path.
// With its defaults it builds 10_four_stages as built then (pairs sharing B, grouped order, four stages); 10_bf16_c
// as built then was one CTA per cluster, tiles row by row, three stages (CLUSTER = 1, SCHEDULE = 0, STAGES = 3).
//
// C[M,N] = A[M,K] @ Bt[N,K]^T: A, Bt bf16 row-major (tensor maps), C bf16 row-major (pointer; the map keeps rung 10's
// argument order); M % (BM * CLUSTER), N % BN, K % BK == 0. Grid: one CTA per SM that a cluster can use.
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

// A kernel has __cluster_dims__ or not: its arguments must be positive, so no constexpr value removes it, and this
// one switch is a macro. build.py defines it ahead of the file (CLUSTER_LAUNCH = 1 is the file as built).
#ifndef CLUSTER_LAUNCH
#define CLUSTER_LAUNCH 1
#endif

constexpr int PAIRED = 0;                    // 0: bf16x2 stores row by row (as built), 1: lanes paired, 8 B a store
constexpr int CLUSTER = 2;                   // CTAs per cluster along M; they share the B tile
constexpr int SCHEDULE = 1;                  // 0: tiles row by row, 1: grouped, GROUP_M tile rows per group
constexpr int GROUP_M = 8;                   // tile rows (of CLUSTER_BM) that a group walks down before moving right
constexpr int EPILOGUE = 0;                  // registers -> global: the one epilogue here (the host's config names it)
constexpr int CONSUMERS = 2;                 // consumer warpgroups, 64 rows of C each
constexpr int WGMMA_N = 256;                 // n of one wgmma: 64 (m64n64k16) ... 256 (m64n256k16)
constexpr int BM = 64 * CONSUMERS;           // rows of C per CTA
constexpr int BN = 256;                      // columns of C per CTA
constexpr int BK = 64;                       // k per stage: one 128-byte row of bf16, the swizzle atom width
constexpr int CLUSTER_BM = BM * CLUSTER;     // rows of C per cluster: what M must divide into
constexpr int B_BOX_ROWS = BN / CLUSTER;     // rows of Bt each CTA of the cluster fetches and multicasts
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int A_TILE = BM * BK;              // bf16 elements of one stage's A tile, [BM, BK]
constexpr int B_TILE = BN * BK;              // and of its B tile, [BN, BK]
constexpr int STAGE_BYTES = (A_TILE + B_TILE) * 2;  // one ring slot
constexpr int TX_BYTES = (A_TILE + B_TILE) * 2;     // bytes landing in THIS CTA per slot: its A, both halves of B
constexpr int C_CHUNK = 64;                  // columns of a box of C's tensor map, which rung 10's launch makes
constexpr int SMEM_BUDGET = 227 * 1024;
constexpr int STAGES = (SMEM_BUDGET - 1024) / STAGE_BYTES;  // ring depth from the budget (4 here)
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;     // + 1024 to align the ring

constexpr int PRODUCER_REGS = 40;            // the tile scheduler's arithmetic needs more than rung 09's 24
constexpr int CONSUMER_REGS = 232;

static_assert(STAGES >= 2 && SMEM_BYTES <= SMEM_BUDGET, "the budget must hold at least two stages");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536 / THREADS / 8 * 8 * THREADS,
              "the split must fit the registers the CTA was given at launch");
static_assert(CLUSTER == 1 || CLUSTER == 2, "the multicast mask below is written for pairs");
static_assert(WGMMA_N == BN, "one wgmma spans the tile's width");
static_assert(EPILOGUE == 0, "this file stores C from registers only");

#if CLUSTER_LAUNCH
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
gemm_chip(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
                   const __grid_constant__ TensorMap tmC, __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    extern __shared__ unsigned char smem[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    // The swizzle is a function of address bits 4-9, so the ring starts on a 1024-byte boundary.
    const unsigned ring = (smem_addr(smem) + 1023) & ~1023u;  // STAGES x ([BM, BK] A, [BN, BK] B), swizzled

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
            for (int tile = first_tile; tile < tiles; tile += tile_step) {
                int row0, col0;
                tile_origin<SCHEDULE, GROUP_M, CLUSTER_BM, BN>(tile, tiles_m, tiles_n, row0, col0);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
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
        for (int tile = first_tile; tile < tiles; tile += tile_step) {
            int row0, col0;
            tile_origin<SCHEDULE, GROUP_M, CLUSTER_BM, BN>(tile, tiles_m, tiles_n, row0, col0);
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

            // Accumulator i of thread t sits at row 16*warp + lane/4 (+8 for i%4 >= 2), column 8*(i/4) + 2*(lane%4)
            // (+1 for odd i): pairs (i, i+1) are neighbours in a row (one bf16x2).
            const int row = row0 + rank * BM + c * 64;
            if constexpr (PAIRED) {
                store_accumulators_paired<WGMMA_N>(C + (size_t)(row + 16 * warp) * N + col0, N, acc, lane);
            } else {  // one bf16x2 a pair: the 4 lanes of a row write 16 bytes, half a sector, per instruction
                for (int i = 0; i < WGMMA_N / 2; i += 2) {
                    const int r = row + 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
                    const int col = col0 + 8 * (i / 4) + 2 * (lane % 4);
                    *reinterpret_cast<__nv_bfloat162*>(&C[(size_t)r * N + col]) =
                        __floats2bfloat162_rn(acc[i], acc[i + 1]);
                }
            }
        }
    }
    // No CTA leaves while its partner may still arrive on its barriers.
    if constexpr (CLUSTER > 1) {
        barrier_cluster_sync();
    }
}
