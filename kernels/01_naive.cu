// Rung 01_naive: FP32 SIMT baseline, step 1 of 6.
// Builds on: nothing. One thread computes one element of C with a dot product straight out of global memory.
// The mapping is deliberately the "obvious" one: consecutive threads walk DOWN a column of C, so a warp's
// 32 loads of A[row, k] sit K floats apart (32 separate transactions) and so do its 32 stores of C.
// New PTX: none.  Requires: any CUDA GPU (built for sm_90a here).
//
// C[M,N] = A[M,K] @ B[K,N], fp32, row-major, any M, N, K.

constexpr int BM = 32;            // rows of C per block
constexpr int BN = 32;            // columns of C per block
constexpr int THREADS = BM * BN;  // one thread per output element

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
    // threadIdx.x % BM picks the row: neighbouring lanes sit in neighbouring ROWS of C.
    const int row = blockIdx.y * BM + threadIdx.x % BM;
    const int col = blockIdx.x * BN + threadIdx.x / BM;
    if (row >= M || col >= N) return;

    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
