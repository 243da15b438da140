// Rung 12_fp8: Hopper FP8. e4m3 A and B, FP32 accumulate, BF16 C, sm_90a.
// Builds on: 10_overlap, as committed there (persistent, grouped order, 2x1 clusters with B multicast,
// stmatrix + TMA-store epilogue, 128 x 256 tiles, launches that overlap: PDL = 1, the last two chunks of C stored
// under the next tile's first k step: OVERLAP = 2). What changes:
//   - A and Bt hold e4m3 (1 byte), so the 128-byte TMA box row and swizzle row carry BK = 128 values of k, and a
//     stage moves the same 48 KiB as rung 10's while holding twice the k: twice the FLOP per byte loaded;
//   - wgmma is m64n256k32 on e4m3 (FP8 is K-major only): four per stage, each 32 bytes deeper, as in rung 10;
//   - the per-tensor scales arrive as one float (scale_a * scale_b) applied to the fp32 accumulators in the
//     epilogue, before the round to bf16.
// The tensor core sums with about 14 bits (chapter 12's probe), as cuBLASLt's fast-accumulation mode does. PROMOTE = P
// (12_fp8_promoted: P = 1, wgmmas 64 wide) adds the partial sums into fp32 registers every P k tiles instead.
// New PTX: wgmma_m64n256k32_e4m3 (12_fp8_promoted: wgmma_m64n64k32_e4m3).  Requires: sm_90a.
//
// C[M,N] = scale * A[M,K] @ Bt[N,K]^T: A, Bt e4m3 row-major (tensor maps, UINT8), C bf16 row-major (tensor map; the
// pointer only keeps rung 10's argument order); any M >= 1, N a multiple of 8 (C's rows: 16 bytes of bf16) and K of
// 16 (A's and Bt's rows: 16 bytes of e4m3), as in rung 10. Grid: one CTA per SM that a cluster can use.
#include <cuda_bf16.h>
#include "common/cluster.cuh"
#include "common/epilogue.cuh"
#include "common/griddepcontrol.cuh"
#include "common/mbarrier.cuh"
#include "common/mma_sync.cuh"
#include "common/setmaxnreg.cuh"
#include "common/smem.cuh"
#include "common/swizzle.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

constexpr int CLUSTER = 2;                   // CTAs per cluster along M; they share the B tile
constexpr int SCHEDULE = 1;                  // 0: tiles row by row, 1: grouped, GROUP_M tile rows per group
constexpr int GROUP_M = 8;                   // tile rows (of CLUSTER_BM) that a group walks down before moving right
constexpr int PROMOTE = 0;                   // P > 0: add partial sums into fp32 every P k tiles (12_fp8_promoted: 1)
constexpr int OVERLAP = 0;                   // the last chunks of C (up to BN / C_CHUNK) stored after the next
                                             // tile's first k step is issued, from bf16 pairs rounded before it
constexpr int PDL = 0;                       // 1: wait for the previous kernel after the prologue, let the next
                                             // one start, prefetch the tensor maps; 2: no wait (wrong: a control)
constexpr int CONSUMERS = 2;                 // consumer warpgroups, 64 rows of C each
constexpr int WGMMA_N = 256;                 // n of one wgmma: BN, or (PROMOTE) a slice of the tile's width
constexpr int BM = 64 * CONSUMERS;           // rows of C per CTA
constexpr int BN = 256;                      // columns of C per CTA
constexpr int BK = 128;                      // k per stage: 128 e4m3 = the 128-byte TMA box width
constexpr int CLUSTER_BM = BM * CLUSTER;     // rows of C per cluster: what M must divide into
constexpr int B_BOX_ROWS = BN / CLUSTER;     // rows of Bt each CTA of the cluster fetches and multicasts
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int A_TILE = BM * BK;
constexpr int B_TILE = BN * BK;
constexpr int STAGE_BYTES = A_TILE + B_TILE;       // one ring slot: one byte per e4m3
constexpr int TX_BYTES = A_TILE + B_TILE;          // bytes landing in THIS CTA per slot: its A, both halves of B
constexpr int C_CHUNK = 64;                         // columns per TMA store: 64 bf16 = one 128-byte swizzled row
constexpr int C_BUFFER_BYTES = 64 * C_CHUNK * 2;    // [64, C_CHUNK] bf16, 128B swizzle: one consumer's chunk
constexpr int C_BUFFERS = 2;                       // staging buffers per consumer: a store drains while the next fills
constexpr int C_STAGING = CONSUMERS * C_BUFFERS * C_BUFFER_BYTES;
constexpr int SMEM_BUDGET = 227 * 1024;
constexpr int STAGES = (SMEM_BUDGET - 1024 - C_STAGING) / STAGE_BYTES;    // ring depth from what is left
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + C_STAGING + 1024;       // + 1024 to align the ring

constexpr int PRODUCER_REGS = 40;            // the tile scheduler's arithmetic needs more than rung 09's 24
constexpr int CONSUMER_REGS = 232;

static_assert(STAGES >= 2 && SMEM_BYTES <= SMEM_BUDGET, "the budget must hold at least two stages");
// setmaxnreg.inc draws from the CTA's pool: what it got at launch, 65536 / THREADS per thread rounded down to 8
// (168 x 384 = 64,512), not the SM's 65,536. A split past the pool would wait for registers forever.
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536 / THREADS / 8 * 8 * THREADS,
              "the split must fit the registers the CTA was given at launch");
static_assert(CLUSTER == 1 || CLUSTER == 2, "the multicast mask below is written for pairs");
static_assert(BN % C_CHUNK == 0 && BN % WGMMA_N == 0, "whole wgmmas and whole chunks across the tile's width");
static_assert(PROMOTE || WGMMA_N == BN, "without promotion one wgmma spans the tile's width");
static_assert(PROMOTE <= 1 || WGMMA_N == BN, "a partial sum kept over several k tiles must span the tile's width");
static_assert(!PROMOTE || BN / 2 + WGMMA_N <= 192, "fp32 totals and two partial buffers within the 232 registers");
static_assert(!PROMOTE || !OVERLAP, "the overlapped epilogue is written for the fast-accumulation k loop");
static_assert(C_BUFFERS >= 1 && C_BUFFERS <= 8, "cp.async.bulk.wait_group.read takes an immediate of at most 7");

// Tile t of the schedule -> the cluster tile's first row and the tile's first column of C.
__device__ __forceinline__ void tile_origin(int t, int tiles_m, int tiles_n, int& row0, int& col0) {
    int tm, tn;
    if constexpr (SCHEDULE == 0) {
        tm = t / tiles_n;
        tn = t % tiles_n;
    } else {  // groups of GROUP_M tile rows; inside a group, walk down a column, then move one column right
        const int per_group = GROUP_M * tiles_n, group = t / per_group, first = group * GROUP_M;
        const int rows = min(tiles_m - first, GROUP_M), i = t - group * per_group;
        tm = first + i % rows;
        tn = i / rows;
    }
    row0 = tm * CLUSTER_BM;
    col0 = tn * BN;
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
gemm_fp8(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
         const __grid_constant__ TensorMap tmC, __nv_bfloat16* __restrict__ C, int M, int N, int K, float scale) {
    extern __shared__ unsigned char smem[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned ring = (smem_addr(smem) + 1023) & ~1023u;
    unsigned char* cstage = smem + (ring - smem_addr(smem)) + STAGES * STAGE_BYTES;  // [CONSUMERS][C_BUFFERS]

    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const unsigned rank = CLUSTER > 1 ? cluster_ctarank() : 0;
    // Ragged edges cost nothing here: a tile past M or N, or a k tile past K, reads zeros (TMA fills what lies
    // outside the tensor and still counts the whole box's bytes), and the TMA store clips C to M x N.
    const int tiles_m = (M + CLUSTER_BM - 1) / CLUSTER_BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int k_tiles = (K + BK - 1) / BK;
    const int first_tile = blockIdx.x / CLUSTER, tile_step = gridDim.x / CLUSTER;
    if constexpr (PDL) {
        // The tensor maps are kernel parameters, which no earlier kernel writes: one thread fetches all three now,
        // before the previous kernel has finished, instead of at the first copy and the first store.
        if (threadIdx.x == 0) {
            prefetch_tensormap(&tmA);
            prefetch_tensormap(&tmB);
            prefetch_tensormap(&tmC);
        }
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(smem_addr(&full[s]), 1);                    // the local producer's expect_tx
            mbarrier_init(smem_addr(&empty[s]), CONSUMERS * CLUSTER);  // every consumer of the cluster frees it
        }
        fence_mbarrier_init();
    }
    if constexpr (CLUSTER > 1) {
        __syncwarp();  // .aligned: every thread of the warp executes the same barrier, so converge warp 0 first
        barrier_cluster_sync();
    } else {
        __syncthreads();
    }
    if constexpr (PDL) {
        // Launched with programmatic stream serialization, this grid may start while the previous kernel of the
        // stream still runs. Everything above touches only this CTA's (and its partner's) shared memory and the
        // parameters, so it overlaps that kernel's tail. Past this line come the producer's TMA loads, which may read
        // what that kernel wrote (one launch's C is the next one's A), and the consumers' stores to C, which may
        // overwrite what it still reads or writes: every thread waits here until it has completed and its memory is
        // flushed and visible. (PDL = 2 skips the wait: a launch that overlaps its predecessor may then read a C not
        // yet written, so a check of launches back to back sees whether any overlapped.)
        if constexpr (PDL == 1) {
            griddepcontrol_wait();
        }
        // Then the next kernel may launch. Safe this early: a CTA of it needs ~227 KB of shared memory, so it starts
        // only on an SM that holds no CTA of this grid (one this launch leaves idle, or one whose CTA has exited),
        // runs its prologue there and stops at its own griddepcontrol.wait until this grid has completed and its
        // memory is flushed. Issued after the wait, not before, so at most two grids are in flight: the previous
        // kernel has completed, and its SMs (with any this grid leaves idle) are the ones the next kernel can take.
        griddepcontrol_launch_dependents();
    }

    if (wg == 0) {  // producer warpgroup: one thread issues every copy
        setmaxnreg_dec<PRODUCER_REGS>();
        // Only thread 0 works here. In a cluster the other three warps leave now instead of sitting at the closing
        // cluster barrier for the whole kernel (a quarter of every stall sample): barrier.cluster waits only for
        // threads that have not exited. Warp 0 stays, as its thread 0 must.
        if constexpr (CLUSTER > 1) {
            if (t >= 32) return;
        }
        if (t == 0) {
            int it = 0;  // k tiles issued so far, over all tiles: slot = it % STAGES, lap = it / STAGES
            for (int tile = first_tile; tile < tiles; tile += tile_step) {
                int row0, col0;
                tile_origin(tile, tiles_m, tiles_n, row0, col0);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    // Lap L needs the slot's (L-1)-th release. A fresh barrier sits in phase 0, so a wait on the
                    // parity of phase "-1" (odd) passes at once: lap 0 never waits.
                    mbarrier_wait_parity(smem_addr(&empty[s]), ((it / STAGES) & 1) ^ 1);
                    const unsigned bar = smem_addr(&full[s]), sA = ring + s * STAGE_BYTES, sB = sA + A_TILE;
                    mbarrier_arrive_expect_tx(bar, TX_BYTES);
                    tma_load_2d(sA, &tmA, kt * BK, row0 + rank * BM, bar);
                    if constexpr (CLUSTER > 1)
                        tma_load_2d_multicast(sB + rank * B_BOX_ROWS * 128, &tmB, kt * BK, col0 + rank * B_BOX_ROWS,
                                              bar, (1 << CLUSTER) - 1);
                    else
                        tma_load_2d(sB, &tmB, kt * BK, col0, bar);
                }
            }
        }
    } else {  // consumer warpgroups
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1, warp = t / 32, lane = t % 32;
        float acc[BN / 2];
        float part[2][WGMMA_N / 2];  // PROMOTE: two slices' partial sums, one being filled while the other is added
        constexpr int LATE_CHUNKS = OVERLAP < BN / C_CHUNK ? OVERLAP : BN / C_CHUNK;  // all of them at most
        constexpr int LATE = LATE_CHUNKS * C_CHUNK / 2;  // accumulators of the chunks stored late
        unsigned packed[OVERLAP ? LATE / 2 : 1];     // ... as bf16 pairs, so that acc is free for the next tile
        int it = 0;
        // Free slot s for its next lap in every CTA of the cluster: the partner multicasts into ours too.
        auto release = [&](int s) {
            if (t != 0) return;
            if constexpr (CLUSTER > 1)
                for (int r = 0; r < CLUSTER; ++r) mbarrier_arrive_cluster(mapa_shared_cluster(smem_addr(&empty[s]), r));
            else
                mbarrier_arrive(smem_addr(&empty[s]));
        };
        // PROMOTE's k tile. The tile's BN columns go through the tensor core in slices of WGMMA_N, one after another:
        // a slice's wgmmas sum its 128 k into a partial buffer (the tensor core keeps about 14 bits, chapter 12's
        // probe), and the slice before it, complete by then, is added into its fp32 totals in acc where its run of
        // PROMOTE k tiles ends. Two buffers take turns, so the adds run while the next slice's wgmmas do: the tensor
        // core does not wait for them. The totals of a 64 x 256 slice take 128 registers a thread and two 64-wide
        // buffers 64 more; two 128-wide buffers would make 256, past a consumer's 232. `even` is the buffer of the
        // k tile's slice 0 (chosen at compile time by each call), `odd` the other.
        constexpr int SLICES = BN / WGMMA_N, RUN = PROMOTE > 0 ? PROMOTE : 1;  // (RUN: no % 0 where unused)
        auto promoted_k_tile = [&](float (&even)[WGMMA_N / 2], float (&odd)[WGMMA_N / 2], int kt) {
            const int s = it % STAGES;
            mbarrier_wait_parity(smem_addr(&full[s]), (it / STAGES) & 1);
            const unsigned sA = ring + s * STAGE_BYTES + c * 64 * 128, sB = ring + s * STAGE_BYTES + A_TILE;
#pragma unroll
            for (int h = 0; h < SLICES; ++h) {
                float(&fill)[WGMMA_N / 2] = h % 2 ? odd : even;
                float(&before)[WGMMA_N / 2] = h % 2 ? even : odd;  // slice h - 1, or k tile kt - 1's last slice
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 32; ++kk)  // a slice starts WGMMA_N rows of Bt (128 B each) further on
                    wgmma_m64nNk32_e4m3<WGMMA_N>(fill, wgmma_desc(sA + kk * 32),
                                                 wgmma_desc(sB + h * WGMMA_N * 128 + kk * 32), kt % RUN + kk > 0);
                wgmma_commit_group();
                // The slice before is done (at h = 0: k tile kt - 1's last, so that slot is read). The tile's first
                // slice has none before it, but waits all the same: ptxas serializes every wgmma of a kernel whose
                // waits it cannot match to the reads of their accumulators on every path.
                wgmma_wait_group<1>();
                if (h == 0 && kt > 0) release((it - 1) % STAGES);
                if (h > 0 || (kt > 0 && (kt - 1) % RUN == RUN - 1)) {  // its run of k tiles has ended: into its totals
                    const int b = (h + SLICES - 1) % SLICES;
#pragma unroll
                    for (int i = 0; i < WGMMA_N / 2; ++i) acc[b * WGMMA_N / 2 + i] += before[i];
                }
            }
            ++it;
        };
        // k step kt of a tile: wait for its slot, issue its wgmmas into acc, commit them as one group.
        auto issue = [&](int kt) {
            const int s = it % STAGES;
            mbarrier_wait_parity(smem_addr(&full[s]), (it / STAGES) & 1);
            const unsigned sA = ring + s * STAGE_BYTES + c * 64 * 128, sB = ring + s * STAGE_BYTES + A_TILE;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 32; ++kk)  // scale-d = 0 on the tile's first k step: no zeroing
                wgmma_m64nNk32_e4m3<BN>(acc, wgmma_desc(sA + kk * 32), wgmma_desc(sB + kk * 32), kt + kk > 0);
            wgmma_commit_group();
        };
        if (OVERLAP && first_tile < tiles) issue(0), ++it;  // OVERLAP: each tile's first k step goes out early
        unsigned done = 0;  // tiles this consumer has finished: where its next chunk's buffer is
        for (int tile = first_tile; tile < tiles; tile += tile_step, ++done) {
            int row0, col0;
            tile_origin(tile, tiles_m, tiles_n, row0, col0);
            if constexpr (PROMOTE) {
#pragma unroll
                for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
                // Slice 0 of k tile kt fills buffer (kt / RUN * SLICES) % 2: always 0 for an even count of slices,
                // else the parity of kt's run, so k tiles go two runs a step and each call names its buffers.
                constexpr int STEP = SLICES % 2 ? 2 * RUN : 1;
                for (int kt = 0; kt < k_tiles; kt += STEP)
#pragma unroll
                    for (int q = 0; q < STEP; ++q)
                        if (kt + q < k_tiles) promoted_k_tile(part[q / RUN], part[1 - q / RUN], kt + q);
                // The last slice is still out: wait for it, free its slot, add it (buffer 1 for an even count of
                // slices, else the parity of the last run)
                wgmma_wait_group<0>();
                release((it - 1) % STAGES);
                const bool odd = SLICES % 2 == 0 || (k_tiles - 1) / RUN % 2;
#pragma unroll
                for (int i = 0; i < WGMMA_N / 2; ++i) acc[BN / 2 - WGMMA_N / 2 + i] += odd ? part[1][i] : part[0][i];
            }
            // PROMOTE ran its own loop above; OVERLAP issued k step 0 already
            for (int kt = OVERLAP > 0; !PROMOTE && kt < k_tiles; ++kt, ++it) {
                issue(kt);
                wgmma_wait_group<1>();  // the previous k tile's group is done reading its slot
                if (kt > 0) release((it - 1) % STAGES);
            }
            if constexpr (!PROMOTE) {  // (PROMOTE's loop waited for its last slice and released its slot)
                wgmma_wait_group<0>();
                release((it - 1) % STAGES);  // the producer may refill it while we write C
            }
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] *= scale;  // dequantize: scale_a * scale_b, in fp32

            // Rung 10's last epilogue, unchanged: stmatrix into two swizzled buffers per consumer, then TMA stores.
            const int row = row0 + rank * BM + c * 64;
#pragma unroll
            for (int q = 0; q < BN / C_CHUNK; ++q) {
                if (OVERLAP && q == BN / C_CHUNK - LATE_CHUNKS) {
                    // Round the late chunks into bf16 pairs, so acc is free, and start the next tile's first k
                    // step: its wgmmas run on the tensor pipe while those chunks go out.
#pragma unroll
                    for (int p = 0; p < LATE / 2; ++p)
                        packed[p] = pack_bf16x2(acc[BN / 2 - LATE + 2 * p], acc[BN / 2 - LATE + 2 * p + 1]);
                    if (tile + tile_step < tiles) issue(0), ++it;
                }
                // Chunks take the buffers in turn across tiles, not from buffer 0 in each: with 3 chunks a tile (128 x
                // 192) a tile's first chunk would reuse its predecessor's last buffer one store early.
                const unsigned b = (done * (BN / C_CHUNK) + q) % C_BUFFERS;
                unsigned char* buf = cstage + (c * C_BUFFERS + b) * C_BUFFER_BYTES;  // [64, C_CHUNK]
                // Reuse rule: the TMA store that read this buffer C_BUFFERS chunks ago must be done reading it.
                if (t == 0) cp_async_bulk_wait_group_read<C_BUFFERS - 1>();
                bar_sync(1 + c, 128);
                if (OVERLAP && q >= BN / C_CHUNK - LATE_CHUNKS)  // the late chunks from the pairs rounded above
                    stmatrix_packed<C_CHUNK>(buf, packed, q * C_CHUNK / 2 - (BN / 2 - LATE), warp, lane);
                else
                    stmatrix_accumulators<C_CHUNK>(buf, acc, q * C_CHUNK / 2, warp, lane);
                fence_proxy_async_shared_cta();  // each writer: make its stores visible to the copy engine
                bar_sync(1 + c, 128);           // ... and all 128 writers are done before the store starts
                if (t == 0) {
                    tma_store_2d(&tmC, col0 + q * C_CHUNK, row, smem_addr(buf));
                    cp_async_bulk_commit_group();
                }
            }
        }
        if constexpr (OVERLAP) {
            wgmma_wait_group<0>();  // for the compiler: no tile is left, so nothing is in flight
        }
        if (t == 0) cp_async_bulk_wait_group<0>();  // shared memory must outlive the stores
    }
    // No CTA leaves while its partner may still arrive on its barriers.
    if constexpr (CLUSTER > 1) {
        __syncwarp();  // the if (t == 0) blocks above left warp 0 of each warpgroup diverged
        barrier_cluster_sync();
    }
}
