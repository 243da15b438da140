// Warpgroup-level tensor-core PTX (sm_90a): wgmma and its shared-memory descriptors. Introduced in chapter 06.
#pragma once

// wgmma.fence.sync.aligned: order this warpgroup's register writes before the wgmma that reads them.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// wgmma.commit_group.sync.aligned: close the wgmma ops issued so far into one group.
__device__ __forceinline__ void wgmma_commit_group() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// wgmma.wait_group.sync.aligned N: wait until at most N groups of this warpgroup are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes an immediate 0..7");
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// fence.proxy.async.shared::cta: make ordinary shared-memory writes visible to the async proxy (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The 64-bit shared-memory matrix descriptor for a K-major bf16 tile stored with the 128-byte swizzle:
// rows of 64 elements (128 B), 8-row atoms of 1024 B that start 1024-byte aligned.
//   bits  0-13  start address >> 4        bits 16-29  leading byte offset >> 4 (unused when swizzled: 1)
//   bits 32-45  stride byte offset >> 4 (1024 B between 8-row atoms)
//   bits 62-63  swizzle mode: 1 = 128 B, 2 = 64 B, 3 = 32 B. It must match how the tile was written; a wrong
//               mode is not an error, the tensor cores just read scrambled operands.
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned smem_addr, unsigned long long swizzle_mode = 1) {
    return (unsigned long long)((smem_addr & 0x3FFFF) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) |
           (swizzle_mode << 62);
}

// The mma wrappers below are one macro per instruction family: inline PTX cannot take an array operand, so every
// accumulator register is an operand of its own, named %0, %1, ... in the instruction's text. The register lists
// come in blocks of 16 (WGMMA_Rb names %16b .. %16b+15; WGMMA_D(b) binds d[16b] .. d[16b+15] to them), and a shape
// of n columns takes n / 32 blocks. The descriptors and scale-d follow the accumulators, so their operand numbers
// (given to each macro) are n / 2, n / 2 + 1 and n / 2 + 2.
#define WGMMA_R0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define WGMMA_R1 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_R2 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define WGMMA_R3 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_R4 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define WGMMA_R5 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define WGMMA_R6 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define WGMMA_R7 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WGMMA_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WGMMA_D(b) WGMMA_D4(16 * b), WGMMA_D4(16 * b + 4), WGMMA_D4(16 * b + 8), WGMMA_D4(16 * b + 12)
#define WGMMA_REGS_32 WGMMA_R0 ", " WGMMA_R1
#define WGMMA_REGS_64 WGMMA_REGS_32 ", " WGMMA_R2 ", " WGMMA_R3
#define WGMMA_REGS_80 WGMMA_REGS_64 ", " WGMMA_R4
#define WGMMA_REGS_96 WGMMA_REGS_80 ", " WGMMA_R5
#define WGMMA_REGS_128 WGMMA_REGS_96 ", " WGMMA_R6 ", " WGMMA_R7
#define WGMMA_ACC_32 WGMMA_D(0), WGMMA_D(1)
#define WGMMA_ACC_64 WGMMA_ACC_32, WGMMA_D(2), WGMMA_D(3)
#define WGMMA_ACC_80 WGMMA_ACC_64, WGMMA_D(4)
#define WGMMA_ACC_96 WGMMA_ACC_80, WGMMA_D(5)
#define WGMMA_ACC_128 WGMMA_ACC_96, WGMMA_D(6), WGMMA_D(7)

// wgmma.mma_async.sync.aligned.m64n<N>k16.f32.bf16.bf16: D[64xN] (+)= A[64x16] * B[16xN], both operands from
// shared memory through descriptors, K-major; ACC = N / 2 fp32 accumulators per thread of the warpgroup. scale_d = 0
// overwrites D (the first k step needs no zeroed accumulators), 1 accumulates. The trailing "1, 1, 0, 0" are
// imm-scale-a, imm-scale-b (+1) and the transpose flags of A and B (none: both K-major). DA, DB, S: the operand
// numbers of desc_a, desc_b and scale_d.
#define WGMMA_BF16(N, ACC, DA, DB, S)                                                                                  \
    __device__ __forceinline__ void wgmma_m64n##N##k16_bf16(float (&d)[ACC], unsigned long long desc_a,               \
                                                            unsigned long long desc_b, int scale_d) {                 \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\n"                                                \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 "                                      \
                     "{" WGMMA_REGS_##ACC "}, %" #DA ", %" #DB ", p, 1, 1, 0, 0;\n}\n"                                 \
                     : WGMMA_ACC_##ACC                                                                                \
                     : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                                       \
    }
WGMMA_BF16(64, 32, 32, 33, 34)
WGMMA_BF16(128, 64, 64, 65, 66)
// m64n160k16: chapter 09's wide tile, two of them a consumer's 64 x 320 slice (160 accumulators, more than 168
// registers can hold). m64n192k16: chapter 10's middle tile; n may be any multiple of 8 up to 256 (16 for this
// dtype's k).
WGMMA_BF16(160, 80, 80, 81, 82)
WGMMA_BF16(192, 96, 96, 97, 98)
WGMMA_BF16(256, 128, 128, 129, 130)

// wgmma.mma_async.sync.aligned.m64n<N>k32.f32.e4m3.e4m3: D[64xN] (+)= A[64x32] * B[32xN] with e4m3 (FP8) operands
// from shared memory, both K-major (FP8 wgmma has no transpose immediates), fp32 accumulators as in the bf16 shapes.
// A 32-deep k step of e4m3 is 32 bytes, as a 16-deep step of bf16 is, so the descriptors and the 128-byte swizzle
// are the same. The two trailing 1s are imm-scale-a and imm-scale-b (+1). Chapter 12: m64n256k32 for its rung,
// m64n64k32 for the promoted rung, which sums a 64 x 256 slice in four 64-wide slices through two 32-register
// partial buffers (beside 128 registers of fp32 totals), and m64n128k32 and m64n192k32 for the narrower tiles of
// experiments/fp8_promoted.
#define WGMMA_E4M3(N, ACC, DA, DB, S)                                                                                  \
    __device__ __forceinline__ void wgmma_m64n##N##k32_e4m3(float (&d)[ACC], unsigned long long desc_a,               \
                                                            unsigned long long desc_b, int scale_d) {                 \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #S ", 0;\n"                                                \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 "                                      \
                     "{" WGMMA_REGS_##ACC "}, %" #DA ", %" #DB ", p, 1, 1;\n}\n"                                       \
                     : WGMMA_ACC_##ACC                                                                                \
                     : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                                       \
    }
WGMMA_E4M3(256, 128, 128, 129, 130)
WGMMA_E4M3(64, 32, 32, 33, 34)
WGMMA_E4M3(128, 64, 64, 65, 66)
WGMMA_E4M3(192, 96, 96, 97, 98)
// The helpers end here: an including kernel sees the wrappers, not their macros.
#undef WGMMA_BF16
#undef WGMMA_E4M3
#undef WGMMA_R0
#undef WGMMA_R1
#undef WGMMA_R2
#undef WGMMA_R3
#undef WGMMA_R4
#undef WGMMA_R5
#undef WGMMA_R6
#undef WGMMA_R7
#undef WGMMA_D4
#undef WGMMA_D
#undef WGMMA_REGS_32
#undef WGMMA_REGS_64
#undef WGMMA_REGS_80
#undef WGMMA_REGS_96
#undef WGMMA_REGS_128
#undef WGMMA_ACC_32
#undef WGMMA_ACC_64
#undef WGMMA_ACC_80
#undef WGMMA_ACC_96
#undef WGMMA_ACC_128

// One name for the five shapes, chosen at compile time: wgmma_m64nNk16_bf16<N>(d, desc_a, desc_b, scale_d).
template <int N>
__device__ __forceinline__ void wgmma_m64nNk16_bf16(float (&d)[N / 2], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    static_assert(N == 64 || N == 128 || N == 160 || N == 192 || N == 256,
                  "wrapped shapes: m64n64k16, m64n128k16, m64n160k16, m64n192k16, m64n256k16");
    if constexpr (N == 64) wgmma_m64n64k16_bf16(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 128) wgmma_m64n128k16_bf16(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 160) wgmma_m64n160k16_bf16(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 192) wgmma_m64n192k16_bf16(d, desc_a, desc_b, scale_d);
    else wgmma_m64n256k16_bf16(d, desc_a, desc_b, scale_d);
}

// The e4m3 shapes by width: wgmma_m64nNk32_e4m3<N>(d, desc_a, desc_b, scale_d).
template <int N>
__device__ __forceinline__ void wgmma_m64nNk32_e4m3(float (&d)[N / 2], unsigned long long desc_a,
                                                    unsigned long long desc_b, int scale_d) {
    static_assert(N == 64 || N == 128 || N == 192 || N == 256,
                  "wrapped shapes: m64n64k32, m64n128k32, m64n192k32, m64n256k32");
    if constexpr (N == 64) wgmma_m64n64k32_e4m3(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 128) wgmma_m64n128k32_e4m3(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 192) wgmma_m64n192k32_e4m3(d, desc_a, desc_b, scale_d);
    else wgmma_m64n256k32_e4m3(d, desc_a, desc_b, scale_d);
}
