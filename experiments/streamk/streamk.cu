// Experiment streamk: chapter 10's kernel (10_chip's 128 x 256 tiles in 2 x 1 clusters, B multicast, the grouped
// order, the TMA-store epilogue) with a data-parallel + stream-K schedule and a deterministic fix-up.
// BF16 in, FP32 accumulate, BF16 out, sm_90a. The shared pieces come from common/persistent.cuh.
//   The problem: W workers (clusters) take T cluster tiles round robin, so the last wave runs T % W tiles and the
//     rest of the chip idles for one tile's time (at 8192: 1,024 tiles on 66 pairs, 15.5 waves in 16 rounds).
//   The schedule: the first T - S tiles go round robin as before, whole (S chosen below, so T - S is a multiple of
//     W); the last S tiles' k steps, S x k_tiles of them, are cut into W equal ranges, one per worker, each range
//     contiguous in (tile, k) order. Every worker then does the same work, give or take one k step.
//     S = T % W + SK_WAVES x W: the partial wave plus SK_WAVES full ones (more tiles, fewer cuts per tile). None
//     where the last wave is at least SK_FULL percent full, or where a worker's range would be under MIN_STEPS
//     k steps (the fix-up would cost more than the tail).
//   A range's pieces: its first piece may start inside a tile (k0 > 0): that piece's fp32 partial sums go to the
//     worker's slot of streamk_ws, lane-major, then the worker's flag goes up (release). Its last piece may stop
//     inside a tile that starts at k0 = 0: that worker owns the tile. It waits for the flags of the workers that
//     cover the rest of the tile (w + 1, w + 2, ..., each piece their first), adds their partials in k order (the
//     same sum every run), resets the flags for the next launch and stores C. Pieces in between are whole tiles.
//   No deadlock: a worker only waits at its last piece, and what it waits for is another worker's first piece,
//     which waits on nothing, while the whole grid is resident (persistent: never more CTAs than fit at once).
//
// C[M,N] = A[M,K] @ Bt[N,K]^T: A, Bt bf16 row-major (tensor maps), C bf16 row-major (tensor map; the pointer keeps
// rung 10's argument order). Any M >= 1 and N, K multiples of 8, as rung 10: TMA reads zeros past the edges and
// clips its stores. Grid: one CTA per SM that a cluster can use (UNITS_PER_TILE keeps the launch from cutting it).
#include <cuda_bf16.h>
#include "common/cluster.cuh"
#include "common/epilogue.cuh"
#include "common/globaltimer.cuh"
#include "common/mbarrier.cuh"
#include "common/mma_sync.cuh"
#include "common/setmaxnreg.cuh"
#include "common/smem.cuh"
#include "common/swizzle.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"
#include "common/persistent.cuh"

constexpr int STREAM_K = 1;                  // 0: every tile whole, round robin (rung 10's schedule)
constexpr int SK_WAVES = 1;                  // full waves of tiles cut along k beside the partial last one
constexpr int SK_FULL = 90;                  // percent: a last wave at least this full runs whole
constexpr int MIN_STEPS = 8;                 // fewest k steps a worker's stream-K range may hold
constexpr int LATE_FLAG = 0;                 // 1: a partial's flag goes up after the next piece's first k step is
                                             // issued, so the stores drain under its wgmmas instead of stalling
constexpr int FIXUP = 1;                     // 0: no partial crosses workers (C is wrong where tiles are cut): a
                                             // timing build that prices the schedule without its fix-up
constexpr int CLUSTER = 2;                   // CTAs per cluster along M; they share the B tile
constexpr int SCHEDULE = 1;                  // 0: tiles row by row, 1: grouped, GROUP_M tile rows per group
constexpr int GROUP_M = 8;                   // tile rows (of CLUSTER_BM) that a group walks down before moving right
constexpr int CONSUMERS = 2;                 // consumer warpgroups, 64 rows of C each
constexpr int WGMMA_N = 256;                 // n of one wgmma: 64 (m64n64k16) ... 256 (m64n256k16)
constexpr int BM = 64 * CONSUMERS;           // rows of C per CTA
constexpr int BN = 256;                      // columns of C per CTA
constexpr int BK = 64;                       // k per stage: one 128-byte row of bf16, the swizzle atom width
constexpr int CLUSTER_BM = BM * CLUSTER;     // rows of C per cluster
constexpr int UNITS_PER_TILE = 64;           // the launch's cap on workers: stream-K wants every resident cluster
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
constexpr int STAGES = (SMEM_BUDGET - 1024 - C_STAGING) / STAGE_BYTES;    // ring depth from what is left (4 here)
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + C_STAGING + 1024;       // + 1024 to align the ring
constexpr int SLOTS = 320;                   // partial-sum slots: one per consumer of every CTA (132 SMs: 264)

constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;

// One worker's partials: slot (worker x CLUSTER + rank) x CONSUMERS + consumer holds that consumer's 64 x BN fp32
// sums, lane-major (accumulator i of thread t at i x 128 + t: each store instruction writes 512 contiguous bytes).
// A worker writes at most one partial a launch (only its first piece can start inside a tile), so a slot per
// consumer is enough. The flags are zero at module load and back to zero when a launch ends.
__device__ float streamk_ws[STREAM_K ? SLOTS * 64 * BN : 1];
__device__ unsigned streamk_flags[STREAM_K ? SLOTS : 1];

static_assert(STAGES >= 2 && SMEM_BYTES <= SMEM_BUDGET, "the budget must hold at least two stages");
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536 / THREADS / 8 * 8 * THREADS,
              "the split must fit the registers the CTA was given at launch");
static_assert(CLUSTER == 1 || CLUSTER == 2, "the multicast mask below is written for pairs");
static_assert(BN % C_CHUNK == 0 && WGMMA_N == BN, "one wgmma spans the tile's width");

// Which tiles run whole and which are cut along k, the same in every thread of the grid.
struct Plan {
    int tiles, k_tiles, workers;
    int whole;          // tiles [0, whole) run whole, round robin; whole is a multiple of workers
    long long steps;    // k steps of tiles [whole, tiles), cut into `workers` contiguous ranges
};

__device__ __forceinline__ Plan make_plan(int tiles, int k_tiles, int workers) {
    int cut = 0;
    const int tail = tiles % workers;
    if (STREAM_K && tail != 0 && tail * 100 < SK_FULL * workers) {
        cut = tiles < workers ? tiles : tail + min(SK_WAVES, tiles / workers) * workers;
        if ((long long)cut * k_tiles < (long long)MIN_STEPS * workers) cut = 0;
    }
    return {tiles, k_tiles, workers, tiles - cut, (long long)cut * k_tiles};
}

// Worker w's stream-K range starts at this k step (of the cut tiles, in (tile, k) order): equal shares.
__device__ __forceinline__ long long range_start(const Plan& p, int w) { return p.steps * w / p.workers; }

// A piece of work: k steps [k0, k1) of tile `tile`.
struct Piece {
    int tile, k0, k1;
};

// Worker w's pieces in order: its whole tiles, then its stream-K range. `next` counts whole tiles taken; `at` is
// the next k step of the range. Returns false when the worker is done.
__device__ __forceinline__ bool next_piece(const Plan& p, int w, int& next, long long& at, Piece& piece) {
    const int tile = w + next * p.workers;
    if (tile < p.whole) {
        ++next;
        piece = {tile, 0, p.k_tiles};
        return true;
    }
    if (at < 0) at = range_start(p, w);
    const long long end = range_start(p, w + 1);
    if (at >= end) return false;
    const int cut = (int)(at / p.k_tiles), k0 = (int)(at - (long long)cut * p.k_tiles);
    const int k1 = (int)min((long long)p.k_tiles, k0 + (end - at));
    piece = {p.whole + cut, k0, k1};
    at += k1 - k0;
    return true;
}

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
    const int tiles_m = (M + CLUSTER_BM - 1) / CLUSTER_BM, tiles_n = (N + BN - 1) / BN;
    const int worker = blockIdx.x / CLUSTER;
    const Plan plan = make_plan(tiles_m * tiles_n, (K + BK - 1) / BK, gridDim.x / CLUSTER);
    if (STREAM_K && gridDim.x * CONSUMERS > SLOTS) __trap();  // more CTAs than partial slots: a bigger chip
    ring_init(full, empty, CONSUMERS * CLUSTER);  // every consumer of the cluster frees a slot
    if constexpr (CLUSTER > 1) {
        __syncwarp();  // .aligned: every thread of the warp executes the same barrier, so converge warp 0 first
        barrier_cluster_sync();
    } else {
        __syncthreads();
    }

    if (wg == 0) {  // producer warpgroup: one thread issues every copy
        setmaxnreg_dec<PRODUCER_REGS>();
        if constexpr (CLUSTER > 1) {
            if (t >= 32) return;  // the idle warps leave (rung 10's IDLE_EXIT); warp 0 stays for the last barrier
        }
        if (t == 0) {
            int it = 0, next = 0;  // k tiles issued so far, over all pieces: slot = it % STAGES, lap = it / STAGES
            long long at = -1;
            Piece piece;
            while (next_piece(plan, worker, next, at, piece)) {
                int row0, col0;
                tile_origin<SCHEDULE, GROUP_M, CLUSTER_BM, BN>(piece.tile, tiles_m, tiles_n, row0, col0);
                for (int kt = piece.k0; kt < piece.k1; ++kt, ++it) {
                    ring_fill<CLUSTER, STAGES, STAGE_BYTES, A_TILE, TX_BYTES, BM, BK, B_BOX_ROWS>(
                        full, empty, ring, it, kt, &tmA, &tmB, row0, col0, rank);
                }
            }
        }
    } else {  // consumer warpgroups
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1, warp = t / 32, lane = t % 32;
        const int my_slot = (worker * CLUSTER + rank) * CONSUMERS + c;
        float acc[WGMMA_N / 2];
        int it = 0, next = 0;
        long long at = -1;
        Piece piece;
        auto release = [&](int s) {
            if (t == 0) ring_release<CLUSTER>(empty, s);
        };
        // This consumer's partial sums are in streamk_ws: every writer's stores visible to the GPU (each thread's
        // fence waits for its own), all 128 past that point, then one release of the flag its owner polls.
        bool flag_pending = false;
        auto raise_flag = [&]() {
            __threadfence();
            bar_sync(1 + c, 128);
            if (t == 0) atomicExch(&streamk_flags[my_slot], 1u);
            flag_pending = false;
        };
        while (next_piece(plan, worker, next, at, piece)) {
            int row0, col0;
            tile_origin<SCHEDULE, GROUP_M, CLUSTER_BM, BN>(piece.tile, tiles_m, tiles_n, row0, col0);
            for (int kt = piece.k0; kt < piece.k1; ++kt, ++it) {
                const int s = it % STAGES;
                ring_wait_full(full, it);
                const unsigned sA = ring + s * STAGE_BYTES + c * 64 * 128, sB = ring + s * STAGE_BYTES + A_TILE * 2;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)  // scale-d = 0 on the piece's first k step: no zeroing
                    wgmma_m64nNk16_bf16<WGMMA_N>(acc, wgmma_desc(sA + kk * 32), wgmma_desc(sB + kk * 32),
                                                 kt + kk > piece.k0);
                wgmma_commit_group();
                if (LATE_FLAG && flag_pending) raise_flag();  // the stores drained under this k step's wgmmas
                wgmma_wait_group<1>();  // the previous k tile's group is done reading its slot
                if (kt > piece.k0) release((it - 1) % STAGES);
            }
            wgmma_wait_group<0>();
            release((it - 1) % STAGES);  // the producer may refill it while we finish the piece

            if (STREAM_K && piece.k0 > 0) {  // the rest of a tile another worker owns: partials out, flag up
                if constexpr (FIXUP) {
                    float* ws = streamk_ws + (size_t)my_slot * 64 * BN;
#pragma unroll
                    for (int i = 0; i < WGMMA_N / 2; ++i) __stcg(ws + i * 128 + t, acc[i]);
                    if (LATE_FLAG) flag_pending = true;
                    else raise_flag();
                }
                continue;
            }
            if (STREAM_K && FIXUP && piece.k1 < plan.k_tiles) {  // the head of a tile: add the pieces of w + 1, w + 2, ...
                const long long tile_end = (long long)(piece.tile - plan.whole + 1) * plan.k_tiles;
                for (int w = worker + 1; w < plan.workers && range_start(plan, w) < tile_end; ++w) {
                    const int slot = (w * CLUSTER + rank) * CONSUMERS + c;
                    if (t == 0) {
                        const unsigned long long start = globaltimer_ns();
                        while (atomicAdd(&streamk_flags[slot], 0u) == 0)
                            if (globaltimer_ns() - start > MBARRIER_TIMEOUT_NS) __trap();
                        __threadfence();
                        streamk_flags[slot] = 0;  // ready for the next launch: this launch reads the slot once
                    }
                    bar_sync(1 + c, 128);
                    const float* ws = streamk_ws + (size_t)slot * 64 * BN;
#pragma unroll
                    for (int i = 0; i < WGMMA_N / 2; ++i) acc[i] += __ldcg(ws + i * 128 + t);
                }
            }
            const int row = row0 + rank * BM + c * 64;
            tma_store_accumulators<BN, C_CHUNK, C_BUFFERS>(&tmC, cstage, c * C_BUFFERS, acc, row, col0, 1 + c, t, warp,
                                                           lane);
        }
        if (LATE_FLAG && flag_pending) raise_flag();  // the partial was this worker's last piece
        if (t == 0) cp_async_bulk_wait_group<0>();  // shared memory must outlive the stores
    }
    // No CTA leaves while its partner may still arrive on its barriers.
    if constexpr (CLUSTER > 1) {
        __syncwarp();  // the if (t == 0) blocks above left warp 0 of each warpgroup diverged
        barrier_cluster_sync();
    }
}
