// Experiment bf16_c_8192: which difference between rung 09 and chapter 10's first bf16 step brings the DRAM bytes
// at N = 8192, the bf16 C or the cluster launch? And bf16_stores' second question: do the bf16x2 stores alone cost
// rung 09 its rate? BF16 in, FP32 accumulate, sm_90a.
// Builds on: kernels/09_setmaxnreg.cu, whose whole kernel this keeps (128 x 256 tiles, one block per tile, a TMA
// producer and two consumer warpgroups at 24/240 registers). It changes how C is written and how the kernel is
// launched, each a switch:
//   C_STORE = 0: fp32 C, one float2 (8 bytes) per pair of neighbouring columns: rung 09 as built (its SASS).
//   C_STORE = 1: the same fp32 C buffer written as bf16x2 into its first half (4 bytes a pair, row by row, as
//     chapter 10's bf16 stores were before the pairing); that C is not checkable, only timed (bf16_stores).
//   C_STORE = 2: C is bf16, stored with chapter 10's paired stores (common/epilogue.cuh): rung 09 writing bf16 C.
//   CLUSTER_LAUNCH = 1: __cluster_dims__(1, 1, 1), so the kernel goes through the cluster launch path.
//
// C[M,N] = A[M,K] @ Bt[N,K]^T: A, Bt bf16 row-major (given as tensor maps), C fp32 (bf16 with C_STORE = 2);
// M % BM, N % BN, K % BK == 0.
#include <cuda_bf16.h>
#include "common/epilogue.cuh"
#include "common/mbarrier.cuh"
#include "common/setmaxnreg.cuh"
#include "common/smem.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

// A kernel has __cluster_dims__ or not: its arguments must be positive, so no constexpr value removes it, and this
// one switch is a macro. build.py defines it ahead of the file (CLUSTER_LAUNCH = 0 is rung 09 as built).
#ifndef CLUSTER_LAUNCH
#define CLUSTER_LAUNCH 0
#endif

constexpr int C_STORE = 0;                   // 0: fp32 (rung 09), 1: bf16x2 into the fp32 buffer, 2: bf16, paired
constexpr int CONSUMERS = 2;                 // consumer warpgroups, 64 rows of C each
constexpr int WGMMA_N = 256;                 // n of one wgmma: 64 (m64n64k16) ... 256 (m64n256k16)
constexpr int BM = 64 * CONSUMERS;           // rows of C per block
constexpr int BN = 256;                      // columns of C per block
constexpr int BK = 64;                       // k per stage: one 128-byte row of bf16, the swizzle atom width
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int N_MMAS = BN / WGMMA_N;         // wgmma per warpgroup per k16 step
constexpr int B_BOX_ROWS = WGMMA_N;          // B comes in one box per wgmma slice: a TMA box has at most 256 rows
constexpr int A_TILE = BM * BK;              // bf16 elements of one stage's A tile, [BM, BK]
constexpr int B_TILE = BN * BK;              // and of its B tile, [BN, BK]
constexpr int STAGE_BYTES = (A_TILE + B_TILE) * 2;  // one ring slot
constexpr int TX_BYTES = (A_TILE + B_TILE) * 2;     // what expect_tx announces: exactly the bytes the two boxes bring
constexpr int SMEM_BUDGET = 227 * 1024;             // what one block can opt in to on an H100
constexpr int STAGES = (SMEM_BUDGET - 1024 - 1024) / STAGE_BYTES;  // ring depth from the budget (alignment, barriers)
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // +1024 to align the ring to a swizzle atom

constexpr int PRODUCER_REGS = 24;            // per thread, after setmaxnreg.dec
constexpr int CONSUMER_REGS = 240;           // per thread, after setmaxnreg.inc

constexpr int TRACE = 0;                     // 1: block (0, 0) stamps clock64 per tile and role into trace_clock
constexpr int TRACE_TILES = 256;             // k tiles the trace has room for

static_assert(STAGES >= 2 && SMEM_BYTES <= SMEM_BUDGET, "the budget must hold at least two stages");

// The instrumented build's record, read by the host after one launch (helpers/timeline.py):
// [role][tile][2] with role 0 = producer (empty slot acquired, copies issued), 1.. = consumers (tile landed,
// its wgmma group finished). Untouched unless TRACE = 1.
__device__ unsigned long long trace_clock[TRACE ? (1 + CONSUMERS) * TRACE_TILES * 2 : 1];

__device__ __forceinline__ void stamp(int role, int kt, int which) {
    if constexpr (TRACE) {
        if (blockIdx.x == 0 && blockIdx.y == 0 && kt < TRACE_TILES)
            trace_clock[(role * TRACE_TILES + kt) * 2 + which] = clock64();
    }
}
// setmaxnreg.inc draws from the CTA's pool: what it got at launch, 65536 / THREADS per thread rounded down to 8
// (168 x 384 = 64,512), not the SM's 65,536. A split past the pool would wait for registers forever.
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536 / THREADS / 8 * 8 * THREADS,
              "the split must fit the registers the CTA was given at launch");

static_assert(C_STORE >= 0 && C_STORE <= 2, "three ways to write C");

template <int STORE> struct c_element { using type = float; };      // C's element type: fp32,
template <> struct c_element<2> { using type = __nv_bfloat16; };   // or bf16
using c_t = c_element<C_STORE>::type;

#if CLUSTER_LAUNCH
#define CLUSTER_DIMS __cluster_dims__(1, 1, 1)
#else
#define CLUSTER_DIMS
#endif

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, 1)
gemm_setmaxnreg(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
                      c_t* __restrict__ C, int M, int N, int K) {
    extern __shared__ unsigned char smem[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    // The swizzle is a function of address bits 4-9, so the ring starts on a 1024-byte boundary.
    const unsigned ring = (smem_addr(smem) + 1023) & ~1023u;  // STAGES x ([BM, BK] A, [BN, BK] B), swizzled

    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const int tiles = K / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(smem_addr(&full[s]), 1);
            mbarrier_init(smem_addr(&empty[s]), CONSUMERS);  // one release per consumer warpgroup per lap
        }
        fence_mbarrier_init();
    }
    __syncthreads();

    if (wg == 0) {  // producer warpgroup: one thread issues every copy, the other 127 idle
        setmaxnreg_dec<PRODUCER_REGS>();
        if (t == 0) {
            for (int kt = 0; kt < tiles; ++kt) {
                const int s = kt % STAGES;
                // Lap L needs the slot's L-th release, which completes phase L-1 of empty[s]. A fresh barrier sits
                // in phase 0, so on lap 0 the parity of phase "-1" (odd) passes at once: the ring starts empty.
                mbarrier_wait_parity(smem_addr(&empty[s]), ((kt / STAGES) & 1) ^ 1);
                stamp(0, kt, 0);
                const unsigned bar = smem_addr(&full[s]), sA = ring + s * STAGE_BYTES;
                mbarrier_arrive_expect_tx(bar, TX_BYTES);
                tma_load_2d(sA, &tmA, kt * BK, blockIdx.y * BM, bar);
#pragma unroll
                for (int j = 0; j < N_MMAS; ++j)
                    tma_load_2d(sA + (A_TILE + j * B_BOX_ROWS * BK) * 2, &tmB, kt * BK,
                                blockIdx.x * BN + j * B_BOX_ROWS, bar);
                stamp(0, kt, 1);
            }
        }
    } else {  // consumer warpgroups: wgmma only
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        float acc[N_MMAS][WGMMA_N / 2];
        for (int kt = 0; kt < tiles; ++kt) {
            const int s = kt % STAGES;
            mbarrier_wait_parity(smem_addr(&full[s]), (kt / STAGES) & 1);
            if (t == 0) stamp(1 + c, kt, 0);
            const unsigned sA = ring + s * STAGE_BYTES + c * 64 * 128, sB = ring + s * STAGE_BYTES + A_TILE * 2;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)
#pragma unroll
                for (int j = 0; j < N_MMAS; ++j)
                    wgmma_m64nNk16_bf16<WGMMA_N>(acc[j], wgmma_desc(sA + kk * 32),
                                                 wgmma_desc(sB + j * WGMMA_N * 128 + kk * 32), kt + kk > 0);
            wgmma_commit_group();
            wgmma_wait_group<1>();  // the group of tile kt-1 has finished: release its slot
            if (t == 0 && kt > 0) {
                stamp(1 + c, kt - 1, 1);
                mbarrier_arrive(smem_addr(&empty[(kt - 1) % STAGES]));
            }
        }
        wgmma_wait_group<0>();
        if (t == 0) stamp(1 + c, tiles - 1, 1);

        if constexpr (C_STORE == 2) {  // each warp's 16 rows, lanes paired: one 8-byte store fills a sector
            const int row = blockIdx.y * BM + c * 64 + (t / 32) * 16;
#pragma unroll
            for (int j = 0; j < N_MMAS; ++j)
                store_accumulators_paired<WGMMA_N>(C + (size_t)row * N + blockIdx.x * BN + j * WGMMA_N, N, acc[j],
                                                   t % 32);
        } else {
            const int row = blockIdx.y * BM + c * 64 + (t / 32) * 16 + (t % 32) / 4;
#pragma unroll
            for (int j = 0; j < N_MMAS; ++j)
#pragma unroll
                for (int i = 0; i < WGMMA_N / 2; i += 2) {
                    const int r = row + 8 * ((i / 2) % 2);
                    const int col = blockIdx.x * BN + j * WGMMA_N + 8 * (i / 4) + 2 * (t % 4);
                    if constexpr (C_STORE == 0) {
                        *reinterpret_cast<float2*>(&C[r * N + col]) = make_float2(acc[j][i], acc[j][i + 1]);
                    } else {  // 4 bytes a pair: the 4 lanes of a row write half a 32-byte sector per instruction
                        *reinterpret_cast<__nv_bfloat162*>(reinterpret_cast<__nv_bfloat16*>(C) + (size_t)r * N + col) =
                            __floats2bfloat162_rn(acc[j][i], acc[j][i + 1]);
                    }
                }
        }
    }
}
