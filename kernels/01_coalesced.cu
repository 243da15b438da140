// Rung 01_coalesced: FP32 SIMT baseline, step 2 of 6.
// Builds on: 01_naive. Only the thread -> (row, col) mapping changes: neighbouring lanes now sit in
// neighbouring COLUMNS of C, so a warp's 32 loads of B[k, col..col+31] are one 128-byte transaction, its
// load of A[row, k] is a single broadcast, and its 32 stores of C are one transaction too.
// New PTX: none.  Requires: any CUDA GPU (built for sm_90a here).
//
// C[M,N] = A[M,K] @ B[K,N], fp32, row-major, any M, N, K.

constexpr int BM = 32;            // rows of C per block
constexpr int BN = 32;            // columns of C per block
constexpr int THREADS = BM * BN;  // one thread per output element

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_coalesced(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K) {
    // threadIdx.x % BN picks the column: a warp covers one row segment of 32 columns.
    const int row = blockIdx.y * BM + threadIdx.x / BN;
    const int col = blockIdx.x * BN + threadIdx.x % BN;
    if (row >= M || col >= N) return;

    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
