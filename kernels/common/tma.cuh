// The Tensor Memory Accelerator (sm_90): bulk tensor copies described by a host-built tensor map. Chapter 07 on.
#pragma once

// CUtensorMap is 128 opaque bytes, 64-byte aligned. NVRTC cannot include <cuda.h>, so it is declared here; the
// host fills it with cuTensorMapEncodeTiled (helpers/tma.py) and passes it by value as a __grid_constant__.
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [map, {x, y}], [bar]:
// copy the box at (x = inner coordinate, y = row) into shared memory, swizzled as the map says, and count its
// bytes against the barrier's expect_tx. Issued by a single thread.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap* map, int x, int y, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}
