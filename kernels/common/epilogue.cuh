// The shared-memory half of a wgmma epilogue: accumulators rounded to bf16 and written, with stmatrix, in the
// layout a TMA store reads. Introduced in chapter 10 (its EPILOGUE = 2 step), shared with chapter 12.
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
