// Asynchronous global -> shared copies (sm_80+). Introduced in chapter 05.
#pragma once

// cp.async.cg.shared.global [dst], [src], 16: copy 16 bytes without passing through registers (.cg: L2 only).
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src));
}

// cp.async.commit_group: close the copies issued so far by this thread into one group.
__device__ __forceinline__ void cp_async_commit_group() {
    asm volatile("cp.async.commit_group;\n" ::);
}

// cp.async.wait_group N: wait until at most N of this thread's groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
    static_assert(N >= 0 && N <= 7, "cp.async.wait_group takes an immediate 0..7");
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N));
}
