// Chapter 00 probes: three microbenchmarks that measure the ceilings the roofline is drawn with.
//  probe_copy     HBM bandwidth: a large device-to-device copy, 16 bytes per thread per step.
//  probe_l2_read  L2 bandwidth: many passes over a buffer that fits in L2, loaded with ld.global.cg so
//                 the per-SM L1 cannot serve the repeats.
//  probe_ffma     FFMA issue peak: independent chains of fused multiply-adds, no memory traffic at all.
// New PTX: ld.global.cg (via __ldcg).  Requires: any CUDA GPU (built for sm_90a here).

constexpr int THREADS = 256;  // block size of every probe
constexpr int CHAINS = 8;     // independent FFMA chains per thread: enough to cover the FFMA latency

extern "C" __global__ void __launch_bounds__(THREADS)
probe_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n4) {
    for (long long i = blockIdx.x * (long long)THREADS + threadIdx.x; i < n4; i += (long long)gridDim.x * THREADS)
        dst[i] = src[i];
}

extern "C" __global__ void __launch_bounds__(THREADS)
probe_l2_read(const float4* __restrict__ src, long long n4, int passes, float* __restrict__ sink) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const long long stride = (long long)gridDim.x * THREADS;
    for (int p = 0; p < passes; ++p)
        for (long long i = blockIdx.x * (long long)THREADS + threadIdx.x; i < n4; i += stride) {
            const float4 v = __ldcg(&src[i]);  // .cg: cache in L2 only, so every pass really reaches L2
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
    // One store per thread keeps the loads alive; its traffic is negligible next to the reads.
    sink[blockIdx.x * THREADS + threadIdx.x] = acc.x + acc.y + acc.z + acc.w;
}

extern "C" __global__ void __launch_bounds__(THREADS)
probe_ffma(float* __restrict__ sink, int iters, float b, float c) {
    float x[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) x[j] = threadIdx.x + j;
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) x[j] = fmaf(x[j], b, c);  // b, c are run-time values: no folding
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += x[j];
    sink[blockIdx.x * THREADS + threadIdx.x] = s;
}
