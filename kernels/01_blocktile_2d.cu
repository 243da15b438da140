// Rung 01_blocktile_2d: FP32 SIMT baseline, step 4 of 6.
// Builds on: 01_smem_tiled. Each thread now owns a TM x TN = 8 x 8 patch of C instead of one element.
// Per k it reads TM values of A and TN values of B from shared memory into registers and does TM*TN FFMAs
// on them: 16 values from shared memory feed 64 FFMAs, where the previous rung needed 2 loads per FFMA. (ptxas
// fetches them 16 bytes at a time: with the k loop unrolled it reads each of the thread's 8 rows of sA whole.)
// The block tile grows to 128 x 128, so each global element is reused 128 times.
// New PTX: none.  Requires: any CUDA GPU (built for sm_90a here).
//
// C[M,N] = A[M,K] @ B[K,N], fp32, row-major; M, N multiples of 128 and K a multiple of 8.

constexpr int BM = 128;  // rows of C per block
constexpr int BN = 128;  // columns of C per block
constexpr int BK = 8;    // depth of one shared-memory tile
constexpr int TM = 8;    // rows of C per thread
constexpr int TN = 8;    // columns of C per thread
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256
constexpr int MIN_BLOCKS = 0;  // blocks per SM for __launch_bounds__: 0 sets none; 2 caps ptxas at 128 registers

static_assert((BM * BK) % THREADS == 0 && (BK * BN) % THREADS == 0, "tiles must split evenly over threads");

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
sgemm_blocktile_2d(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                   int M, int N, int K) {
    __shared__ float sA[BM][BK];  // [BM, BK] fp32
    __shared__ float sB[BK][BN];  // [BK, BN] fp32

    const int trow = threadIdx.x / (BN / TN);  // which TM-row band of the block tile
    const int tcol = threadIdx.x % (BN / TN);  // which TN-column band
    const float* gA = A + blockIdx.y * BM * K;  // [BM, K] slab of A this block walks along K
    const float* gB = B + blockIdx.x * BN;      // [K, BN] slab of B
    float* gC = C + blockIdx.y * BM * N + blockIdx.x * BN;

    float acc[TM][TN] = {};
    float rA[TM], rB[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Consecutive threads copy consecutive elements, so each warp's global loads are coalesced.
#pragma unroll
        for (int i = threadIdx.x; i < BM * BK; i += THREADS)
            sA[i / BK][i % BK] = gA[(i / BK) * K + k0 + i % BK];
#pragma unroll
        for (int i = threadIdx.x; i < BK * BN; i += THREADS)
            sB[i / BN][i % BN] = gB[(k0 + i / BN) * N + i % BN];
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // Cache one column of the A patch and one row of the B patch in registers, then reuse each
            // value TN (or TM) times: this register reuse is the whole point of the rung.
#pragma unroll
            for (int i = 0; i < TM; ++i) rA[i] = sA[trow * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) rB[j] = sB[k][tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += rA[i] * rB[j];
        }
        __syncthreads();  // everyone is done with this tile before the next copy overwrites it
    }

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) gC[(trow * TM + i) * N + tcol * TN + j] = acc[i][j];
}
