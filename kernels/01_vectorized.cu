// Rung 01_vectorized: FP32 SIMT baseline, step 5 of 6.
// Builds on: 01_blocktile_2d. Same tiles and thread patches; the memory instructions get wider:
//  - global loads and stores move 16 bytes (float4) per thread: LDG.E.128 / STG.E.128;
//  - A is stored TRANSPOSED in shared memory ([BK, BM]) so a thread's 8 A values for one k are contiguous
//    and come in as two 16-byte shared loads (LDS.128), like the 8 B values do. (ptxas had already found
//    LDS.128 for rung 4 by reading whole rows of sA across the unrolled k loop; here the source says it.)
// The wider global instructions also leave ptxas at 125 registers instead of 130: two blocks fit per SM.
// New PTX: none (ld.global.v4.f32, ld.shared.v4.f32 come from float4).  Requires: any CUDA GPU (built for sm_90a).
//
// C[M,N] = A[M,K] @ B[K,N], fp32, row-major; M, N multiples of 128, K a multiple of 8, 16-byte aligned rows.

constexpr int BM = 128;  // rows of C per block
constexpr int BN = 128;  // columns of C per block
constexpr int BK = 8;    // depth of one shared-memory tile
constexpr int TM = 8;    // rows of C per thread
constexpr int TN = 8;    // columns of C per thread
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256
constexpr int MIN_BLOCKS = 0;  // blocks per SM for __launch_bounds__: 0 sets none; 2 caps ptxas at 128 registers

static_assert(BM * BK / 4 == THREADS && BK * BN / 4 == THREADS, "one float4 of A and of B per thread per tile");

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
sgemm_vectorized(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K) {
    __shared__ __align__(16) float sA[BK][BM];  // [BK, BM] fp32, A transposed
    __shared__ __align__(16) float sB[BK][BN];  // [BK, BN] fp32

    const int trow = threadIdx.x / (BN / TN);
    const int tcol = threadIdx.x % (BN / TN);
    const float* gA = A + blockIdx.y * BM * K;
    const float* gB = B + blockIdx.x * BN;
    float* gC = C + blockIdx.y * BM * N + blockIdx.x * BN;

    // Which float4 this thread copies: A as [BM, BK/4] float4s, B as [BK, BN/4] float4s.
    const int a_row = threadIdx.x / (BK / 4), a_col = threadIdx.x % (BK / 4) * 4;
    const int b_row = threadIdx.x / (BN / 4), b_col = threadIdx.x % (BN / 4) * 4;

    float acc[TM][TN] = {};
    float rA[TM], rB[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        const float4 a = *reinterpret_cast<const float4*>(&gA[a_row * K + k0 + a_col]);
        sA[a_col + 0][a_row] = a.x;  // the transpose costs four 4-byte STS per tile (B's float4 is one STS.128)
        sA[a_col + 1][a_row] = a.y;  // and saves no inner-loop loads: rung 4 already read sA as LDS.128, 32 per tile
        sA[a_col + 2][a_row] = a.z;
        sA[a_col + 3][a_row] = a.w;
        *reinterpret_cast<float4*>(&sB[b_row][b_col]) =
            *reinterpret_cast<const float4*>(&gB[(k0 + b_row) * N + b_col]);
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4*>(&rA[i]) = *reinterpret_cast<const float4*>(&sA[k][trow * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&rB[j]) = *reinterpret_cast<const float4*>(&sB[k][tcol * TN + j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += rA[i] * rB[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(&gC[(trow * TM + i) * N + tcol * TN + j]) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}
