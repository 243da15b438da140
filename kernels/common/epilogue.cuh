// A wgmma epilogue's forms: accumulators straight to global memory in whole 32-byte sectors, as fp32 or rounded to
// bf16 (chapter 10's EPILOGUE = 0, C_BF16 = 0 or 1), or rounded to bf16 and written with stmatrix into the layout a
// TMA store reads (its EPILOGUE = 2 step, shared with chapter 12).
#pragma once
#include <cuda_bf16.h>
#include "common/mma_sync.cuh"
#include "common/smem.cuh"
#include "common/swizzle.cuh"

// Two floats -> one register of two bf16 (round to nearest even), the lower column in the low half.
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&v);
}

// COLS columns of one warpgroup's m64nN accumulators, starting at accumulator `first` (a multiple of COLS / 2),
// into `buf`: [64, COLS] bf16, 128-byte swizzle (16-byte chunk j of row r at j ^ (r % 8), so the 8 rows of one
// store land in 8 different bank groups). Accumulator i of a lane sits at row 16 * warp + lane / 4 (+8 for
// i % 4 >= 2), column 8 * (i / 4) + 2 * (lane % 4) (+1 for odd i), so one stmatrix.x4 stores the warp's 16 rows x
// 16 columns: matrices 0/1 are rows 0-7/8-15 of one 8-column block (accumulators 4j..4j+3), matrices 2/3 the same
// for the next block. Lane l names row l % 8 of matrix l / 8.
template <int COLS, int N>
__device__ __forceinline__ void stmatrix_accumulators(unsigned char* buf, const float (&acc)[N], int first, int warp,
                                                      int lane) {
    static_assert(COLS % 16 == 0 && COLS * 2 <= 128, "whole stmatrix.x4 column pairs inside one 128-byte row");
    const int r = 16 * warp + 8 * ((lane / 8) % 2) + lane % 8;
#pragma unroll
    for (int j = 0; j < COLS / 8; j += 2) {
        const int i = first + 4 * j;
        const unsigned v[4] = {pack_bf16x2(acc[i], acc[i + 1]), pack_bf16x2(acc[i + 2], acc[i + 3]),
                               pack_bf16x2(acc[i + 4], acc[i + 5]), pack_bf16x2(acc[i + 6], acc[i + 7])};
        stmatrix_x4(smem_addr(buf + 2 * swizzle<COLS>(r, 8 * (j + lane / 16))), v);
    }
}

// The same stores from accumulators already rounded: packed[p] holds the bf16 pair of accumulators 2p and 2p + 1
// (pack_bf16x2), and `first` counts accumulators, as above. A kernel that must free its fp32 accumulators before the
// stores (chapter 10's OVERLAP: the next tile's wgmmas write them meanwhile) rounds them first and calls this.
template <int COLS, int P>
__device__ __forceinline__ void stmatrix_packed(unsigned char* buf, const unsigned (&packed)[P], int first, int warp,
                                                int lane) {
    static_assert(COLS % 16 == 0 && COLS * 2 <= 128, "whole stmatrix.x4 column pairs inside one 128-byte row");
    const int r = 16 * warp + 8 * ((lane / 8) % 2) + lane % 8;
#pragma unroll
    for (int j = 0; j < COLS / 8; j += 2) {
        const int p = (first + 4 * j) / 2;
        const unsigned v[4] = {packed[p], packed[p + 1], packed[p + 2], packed[p + 3]};
        stmatrix_x4(smem_addr(buf + 2 * swizzle<COLS>(r, 8 * (j + lane / 16))), v);
    }
}

// One warp's 16 rows of m64nN accumulators, kept fp32, straight to global memory at `gC` (the warp's first row and
// the tile's first column; row stride `ld` elements), as rungs 06 to 09 store them: each lane holds two neighbouring
// columns per 8-column group and writes them with one 8-byte store, so the 4 lanes of a row fill a 32-byte sector.
template <int N, typename T>  // T = float. A template, so that a kernel switching C's type skips the branch it drops
__device__ __forceinline__ void store_accumulators(T* gC, int ld, const float (&acc)[N / 2], int lane) {
    static_assert(sizeof(T) == 4, "fp32 C");
#pragma unroll
    for (int i = 0; i < N / 2; i += 2) {  // rows lane / 4 and lane / 4 + 8, in turn
        const int r = lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (lane % 4);
        *reinterpret_cast<float2*>(gC + (size_t)r * ld + col) = make_float2(acc[i], acc[i + 1]);
    }
}

// One warp's 16 rows of m64nN accumulators, rounded to bf16, straight to global memory at `gC` (the warp's first
// row and the tile's first column; row stride `ld` elements). Each lane holds two neighbouring columns per 8-column
// group, so a bf16x2 store per lane would write 4 bytes, and the 4 lanes of a row would cover 16 bytes: half of a
// 32-byte sector per instruction, the other half left to the next one. Instead lanes 2u and 2u+1 swap one bf16x2
// (shfl.sync.bfly 1): the even lane keeps group j's pair and takes its neighbour's, the odd lane takes group j+1's
// pair from its neighbour and keeps its own. Each lane then writes 4 neighbouring columns with one 8-byte store,
// and the 4 lanes of a row fill a whole sector: 32 shuffles and 32 stores of 8 bytes where there were 64 of 4.
template <int N, typename T>  // T = __nv_bfloat16 (a template for the same reason)
__device__ __forceinline__ void store_accumulators_paired(T* gC, int ld, const float (&acc)[N / 2], int lane) {
    static_assert(sizeof(T) == 2, "bf16 C");
    const bool odd = lane & 1;
#pragma unroll
    for (int i = 0; i < N / 2; i += 8)       // accumulators of column groups j = i / 4 and j + 1
#pragma unroll
        for (int h = 0; h < 2; ++h) {        // rows lane / 4 and lane / 4 + 8
            const unsigned lo = pack_bf16x2(acc[i + 2 * h], acc[i + 2 * h + 1]);      // group j
            const unsigned hi = pack_bf16x2(acc[i + 4 + 2 * h], acc[i + 5 + 2 * h]);  // group j + 1
            const unsigned got = __shfl_xor_sync(0xffffffffu, odd ? lo : hi, 1);
            const int r = lane / 4 + 8 * h, col = 8 * (i / 4) + 8 * odd + 4 * ((lane % 4) / 2);
            *reinterpret_cast<uint2*>(gC + (size_t)r * ld + col) = odd ? make_uint2(got, hi) : make_uint2(lo, got);
        }
}
