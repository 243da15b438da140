// Rung 01_smem_tiled: FP32 SIMT baseline, step 3 of 6.
// Builds on: 01_coalesced. The block first copies a [BM, BK] tile of A and a [BK, BN] tile of B into shared
// memory, then every thread reads them from there BK times. Each global element is now fetched once per
// block instead of once per thread: 32x fewer global loads for 32x32 tiles.
// New PTX: none (bar.sync via __syncthreads).  Requires: any CUDA GPU (built for sm_90a here).
//
// C[M,N] = A[M,K] @ B[K,N], fp32, row-major, any M, N, K (edges are zero-filled).

constexpr int BM = 32;            // rows of C per block
constexpr int BN = 32;            // columns of C per block
constexpr int BK = 32;            // depth of one shared-memory tile
constexpr int THREADS = BM * BN;  // one thread per output element

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_smem_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K) {
    __shared__ float sA[BM][BK];  // [BM, BK] fp32
    __shared__ float sB[BK][BN];  // [BK, BN] fp32

    const int tr = threadIdx.x / BN;  // this thread's row inside the tile
    const int tc = threadIdx.x % BN;  // and column; lanes run along columns (coalesced, conflict-free)
    const int row = blockIdx.y * BM + tr;
    const int col = blockIdx.x * BN + tc;

    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        // Each thread copies one element of each tile; out-of-range elements become 0 so they add nothing.
        sA[tr][tc] = (row < M && k0 + tc < K) ? A[row * K + k0 + tc] : 0.f;
        sB[tr][tc] = (k0 + tr < K && col < N) ? B[(k0 + tr) * N + col] : 0.f;
        __syncthreads();  // the whole tile must be in place before anyone reads it

#pragma unroll
        for (int k = 0; k < BK; ++k)
            acc += sA[tr][k] * sB[k][tc];  // sA is a broadcast across the warp, sB is one row of banks
        __syncthreads();  // sync again so faster threads don't overwrite the tile others still read
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
