// Experiment wgmma_issue: how many warpgroups does the tensor pipe need? Chapter 00's BF16 wgmma probe
// (kernels/00_probes.cu's probe_hgmma: back-to-back m64n256k16 on one resident shared tile, no global traffic, one
// group of HGMMA_GROUP wgmmas in flight while the next is issued), here alone, with its block size and group as
// config so one warpgroup can issue (THREADS = 128) where chapter 00 has two. sm_90a.
// It adds HANDSHAKE = 1: what a GEMM consumer does around each k tile's group, without the data: a wait on an
// mbarrier whose phase 0 has already completed (so the wait passes at once) and a wgmma.fence before the group, and
// after its wait_group an arrival by one thread of each warpgroup on a second barrier (the slot's release), one that
// never completes. The two barriers are set up before the loop in every build, HANDSHAKE or not, as the builds the
// record holds had them. Launched as the probe is: sink gets one float a thread, operands the tile (or nullptr).
#include "common/mbarrier.cuh"
#include "common/smem.cuh"
#include "common/wgmma.cuh"

constexpr int THREADS = 256;     // block size: 256 two warpgroups (the probe as chapter 00 runs it), 128 one
constexpr int HANDSHAKE = 0;     // 1: a GEMM consumer's barrier wait, fence and release around each group
constexpr int HGMMA_GROUP = 4;   // wgmma per commit group (4: one 128-byte k tile)
constexpr int N = 256;           // the wgmma's n: m64n256k16

extern "C" __global__ void __launch_bounds__(THREADS)
probe_hgmma(float* __restrict__ sink, int iters, const unsigned* __restrict__ operands) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    // A [64, 128 bytes] and B [N, 128 bytes], 1024-byte aligned for the 128-byte swizzle; operands: random values
    // (the power-limited rate), nullptr: zeros.
    __shared__ __align__(1024) unsigned tiles[(64 + N) * 128 / 4];
    for (int i = threadIdx.x; i < (64 + N) * 128 / 4; i += THREADS) tiles[i] = operands ? operands[i] : 0u;
    fence_proxy_async_shared_cta();  // ordinary stores, read next by wgmma through the async proxy
    __syncthreads();
    const unsigned a = smem_addr(tiles), b = a + 64 * 128;
    // [0]: phase 0 completed, [1]: never completes. The other 126 (1008 bytes) pad the block's static shared memory to
    // 41 KiB, what the record's builds had: inside chapter 00's file, whose TMA probes take 1024-aligned dynamic
    // shared memory, every kernel's static shared memory is rounded up to a multiple of 1 KiB.
    __shared__ __align__(8) unsigned long long bars[128];
    if (threadIdx.x == 0) {
        mbarrier_init(smem_addr(&bars[0]), 1);
        mbarrier_init(smem_addr(&bars[1]), (1 << 20) - 1);  // the largest count an mbarrier takes
        fence_mbarrier_init();
        mbarrier_arrive(smem_addr(&bars[0]));
    }
    __syncthreads();
    float acc[N / 2];
    wgmma_fence();
    for (int i = 0; i < iters; ++i) {
        if constexpr (HANDSHAKE) {
            mbarrier_wait_parity(smem_addr(&bars[0]), 0);
            wgmma_fence();
        }
#pragma unroll
        for (int j = 0; j < HGMMA_GROUP; ++j)
            wgmma_m64nNk16_bf16<N>(acc, wgmma_desc(a + j * 32), wgmma_desc(b + j * 32), i + j > 0);
        wgmma_commit_group();
        wgmma_wait_group<1>();  // one group stays in flight while the next is issued, as in a GEMM main loop
        if (HANDSHAKE && threadIdx.x % 128 == 0) mbarrier_arrive(smem_addr(&bars[1]));
    }
    wgmma_wait_group<0>();
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < N / 2; ++j) s += acc[j];
    sink[blockIdx.x * THREADS + threadIdx.x] = s;
#endif
}
