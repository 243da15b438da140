// Rung 01_warptiled: FP32 SIMT baseline, step 6 of 6.
// Builds on: 01_vectorized. Two changes, both about keeping the FFMA pipe busy:
//  1. Warp tiling. Each warp owns a WM x WN = 32 x 64 tile of C, and inside it each lane owns a 2 x 2 grid of
//     4 x 4 patches spaced a sub-tile apart. A lane's four 16-byte shared loads per k then hit 8 distinct,
//     consecutive float4s across the warp (the previous rung's 32-byte stride made them 2-way conflicted),
//     and the C stores of a warp land as full 128-byte rows.
//  2. Double buffering. Two shared-memory copies of each tile: while the warps compute on one, the next
//     tile's global loads are already in flight into registers and land in the other copy. One barrier
//     per tile instead of two, and the load latency hides behind 512 FFMAs per thread.
// New PTX: none.  Requires: any CUDA GPU (built for sm_90a here).
//
// C[M,N] = A[M,K] @ B[K,N], fp32, row-major; M, N multiples of 128, K a multiple of 8, 16-byte aligned rows.

constexpr int BM = 128;  // rows of C per block
constexpr int BN = 128;  // columns of C per block
constexpr int BK = 8;    // depth of one shared-memory tile
constexpr int WM = 32;   // rows of C per warp
constexpr int WN = 64;   // columns of C per warp
constexpr int LANES_M = 4;                  // a warp's lanes as a 4 x 8 grid
constexpr int LANES_N = 8;
constexpr int TM = WM / LANES_M;            // 8 rows of C per lane, as 2 patches of 4
constexpr int TN = WN / LANES_N;            // 8 columns of C per lane, as 2 patches of 4
constexpr int WARPS_N = BN / WN;            // 2
constexpr int THREADS = 32 * (BM / WM) * WARPS_N;  // 256
constexpr int MIN_BLOCKS = 2;  // blocks per SM for __launch_bounds__: 2 caps ptxas at 128 registers
constexpr int A_LOADS = BM * BK / 4 / THREADS;     // float4s of A each thread copies per tile
constexpr int B_LOADS = BK * BN / 4 / THREADS;     // and of B

static_assert(LANES_M * LANES_N == 32, "a warp is 32 lanes");
static_assert(TM == 8 && TN == 8, "each lane holds 2 x 2 patches of 4 x 4");
static_assert(A_LOADS >= 1 && B_LOADS >= 1, "tiles must split evenly over threads");

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
sgemm_warptiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K) {
    __shared__ __align__(16) float sA[2][BK][BM];  // [2][BK, BM] fp32, A transposed, double-buffered
    __shared__ __align__(16) float sB[2][BK][BN];  // [2][BK, BN] fp32, double-buffered

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int lm = lane / LANES_N, ln = lane % LANES_N;
    // First row / column of this lane's top-left 4 x 4 patch inside the block tile.
    const int m0 = wm * WM + lm * 4;
    const int n0 = wn * WN + ln * 4;

    const float* gA = A + blockIdx.y * BM * K;
    const float* gB = B + blockIdx.x * BN;
    float* gC = C + blockIdx.y * BM * N + blockIdx.x * BN;

    float4 ldA[A_LOADS], ldB[B_LOADS];  // the next tile, parked in registers while this one is used
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS;  // float4 index in the [BM, BK/4] tile
            ldA[i] = *reinterpret_cast<const float4*>(&gA[(f / (BK / 4)) * K + k0 + f % (BK / 4) * 4]);
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS;  // float4 index in the [BK, BN/4] tile
            ldB[i] = *reinterpret_cast<const float4*>(&gB[(k0 + f / (BN / 4)) * N + f % (BN / 4) * 4]);
        }
    };
    auto store_tile = [&](int buf) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS;
            const int r = f / (BK / 4), c = f % (BK / 4) * 4;
            sA[buf][c + 0][r] = ldA[i].x;
            sA[buf][c + 1][r] = ldA[i].y;
            sA[buf][c + 2][r] = ldA[i].z;
            sA[buf][c + 3][r] = ldA[i].w;
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS;
            *reinterpret_cast<float4*>(&sB[buf][f / (BN / 4)][f % (BN / 4) * 4]) = ldB[i];
        }
    };

    float acc[TM][TN] = {};
    float rA[TM], rB[TN];

    load_tile(0);
    store_tile(0);
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool has_next = k0 + BK < K;
        if (has_next) load_tile(k0 + BK);  // issued now, consumed after the FFMAs below

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // Patches sit 16 rows / 32 columns apart, so the warp's lanes read consecutive float4s.
            *reinterpret_cast<float4*>(&rA[0]) = *reinterpret_cast<const float4*>(&sA[buf][k][m0]);
            *reinterpret_cast<float4*>(&rA[4]) = *reinterpret_cast<const float4*>(&sA[buf][k][m0 + WM / 2]);
            *reinterpret_cast<float4*>(&rB[0]) = *reinterpret_cast<const float4*>(&sB[buf][k][n0]);
            *reinterpret_cast<float4*>(&rB[4]) = *reinterpret_cast<const float4*>(&sB[buf][k][n0 + WN / 2]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += rA[i] * rB[j];
        }

        if (has_next) {
            // The other buffer was last read one iteration ago, before the barrier that ended it,
            // so it is free to overwrite; one barrier then publishes it for the next iteration.
            store_tile(buf ^ 1);
            __syncthreads();
            buf ^= 1;
        }
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = m0 + (i / 4) * (WM / 2) + i % 4;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int c = n0 + (j / 4) * (WN / 2);
            *reinterpret_cast<float4*>(&gC[r * N + c]) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        }
    }
}
