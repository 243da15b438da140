// Shared-memory addressing, used by every rung from chapter 03 on.
#pragma once

// The 32-bit shared-window address of a generic pointer into shared memory: what ldmatrix, stmatrix, cp.async,
// mbarrier, TMA and the wgmma descriptors take. cvta.to.shared under the hood.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
