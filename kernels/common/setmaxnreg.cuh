// Register reallocation between warpgroups (sm_90a). Chapter 09.
// Takes effect only when the kernel starts with a register cap (__launch_bounds__(threads, 1)) and each
// warpgroup's role is one branch of a single if/else; ptxas warns when it has to ignore it.
#pragma once

// setmaxnreg.inc.sync.aligned.u32 N: this warpgroup may now use up to N registers per thread.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// setmaxnreg.dec.sync.aligned.u32 N: give registers back to the pool, down to N per thread.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
