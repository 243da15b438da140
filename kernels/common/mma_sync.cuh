// Warp-level tensor-core PTX: ldmatrix and mma.sync (sm_80+), introduced in chapter 03 and shared from there on;
// stmatrix (sm_90), introduced in chapter 10's epilogue.
// Each wrapper is named after the instruction it emits; operands are raw 32-bit registers holding two bf16.
#pragma once
#include "common/smem.cuh"

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of
// matrix i, and every lane receives, in r[i], two consecutive elements of row (lane / 4) of matrix i.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16: the same, each matrix transposed on the way, so a row-major
// [K, N] tile arrives in the column-major fragment layout mma.sync wants for B.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// stmatrix.sync.aligned.m8n8.x4.shared.b16: ldmatrix's mirror image. Every lane hands over, in r[i], two
// consecutive elements of row (lane / 4) of matrix i; lanes 8i..8i+7 give the row addresses of matrix i. That
// is exactly where an mma or wgmma accumulator pair already sits, so one instruction stores 16 bytes per lane.
__device__ __forceinline__ void stmatrix_x4(unsigned addr, const unsigned (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 :: "r"(addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: d[16x8] = a[16x16] * b[16x8] + c, fp32 accumulate.
// a: 4 registers (8 bf16), b: 2 registers (4 bf16), c/d: 4 floats per lane.
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
