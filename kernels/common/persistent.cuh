// The pieces of chapter 10's persistent, warp-specialized kernel that its experiments (experiments/*/*.cu) share,
// each written once: the order of the tile list, the ring's handshake between the TMA producer and the consumer
// warpgroups, and the TMA-store epilogue. Chapter 10's own file (and 12_fp8.cu, which copies it) spells the same
// steps out inline: each of its lessons is the diff of one of them (helpers.listing.show_diff), so they stay there.
#pragma once
#include <cuda_bf16.h>
#include "common/cluster.cuh"
#include "common/epilogue.cuh"
#include "common/mbarrier.cuh"
#include "common/smem.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

// Tile t of the list -> the first row and column of C its unit covers (TILE_ROWS x TILE_COLS: a cluster's rows).
// SCHEDULE 0: row by row. 1: grouped, GROUP_M tile rows per group; inside a group, walk down a column, then move
// one column right, so a wave of tiles is a compact patch of C whose A rows and B columns stay in L2.
template <int SCHEDULE, int GROUP_M, int TILE_ROWS, int TILE_COLS>
__device__ __forceinline__ void tile_origin(int t, int tiles_m, int tiles_n, int& row0, int& col0) {
    int tm, tn;
    if constexpr (SCHEDULE == 0) {
        tm = t / tiles_n;
        tn = t % tiles_n;
    } else {
        const int per_group = GROUP_M * tiles_n, group = t / per_group, first = group * GROUP_M;
        const int rows = min(tiles_m - first, GROUP_M), i = t - group * per_group;
        tm = first + i % rows;
        tn = i / rows;
    }
    row0 = tm * TILE_ROWS;
    col0 = tn * TILE_COLS;
}

// The ring's barriers, made by one thread: full[s] completes on its producer's expect_tx arrival and the bytes it
// announced; empty[s] on `releases` arrivals (every consumer that reads the slot, in every CTA that writes into it).
template <int STAGES>
__device__ __forceinline__ void ring_init(unsigned long long (&full)[STAGES], unsigned long long (&empty)[STAGES],
                                          unsigned releases) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(smem_addr(&full[s]), 1);
            mbarrier_init(smem_addr(&empty[s]), releases);
        }
        fence_mbarrier_init();
    }
}

// The producer's wait before k tile `it` (counted over all tiles: slot it % STAGES, lap it / STAGES): until the
// slot is free. Lap L needs the slot's (L-1)-th release; a fresh barrier sits in phase 0, so a wait on the parity of
// phase "-1" (odd) passes at once: lap 0 never waits. The producer then arms full[slot] with the bytes it copies.
template <int STAGES>
__device__ __forceinline__ void ring_wait_free(unsigned long long (&empty)[STAGES], int it) {
    mbarrier_wait_parity(smem_addr(&empty[it % STAGES]), ((it / STAGES) & 1) ^ 1);
}

// The producer's k tile `it` (counted over all tiles), k tile `kt` of the tile at (row0, col0): wait until its slot
// is free, announce the bytes landing in this CTA, then copy this CTA's BM rows of A and its B_BOX_ROWS-row slice of
// B, multicast to every CTA of the cluster (each fetches its slice, all receive the whole B tile). A stage holds
// A_TILE bf16 elements of A, then B. Issued by a single thread.
template <int CLUSTER, int STAGES, int STAGE_BYTES, int A_TILE, int TX_BYTES, int BM, int BK, int B_BOX_ROWS>
__device__ __forceinline__ void ring_fill(unsigned long long (&full)[STAGES], unsigned long long (&empty)[STAGES],
                                         unsigned ring, int it, int kt, const TensorMap* tmA, const TensorMap* tmB,
                                         int row0, int col0, unsigned rank) {
    const int s = it % STAGES;
    ring_wait_free(empty, it);
    const unsigned bar = smem_addr(&full[s]), sA = ring + s * STAGE_BYTES, sB = sA + A_TILE * 2;
    mbarrier_arrive_expect_tx(bar, TX_BYTES);
    tma_load_2d(sA, tmA, kt * BK, row0 + rank * BM, bar);
    if constexpr (CLUSTER > 1) {
        tma_load_2d_multicast(sB + rank * B_BOX_ROWS * 128, tmB, kt * BK, col0 + rank * B_BOX_ROWS, bar,
                              (1 << CLUSTER) - 1);
    } else {
        tma_load_2d(sB, tmB, kt * BK, col0, bar);
    }
}

// A consumer's wait before k tile `it`: until its slot's bytes have landed (the phase of lap it / STAGES).
template <int STAGES>
__device__ __forceinline__ void ring_wait_full(unsigned long long (&full)[STAGES], int it) {
    mbarrier_wait_parity(smem_addr(&full[it % STAGES]), (it / STAGES) & 1);
}

// A consumer's release of slot s: one arrival in every CTA of the cluster, since each partner multicasts into it.
template <int CLUSTER, int STAGES>
__device__ __forceinline__ void ring_release(unsigned long long (&empty)[STAGES], int s) {
    if constexpr (CLUSTER > 1) {
        for (int r = 0; r < CLUSTER; ++r) mbarrier_arrive_cluster(mapa_shared_cluster(smem_addr(&empty[s]), r));
    } else {
        mbarrier_arrive(smem_addr(&empty[s]));
    }
}

// One consumer warpgroup's 64 x COLS of C (its m64nCOLS accumulators, rounded to bf16) stored by the copy engine
// at (row, col0) of the tensor map: per C_CHUNK columns, stmatrix into one of its C_BUFFERS swizzled [64, C_CHUNK]
// buffers (buffers first .. first + C_BUFFERS - 1 of `cstage`), a fence so the async proxy sees the stores, named
// barrier `bar` for the warpgroup's 128 writers, then one thread issues the TMA store. A buffer is reused only once
// the store that read it C_BUFFERS chunks ago has read it. The caller waits for every store
// (cp_async_bulk_wait_group<0>) before its shared memory goes away.
template <int COLS, int C_CHUNK, int C_BUFFERS, int N>
__device__ __forceinline__ void tma_store_accumulators(const TensorMap* tmC, unsigned char* cstage, int first,
                                                       const float (&acc)[N], int row, int col0, unsigned bar, int t,
                                                       int warp, int lane) {
    static_assert(COLS % C_CHUNK == 0 && C_BUFFERS >= 1 && C_BUFFERS <= 8, "whole chunks; wait_group.read N <= 7");
    // Each tile starts at buffer `first`: with chunks a tile not a multiple of the buffers (3 chunks of a 192-wide tile
    // on 2 buffers), its first chunk would reuse the previous tile's last buffer while that store may still read it.
    static_assert((COLS / C_CHUNK) % C_BUFFERS == 0, "a tile's chunks must turn the buffers whole (10_chip.cu turns "
                                                     "them across tiles instead)");
#pragma unroll
    for (int q = 0; q < COLS / C_CHUNK; ++q) {
        unsigned char* buf = cstage + (first + q % C_BUFFERS) * (64 * C_CHUNK * 2);  // [64, C_CHUNK] bf16
        if (t == 0) cp_async_bulk_wait_group_read<C_BUFFERS - 1>();
        bar_sync(bar, 128);
        stmatrix_accumulators<C_CHUNK>(buf, acc, q * C_CHUNK / 2, warp, lane);
        fence_proxy_async_shared_cta();  // each writer: make its stores visible to the copy engine
        bar_sync(bar, 128);              // ... and all 128 writers are done before the store starts
        if (t == 0) {
            tma_store_2d(tmC, col0 + q * C_CHUNK, row, smem_addr(buf));
            cp_async_bulk_commit_group();
        }
    }
}
