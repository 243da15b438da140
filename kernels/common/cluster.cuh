// Thread-block clusters and named barriers (sm_90). Chapter 10.
// A cluster is a group of CTAs scheduled together on one GPC that can read, write and arrive on each other's
// shared memory. The kernel fixes the cluster shape with __cluster_dims__, so an ordinary launch forms clusters.
#pragma once

// mov.u32 %r, %cluster_ctarank: this CTA's rank inside its cluster, 0 .. cluster size - 1.
__device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

// mapa.shared::cluster.u32 d, addr, rank: the address of the same shared variable in CTA `rank` of the cluster.
__device__ __forceinline__ unsigned mapa_shared_cluster(unsigned addr, unsigned rank) {
    unsigned d;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(d) : "r"(addr), "r"(rank));
    return d;
}

// barrier.cluster.arrive.release.aligned + barrier.cluster.wait.acquire.aligned: every thread of every CTA in
// the cluster meets here. Needed after mbarrier init (a partner must not arrive on a barrier not yet made) and
// before exit (a partner must not arrive on, or copy into, the shared memory of a CTA that is gone).
__device__ __forceinline__ void barrier_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// bar.sync id, count: a named barrier for `count` threads (a multiple of 32), so one warpgroup can sync without
// stopping the others. Id 0 is __syncthreads; ids 1..15 are free.
__device__ __forceinline__ void bar_sync(unsigned id, unsigned count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// bar.arrive id, count: count this thread in at named barrier `id` and go on without waiting; the barrier opens
// for whoever waits there in bar.sync once `count` threads have arrived or synced. A count is required here.
__device__ __forceinline__ void bar_arrive(unsigned id, unsigned count) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
