// Rung 02_wmma_naive: tensor cores, step 1. BF16 in, FP32 accumulate.
// Builds on: 01_warptiled (the SIMT ceiling). One warp computes one 16 x 16 tile of C with the WMMA API, loading
// its fragments straight from global memory: per 16-deep k step it reads a 16x16 tile of A and of B (1 KiB) for
// 2*16*16*16 = 8192 FLOP, an intensity of 8 FLOP/byte of global loads. The tensor cores sit mostly idle.
// New PTX: wmma.load / wmma.mma (HMMA in SASS) through nvcuda::wmma.  Requires: sm_80+ (built for sm_90a here).
//
// C[M,N] = A[M,K] @ B[K,N]: A, B bf16 row-major, C fp32 row-major; M, N, K multiples of 16.
#include <cuda_bf16.h>
#include <mma.h>

constexpr int WM = 16;                       // one WMMA tile: 16 x 16 x 16
constexpr int WN = 16;
constexpr int WK = 16;
constexpr int WARPS_M = 2;                   // warps per block along M
constexpr int WARPS_N = 2;                   // and along N
constexpr int BM = WM * WARPS_M;             // 32 rows of C per block
constexpr int BN = WN * WARPS_N;             // 32 columns
constexpr int THREADS = 32 * WARPS_M * WARPS_N;

using namespace nvcuda;

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_wmma_naive(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
                int M, int N, int K) {
    const int warp = threadIdx.x / 32;
    const int row0 = blockIdx.y * BM + (warp / WARPS_N) * WM;  // this warp's 16 x 16 tile of C
    const int col0 = blockIdx.x * BN + (warp % WARPS_N) * WN;
    if (row0 >= M || col0 >= N) return;  // whole warps leave together: WMMA needs all 32 lanes

    wmma::fragment<wmma::matrix_a, WM, WN, WK, __nv_bfloat16, wmma::row_major> a;  // [16, 16] of A
    wmma::fragment<wmma::matrix_b, WM, WN, WK, __nv_bfloat16, wmma::row_major> b;  // [16, 16] of B
    wmma::fragment<wmma::accumulator, WM, WN, WK, float> c;                         // [16, 16] fp32
    wmma::fill_fragment(c, 0.f);

    for (int k0 = 0; k0 < K; k0 += WK) {
        wmma::load_matrix_sync(a, A + row0 * K + k0, K);  // straight from global: no reuse between warps
        wmma::load_matrix_sync(b, B + k0 * N + col0, N);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + row0 * N + col0, c, N, wmma::mem_row_major);
}
