// Rung 02_wmma_smem: tensor cores, step 2. BF16 in, FP32 accumulate.
// Builds on: 02_wmma_naive. The block stages a [BM, BK] tile of A and a [BK, BN] tile of B in shared memory with
// 16-byte loads, and each warp computes a 32 x 32 patch of C (2 x 2 WMMA tiles) from there: every global byte is
// now reused by the whole block, and each A fragment feeds two MMAs. Rows are padded by 8 elements (16 bytes)
// so the fragment loads do not all land in the same banks.
// New PTX: none beyond 02_wmma_naive.  Requires: sm_80+ (built for sm_90a here).
//
// C[M,N] = A[M,K] @ B[K,N]: A, B bf16 row-major, C fp32 row-major; M, N multiples of 64, K a multiple of 32.
#include <cuda_bf16.h>
#include <mma.h>

constexpr int BM = 64;                       // rows of C per block
constexpr int BN = 64;                       // columns of C per block
constexpr int BK = 32;                       // depth of one shared-memory tile
constexpr int WM = 16;                       // one WMMA tile: 16 x 16 x 16
constexpr int WN = 16;
constexpr int WK = 16;
constexpr int FRAG_M = 2;                    // WMMA tiles per warp along M
constexpr int FRAG_N = 2;                    // and along N: a warp owns 32 x 32 of C
constexpr int WARPS_N = BN / (WN * FRAG_N);  // 2
constexpr int THREADS = 32 * (BM / (WM * FRAG_M)) * WARPS_N;  // 128
constexpr int PAD = 8;                       // bf16 elements of padding per shared row
constexpr int A_LOADS = BM * BK / 8 / THREADS;  // 16-byte chunks of A each thread copies per tile
constexpr int B_LOADS = BK * BN / 8 / THREADS;  // and of B

using namespace nvcuda;

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_wmma_smem(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
               int M, int N, int K) {
    __shared__ __align__(32) __nv_bfloat16 sA[BM][BK + PAD];  // [BM, BK] bf16, padded rows
    __shared__ __align__(32) __nv_bfloat16 sB[BK][BN + PAD];  // [BK, BN] bf16, padded rows

    const int warp = threadIdx.x / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const __nv_bfloat16* gA = A + blockIdx.y * BM * K;
    const __nv_bfloat16* gB = B + blockIdx.x * BN;

    wmma::fragment<wmma::matrix_a, WM, WN, WK, __nv_bfloat16, wmma::row_major> a[FRAG_M];
    wmma::fragment<wmma::matrix_b, WM, WN, WK, __nv_bfloat16, wmma::row_major> b[FRAG_N];
    wmma::fragment<wmma::accumulator, WM, WN, WK, float> c[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) wmma::fill_fragment(c[i][j], 0.f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 16-byte (8 x bf16) copies; consecutive threads take consecutive chunks of a row: coalesced.
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS, r = f / (BK / 8), c8 = f % (BK / 8) * 8;
            *reinterpret_cast<uint4*>(&sA[r][c8]) = *reinterpret_cast<const uint4*>(&gA[r * K + k0 + c8]);
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS, r = f / (BN / 8), c8 = f % (BN / 8) * 8;
            *reinterpret_cast<uint4*>(&sB[r][c8]) = *reinterpret_cast<const uint4*>(&gB[(k0 + r) * N + c8]);
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BK; kk += WK) {
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
                wmma::load_matrix_sync(a[i], &sA[(wm * FRAG_M + i) * WM][kk], BK + PAD);
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j)
                wmma::load_matrix_sync(b[j], &sB[kk][(wn * FRAG_N + j) * WN], BN + PAD);
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) wmma::mma_sync(c[i][j], a[i], b[j], c[i][j]);
        }
        __syncthreads();  // the tile is overwritten next iteration; nobody may still be reading it
    }

#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int r = blockIdx.y * BM + (wm * FRAG_M + i) * WM, col = blockIdx.x * BN + (wn * FRAG_N + j) * WN;
            wmma::store_matrix_sync(C + r * N + col, c[i][j], N, wmma::mem_row_major);
        }
}
