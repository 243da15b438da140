// The GPU's nanosecond wall clock (sm_70+). Used by the bounded mbarrier waits (chapter 07 on) and by the
// timing harness's queue prefill (kernels/00_probes.cu, probe_spin).
#pragma once

// mov.u64 %t, %globaltimer: nanoseconds since an arbitrary epoch, the same on every SM (unlike clock64).
__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
    return t;
}
