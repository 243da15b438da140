"""The naive and shared-memory tiled SGEMMs again, written with numba.cuda: the Python twins of
kernels/01_naive.cu and kernels/01_smem_tiled.cu. They run on a GPU on CuPy arrays, and under the numba
CUDA simulator (NUMBA_ENABLE_CUDASIM=1) on NumPy arrays, which is how CI proves their indexing with no GPU.
"""
from __future__ import annotations

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 still registers np.row_stack, which NumPy 2.5 removed
    np.row_stack = np.vstack

from numba import cuda, float32  # noqa: E402

TILE = 32  # same block tile as the .cu twins


@cuda.jit
def sgemm_naive(A, B, C):
    # Like 01_naive.cu: x (the fast-moving thread index) runs along ROWS of C, so a warp is uncoalesced.
    row, col = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


@cuda.jit
def sgemm_smem_tiled(A, B, C):
    # Like 01_smem_tiled.cu: stage [TILE, TILE] tiles of A and B in shared memory, zero-filled at the edges.
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tc, tr = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tc
    row = cuda.blockIdx.y * TILE + tr
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for k0 in range(0, K, TILE):
        sA[tr, tc] = A[row, k0 + tc] if row < M and k0 + tc < K else float32(0.0)
        sB[tr, tc] = B[k0 + tr, col] if k0 + tr < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[tr, k] * sB[k, tc]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def run(kernel, A, B, C) -> None:
    """Launch a twin with one thread per element of C and TILE x TILE blocks."""
    m, n = C.shape
    if kernel is sgemm_naive:  # grid x covers rows, y covers columns
        grid = ((m + TILE - 1) // TILE, (n + TILE - 1) // TILE)
    else:                      # grid x covers columns, y covers rows
        grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    kernel[grid, (TILE, TILE)](A, B, C)


TWINS = {"01_naive": sgemm_naive, "01_smem_tiled": sgemm_smem_tiled}


def compare(n: int = 2048, save: bool = True) -> list[dict]:
    """Each twin against its .cu rung on the same GPU and inputs: TFLOP/s of both (interleaved rounds, GPU time
    only), and correctness. Live when a GPU is present (and recorded); otherwise the recorded comparison."""
    from .store import obtain
    return [{**e, "source": source} for e, source in
            (obtain("numba", f"{rid}@{n}", lambda rid=rid: _compare_one(rid, n), save=save) for rid in TWINS)]


def _compare_one(rid: str, n: int) -> dict:
    import cupy as cp
    from .timing import time_gpu
    from .correctness import reference
    from .launch import prepare, random_inputs
    twin = TWINS[rid]
    a, b = random_inputs("fp32", n, n, n)
    c = cp.full((n, n), cp.nan, cp.float32)
    run(twin, a, b, c)  # first call compiles the twin; also the correctness run
    ref = reference(a, b)
    err = float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)) if bool(cp.isfinite(c).all()) else float("inf")
    lau = prepare(rid, n)
    args = lau.args(a, b, c)
    got = time_gpu({"numba": lambda i: run(twin, a, b, c), "cu": lambda i: lau.enqueue(args)}, lau.flops)
    return {"twin": rid, "n": n, "numba_tflops": got["numba"].tflops, "cu_tflops": got["cu"].tflops,
            "rel_err": err, "correct": err < 1e-4}
