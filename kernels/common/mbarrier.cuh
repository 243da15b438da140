// Shared-memory mbarriers (sm_90): the handshake between TMA copies, producers and consumers. Chapter 07 on.
// Every wait is bounded: a barrier that never completes (a wrong expect_tx byte count, a wrong parity) traps
// after MBARRIER_TIMEOUT_NS instead of freezing the GPU and the notebook, and the host turns the trap into a
// sentence (helpers/kernel.py). No printf here: a call between wgmmas makes ptxas serialize them (C7510).
#pragma once
#include "common/globaltimer.cuh"  // paths are relative to kernels/, as in the rungs

#ifndef MBARRIER_TIMEOUT_NS
#define MBARRIER_TIMEOUT_NS 4000000000ull  // 4 s: no healthy wait comes near it, even under compute-sanitizer
#endif

// mbarrier.init.shared::cta.b64 [bar], count: a barrier that completes a phase after `count` arrivals
// (plus every transaction byte announced with expect_tx).
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// fence.mbarrier_init.release.cluster: make the inits visible to the async proxy (TMA) before first use.
__device__ __forceinline__ void fence_mbarrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// mbarrier.arrive.shared::cta.b64 _, [bar]: one arrival.
__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes: one arrival, and the phase now also waits for
// exactly `bytes` to be delivered by async copies that name this barrier.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// mbarrier.try_wait.parity.shared::cta.b64: true once the phase with this parity has completed.
__device__ __forceinline__ bool mbarrier_try_wait_parity(unsigned bar, unsigned parity) {
    unsigned done;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}

// Wait for the phase of `parity` to complete; trap after MBARRIER_TIMEOUT_NS. The loop is one PTX block: written
// in C++ (try, read the clock, compare, try again) it made ptxas spill a consumer's accumulators around the loop
// even with registers to spare (chapter 09's 128 x 320 tile: 392 B at 240 registers, none with this loop).
__device__ __forceinline__ void mbarrier_wait_parity(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n.reg .pred done, late;\n.reg .u64 t0, t;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@done bra DONE;\n"
        "mov.u64 t0, %%globaltimer;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@done bra DONE;\n"
        "mov.u64 t, %%globaltimer;\n"
        "sub.u64 t, t, t0;\n"
        "setp.gt.u64 late, t, %2;\n"
        "@late trap;\n"
        "bra WAIT;\n"
        "DONE:\n}\n" ::"r"(bar), "r"(parity), "l"(MBARRIER_TIMEOUT_NS) : "memory");
}

// mbarrier.arrive.shared::cluster.b64 _, [bar]: one arrival on a barrier that may live in another CTA of the
// cluster (its address from mapa_shared_cluster, kernels/common/cluster.cuh). The default .release.cta is
// enough when the reads being released were wgmmas already waited for; spelling .release.cluster costs a
// GPU-wide MEMBAR before every arrival.
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned cluster_bar) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}
