// Rung 03_mma_sync: tensor cores, step 3. BF16 in, FP32 accumulate.
// Builds on: 02_wmma_smem. WMMA is replaced by the instructions it hides, so every register is ours:
//  - ldmatrix.x4 loads four 8x8 tiles from shared memory into the exact fragment layout of mma.sync;
//    .trans does the same for B, transposing row-major [K, N] on the fly;
//  - mma.sync.m16n8k16 multiplies a 16x16 A fragment by a 16x8 B fragment into 4 fp32 registers per lane.
// Block tile 128 x 128 x 32, 8 warps of 64 x 32 each (4 x 4 MMA tiles), 16-byte global loads through registers,
// the k loop fully unrolled. Shared memory is plain row-major and NOT swizzled: ldmatrix's 8 row addresses
// per phase hit the same banks (A rows are 64 B apart: 4-way conflicts; B rows 256 B: 8-way). Rung 04 fixes it.
// New PTX: ldmatrix.x4(.trans), mma.sync.m16n8k16 (kernels/common/mma_sync.cuh).  Requires: sm_80+.
//
// C[M,N] = A[M,K] @ B[K,N]: A, B bf16 row-major, C fp32 row-major; M, N multiples of 128, K a multiple of 32.
#include <cuda_bf16.h>
#include "common/mma_sync.cuh"

constexpr int BM = 128;                      // rows of C per block
constexpr int BN = 128;                      // columns of C per block
constexpr int BK = 32;                       // depth of one shared-memory tile
constexpr int WM = 64;                       // rows of C per warp
constexpr int WN = 32;                       // columns of C per warp
constexpr int MMA_M = WM / 16;               // 4 m16 tiles per warp
constexpr int MMA_N = WN / 8;                // 4 n8 tiles per warp
constexpr int WARPS_N = BN / WN;             // 4
constexpr int THREADS = 32 * (BM / WM) * WARPS_N;  // 256
constexpr int A_LOADS = BM * BK / 8 / THREADS;     // 16-byte chunks of A per thread per tile
constexpr int B_LOADS = BK * BN / 8 / THREADS;     // and of B

static_assert(MMA_N % 2 == 0, "one ldmatrix.x4.trans feeds two n8 tiles");

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_mma_sync(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
              int M, int N, int K) {
    __shared__ __align__(128) __nv_bfloat16 sA[BM][BK];  // [BM, BK] bf16, row-major, unswizzled
    __shared__ __align__(128) __nv_bfloat16 sB[BK][BN];  // [BK, BN] bf16, row-major, unswizzled

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const __nv_bfloat16* gA = A + blockIdx.y * BM * K;
    const __nv_bfloat16* gB = B + blockIdx.x * BN;

    float acc[MMA_M][MMA_N][4] = {};

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS, r = f / (BK / 8), c = f % (BK / 8) * 8;
            *reinterpret_cast<uint4*>(&sA[r][c]) = *reinterpret_cast<const uint4*>(&gA[r * K + k0 + c]);
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int f = threadIdx.x + i * THREADS, r = f / (BN / 8), c = f % (BN / 8) * 8;
            *reinterpret_cast<uint4*>(&sB[r][c]) = *reinterpret_cast<const uint4*>(&gB[(k0 + r) * N + c]);
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[MMA_M][4], b[MMA_N][2];
            // A: lanes 0-15 point at rows 0-15 (k 0-7), lanes 16-31 at the same rows (k 8-15).
#pragma unroll
            for (int i = 0; i < MMA_M; ++i)
                ldmatrix_x4(a[i], smem_addr(&sA[wm * WM + i * 16 + lane % 16][kk + lane / 16 * 8]));
            // B: lanes 0-15 point at k rows 0-15 of n 0-7, lanes 16-31 at the same k rows of n 8-15.
#pragma unroll
            for (int j = 0; j < MMA_N; j += 2) {
                unsigned r[4];
                ldmatrix_x4_trans(r, smem_addr(&sB[kk + lane % 16][wn * WN + j * 8 + lane / 16 * 8]));
                b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MMA_M; ++i)
#pragma unroll
                for (int j = 0; j < MMA_N; ++j) mma_m16n8k16_bf16(acc[i][j], a[i], b[j]);
        }
        __syncthreads();  // the next tile overwrites sA/sB
    }

    // Accumulator layout of m16n8: lane holds rows lane/4 and lane/4 + 8, columns 2*(lane%4) and +1.
    float* gC = C + (blockIdx.y * BM + wm * WM) * N + blockIdx.x * BN + wn * WN;
#pragma unroll
    for (int i = 0; i < MMA_M; ++i)
#pragma unroll
        for (int j = 0; j < MMA_N; ++j) {
            float* p = gC + (i * 16 + lane / 4) * N + j * 8 + lane % 4 * 2;
            *reinterpret_cast<float2*>(p) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(p + 8 * N) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
