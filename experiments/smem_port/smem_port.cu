// Experiment smem_port: do wgmma's shared-memory operand reads and TMA's fills share one port of an SM's shared
// memory, 128 bytes a clock? Chapter 00's BF16 wgmma probe (back-to-back m64n256k16 on one resident shared tile, two
// consumer warpgroups, each with one group of HGMMA_GROUP wgmmas in flight while it issues the next: the probe of
// experiments/wgmma_issue) plus one producer warp. For every group the consumers issue, the producer TMA-loads
// FILL_BOXES boxes of [128, 64] bf16 (16 KiB each, 128-byte swizzle: a GEMM's A box) from an L2-resident buffer into
// a scratch region of the same SM's shared memory, completing on that group's mbarrier. The consumers wait on it
// before the group, as a GEMM's consumers wait on a k tile, and never read the scratch: the fills are paced to the
// tensor rate, and where the port cannot serve both, the tensor rate falls.
// One group of both warpgroups is CONSUMERS * HGMMA_GROUP = 8 wgmmas, 1,024 clocks of the SM's tensor pipe at 4,096
// FLOP a clock, so each box a group is 16 B a clock at the full rate (FILL_PER_CLK). The operands read 10 KiB a
// wgmma (A 64 x 16 and B 256 x 16 bf16), 80 B a clock; A_IN_REGS = 1 takes A from registers (wgmma's register form),
// 8 KiB a wgmma, 64 B a clock. WGMMA = 0 keeps the waits and drops the wgmmas: the fills alone.
// The mbarriers are a ring of STAGES groups (full: the producer's expect_tx and the boxes' bytes; empty: one arrival
// per consumer warp), so the producer runs at most STAGES groups ahead. The scratch is never read, so a consumer warp
// releases a group as soon as it has seen it land, and the destination (DEST_BOXES boxes, walked in turn) is decoupled
// from the ring: a group's bytes may land where an older group's are still landing. Only the pacing matters.
// New PTX: mov %smid, and wgmma with A in registers (wgmma_m64n256k16_bf16_rs below: only this probe issues it).
// Launched with THREADS threads and SMEM_BYTES of dynamic shared memory, one CTA an SM (its shared memory allows no
// second); stamps gets STAMP_WORDS 64-bit words a CTA (below), sink one float a consumer thread. sm_90a.
#include "common/globaltimer.cuh"
#include "common/mbarrier.cuh"
#include "common/smem.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

constexpr int CONSUMERS = 2;                    // consumer warpgroups (chapter 00's probe has two)
constexpr int CONSUMER_WARPS = CONSUMERS * 4;
constexpr int THREADS = CONSUMERS * 128 + 32;   // + one producer warp
constexpr int HGMMA_GROUP = 4;                  // wgmma per commit group of a warpgroup (4: one 128-byte k tile)
constexpr int N = 256;                          // the wgmma's n: m64n256k16
constexpr int A_IN_REGS = 0;                    // 1: A from registers, B from shared memory
constexpr int WGMMA = 1;                        // 0: the handshake and the fills, no wgmma
constexpr int FILL_BOXES = 0;                   // boxes the producer lands per group (0: it arrives with no bytes)
constexpr int BOX_ROWS = 128;                   // [128, 64] bf16: 128 rows of 128 bytes
constexpr int BOX_BYTES = BOX_ROWS * 128;
constexpr int FILL_BYTES = FILL_BOXES * BOX_BYTES;
constexpr int GROUP_CLOCKS = CONSUMERS * HGMMA_GROUP * (2 * 64 * N * 16 / 4096);  // the group at 4,096 FLOP/clk
constexpr int FILL_PER_CLK = FILL_BYTES / GROUP_CLOCKS;                           // fill bytes a clock at full rate
constexpr int OPERAND_BYTES = (A_IN_REGS ? 0 : 64 * 16 * 2) + N * 16 * 2;         // shared-memory bytes a wgmma reads
constexpr int STAGES = 4;                       // groups the producer may run ahead
constexpr int DEST_BOXES = 11;                  // the scratch: 176 KiB
constexpr int SMEM_BYTES = DEST_BOXES * BOX_BYTES;  // every build, fills or not: one shared-memory carveout
constexpr int STAMP_WORDS = 8;  // per CTA: clock64 and globaltimer at the start (thread 0), at the end of each
                                // consumer warpgroup (its thread 0), %smid, the scratch word checked
static_assert(FILL_BYTES < (1 << 20), "an mbarrier's transaction count holds at most 2^20 - 1 bytes");
static_assert(FILL_PER_CLK * GROUP_CLOCKS == FILL_BYTES, "a group's fill is a whole number of bytes a clock");
static_assert(HGMMA_GROUP * OPERAND_BYTES <= (64 + N) * 128, "the resident tile holds a group's k steps");
static_assert(SMEM_BYTES + (64 + N) * 128 + 1024 <= 227 * 1024, "the scratch and the tile fit the 227 KiB opt-in");

// mov.u32 %r, %smid: the SM this CTA runs on (recorded, so the record says which SMs a partial grid used).
__device__ __forceinline__ unsigned smid() {
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(r));
    return r;
}

// wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {d0..d127}, {a0..a3}, desc_b, p, 1, 1, 0: D[64x256] (+)=
// A[64x16] * B[16x256], A from registers (four 32-bit words a thread, two bf16 each, in wgmma's A fragment), B from
// shared memory through its descriptor, K-major (the trailing 0: no transpose). scale_d = 0 overwrites D.
#define SP_TEN(t) "%" #t "0, %" #t "1, %" #t "2, %" #t "3, %" #t "4, %" #t "5, %" #t "6, %" #t "7, %" #t "8, %" #t "9, "
#define SP_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define SP_D16(i) SP_D4(i), SP_D4(i + 4), SP_D4(i + 8), SP_D4(i + 12)
__device__ __forceinline__ void wgmma_m64n256k16_bf16_rs(float (&d)[128], const unsigned (&a)[4],
                                                         unsigned long long desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " SP_TEN(1) SP_TEN(2) SP_TEN(3) SP_TEN(4) SP_TEN(5)
                 SP_TEN(6) SP_TEN(7) SP_TEN(8) SP_TEN(9) SP_TEN(10) SP_TEN(11)
                 "%120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
                 : SP_D16(0), SP_D16(16), SP_D16(32), SP_D16(48), SP_D16(64), SP_D16(80), SP_D16(96), SP_D16(112)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
#undef SP_TEN
#undef SP_D4
#undef SP_D16

extern "C" __global__ void __launch_bounds__(THREADS)
probe_smem_port(const __grid_constant__ TensorMap src, int boxes, int iters, const unsigned* __restrict__ operands,
                float* __restrict__ sink, unsigned long long* __restrict__ stamps) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    // A [64, 128 bytes] and B [N, 128 bytes], 1024-byte aligned for the 128-byte swizzle, random values (operands):
    // the power-limited rate, as chapter 00's probe measures it with random operands.
    __shared__ __align__(1024) unsigned tiles[(64 + N) * 128 / 4];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    extern __shared__ __align__(1024) unsigned char scratch[];  // DEST_BOXES [128, 64] bf16 boxes, never read
    const unsigned base = smem_addr(scratch);
    unsigned long long* const mine = stamps + blockIdx.x * STAMP_WORDS;
    for (int i = threadIdx.x; i < (64 + N) * 128 / 4; i += THREADS) tiles[i] = operands[i];
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(smem_addr(&full[s]), 1);                // the producer's arrival (and the boxes' bytes)
            mbarrier_init(smem_addr(&empty[s]), CONSUMER_WARPS);  // one arrival per consumer warp
        }
        fence_mbarrier_init();
        // Zero the word the check reads in every box, so what it finds there was landed by this launch's copies.
        for (int b = 0; b < DEST_BOXES; ++b) reinterpret_cast<unsigned*>(scratch)[b * BOX_BYTES / 4] = 0u;
    }
    fence_proxy_async_shared_cta();  // ordinary stores, next written by TMA and read by wgmma through the async proxy
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp == CONSUMER_WARPS) {  // the producer: one thread issues, the rest of the warp has nothing to do
        if (lane == 0) {
            for (int j = 0; j < iters; ++j) {
                const int s = j % STAGES;
                const unsigned bar = smem_addr(&full[s]);
                if (j >= STAGES) mbarrier_wait_parity(smem_addr(&empty[s]), (j / STAGES - 1) & 1);  // seen by all
                if constexpr (FILL_BOXES > 0) {
                    mbarrier_arrive_expect_tx(bar, FILL_BYTES);
#pragma unroll
                    for (int k = 0; k < FILL_BOXES; ++k) {
                        // Neighbouring CTAs take neighbouring boxes, so no two CTAs fetch one box at once
                        // (32 bits: the runner keeps iters * FILL_BOXES * gridDim.x far below 2^32).
                        const unsigned n = (unsigned)j * FILL_BOXES + k;
                        const int box = (int)((blockIdx.x + n * gridDim.x) % (unsigned)boxes);
                        tma_load_2d(base + n % DEST_BOXES * BOX_BYTES, &src, 0, box * BOX_ROWS, bar);
                    }
                } else {
                    mbarrier_arrive(bar);  // the same handshake without bytes: the no-fill build
                }
            }
        }
        return;
    }
    if (threadIdx.x == 0) {
        mine[0] = clock64();
        mine[1] = globaltimer_ns();
    }
    const unsigned a = smem_addr(tiles), b = a + 64 * 128;
    unsigned ra[4];  // A's fragment for the register form: four words of the tile, random values
#pragma unroll
    for (int r = 0; r < 4; ++r) ra[r] = tiles[(threadIdx.x % 128) * 4 + r];
    float acc[N / 2];
    wgmma_fence();
    for (int i = 0; i < iters; ++i) {
        const int s = i % STAGES;
        mbarrier_wait_parity(smem_addr(&full[s]), (i / STAGES) & 1);  // the group's fill has landed
        __syncwarp();                                                  // every lane of this warp has seen it
        if (lane == 0) mbarrier_arrive(smem_addr(&empty[s]));
        if constexpr (WGMMA) {
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < HGMMA_GROUP; ++j) {
                if constexpr (A_IN_REGS) wgmma_m64n256k16_bf16_rs(acc, ra, wgmma_desc(b + j * 32), i + j > 0);
                else wgmma_m64nNk16_bf16<N>(acc, wgmma_desc(a + j * 32), wgmma_desc(b + j * 32), i + j > 0);
            }
            wgmma_commit_group();
            wgmma_wait_group<1>();  // one group stays in flight while the next is issued, as in a GEMM main loop
        }
    }
    float sum = 0.f;
    if constexpr (WGMMA) {
        wgmma_wait_group<0>();
#pragma unroll
        for (int j = 0; j < N / 2; ++j) sum += acc[j];
    }
    if (threadIdx.x % 128 == 0) {
        const int wg = threadIdx.x / 128;
        mine[2 + 2 * wg] = clock64();
        mine[3 + 2 * wg] = globaltimer_ns();
    }
    if (threadIdx.x == 0) {
        mine[6] = smid();
        // The first word of the last group's first box (every fill has landed: each group's wait above saw it).
        const unsigned last = (unsigned)(iters - 1) * FILL_BOXES % DEST_BOXES;
        mine[7] = reinterpret_cast<const unsigned*>(scratch)[last * BOX_BYTES / 4];  // stays 0 with no fills
    }
    sink[blockIdx.x * CONSUMERS * 128 + threadIdx.x] = sum;
#endif
}
