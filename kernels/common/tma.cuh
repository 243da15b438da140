// The Tensor Memory Accelerator (sm_90): bulk tensor copies described by a host-built tensor map. Chapter 07 on.
#pragma once

// CUtensorMap is 128 opaque bytes, 64-byte aligned. NVRTC cannot include <cuda.h>, so it is declared here; the
// host fills it with cuTensorMapEncodeTiled (helpers/tma.py) and passes it by value as a __grid_constant__.
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

// prefetch.tensormap [map]: bring the cache line holding the tensor map (generic address of a __grid_constant__
// parameter: the .param space) into the cache the copies read it from, for later cp.async.bulk.tensor (PTX ISA,
// "prefetch"). A hint: the first copy would fetch it anyway, later. Issued by one thread.
__device__ __forceinline__ void prefetch_tensormap(const TensorMap* map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [map, {x, y}], [bar]:
// copy the box at (x = inner coordinate, y = row) into shared memory, swizzled as the map says, and count its
// bytes against the barrier's expect_tx. Issued by a single thread.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap* map, int x, int y, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}

// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
//   [dst], [map, {x, y}], [bar], mask: one read of global memory lands at the same shared offset `dst` in every
// CTA of the cluster named by the bits of `mask`, and counts its bytes on the barrier at offset `bar` in each.
// Chapter 10: the two CTAs of a cluster share one operand tile and each fetches half of it.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const TensorMap* map, int x, int y, unsigned bar,
                                                      unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
                 : "memory");
}

// cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [map, {x, y}], [src]: the copy engine writes the box at
// (x, y) of global memory from shared memory. The shared tile must have been written by ordinary stores that
// the async proxy can see: fence.proxy.async.shared::cta in every writing thread, then a barrier, then this.
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, int x, int y, unsigned src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                 ::"l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(src)
                 : "memory");
}

// cp.async.bulk.commit_group: close the bulk stores issued so far by this thread into one group.
__device__ __forceinline__ void cp_async_bulk_commit_group() {
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// cp.async.bulk.wait_group.read N: wait until at most N of this thread's groups still READ shared memory.
// Their global writes may still be in flight, but their source tiles may be overwritten.
template <int N>
__device__ __forceinline__ void cp_async_bulk_wait_group_read() {
    static_assert(N >= 0 && N <= 7, "cp.async.bulk.wait_group.read takes a small immediate");
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// cp.async.bulk.wait_group N: wait until at most N groups are incomplete, global writes included.
template <int N>
__device__ __forceinline__ void cp_async_bulk_wait_group() {
    static_assert(N >= 0 && N <= 7, "cp.async.bulk.wait_group takes a small immediate");
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
