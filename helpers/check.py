"""Launch a rung and prove it right: fresh random inputs, a NaN-poisoned output, a higher-precision reference."""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .build import build
from .gpu import launch_arch, require_live
from .registry import Rung, rung as _rung

# ||C - ref||_F / ||ref||_F allowed per input dtype (accumulation is fp32 everywhere).
# The 16-bit references are exact up-casts multiplied in fp32, so the only difference left is fp32 summation order.
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-3, "bf16": 1e-3}
# A bf16 C (chapter 10, as cuBLAS writes it) is rounded to 8 significant bits: that alone gives ~1.6e-3.
OUT_TOLERANCE = {"fp32": 0.0, "bf16": 4e-3}


class ShapeError(ValueError):
    """The kernel cannot compute this shape; raised before anything is launched."""


class KernelFault(RuntimeError):
    """A launch did not finish (a trap, an illegal address); the message says what probably happened."""


@contextmanager
def faults_explained(r: Rung):
    """Turn the CUDA error of a kernel that trapped or faulted into one sentence about this rung."""
    import cupy as cp
    try:
        yield
    except (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError) as e:
        why = ("Its mbarrier waits trap after 4 s, so most likely a barrier never completed: an expect_tx byte count "
               "larger than what the TMA copies deliver, or a wrong phase parity."
               if r.operands.startswith("tensor_maps") else "Most likely an out-of-bounds shared or global access.")
        raise KernelFault(f"{r.id} did not finish ({e}). {why} This process's CUDA context is now unusable: restart "
                          f"the Python kernel before the next GPU cell.") from None


@dataclass(frozen=True)
class CheckResult:
    rung: str
    m: int
    n: int
    k: int
    rel_err: float
    tolerance: float
    all_finite: bool

    @property
    def ok(self) -> bool:
        return self.all_finite and self.rel_err <= self.tolerance

    def __str__(self) -> str:
        verdict = "correct" if self.ok else ("WRONG: NaN/Inf in C" if not self.all_finite else "WRONG")
        return (f"{self.rung} {self.m}x{self.n}x{self.k}: rel. error {self.rel_err:.2e} "
                f"(tolerance {self.tolerance:.0e}) -> {verdict}")


def geometry(r: Rung, m: int, n: int, source: str | None = None) -> tuple[tuple, tuple, int]:
    """(grid, block, dynamic smem bytes) for one launch, from the constants in the rung's .cu (or `source`)."""
    c = build(r, source).consts
    bm, bn = c[r.tile[0]], c[r.tile[1]]
    if r.grid == "persistent":  # as many clusters as fit on the chip at once, never more than there are tiles
        cluster = c.get("CLUSTER", 1)
        tiles = (m // (bm * cluster)) * (n // bn)
        grid = (min(resident_clusters(r, source), tiles) * cluster, 1, 1)
    else:
        grid = ((n + bn - 1) // bn, (m + bm - 1) // bm, 1)
    return grid, (c[r.threads], 1, 1), c.get("SMEM_BYTES", 0)


_RESIDENT: dict = {}


def resident_clusters(r: Rung, source: str | None = None) -> int:
    """How many clusters of the rung's kernel the GPU runs at once (cuOccupancyMaxActiveClusters): one per SM
    for clusters of one CTA; fewer than SMs / 2 for pairs where a GPC has an odd SM left over."""
    import ctypes
    bld = build(r, source)
    if bld.cubin not in _RESIDENT:
        fn = function(r, source)
        u = ctypes.c_uint

        class LaunchConfig(ctypes.Structure):  # CUlaunchConfig; the cluster shape comes from __cluster_dims__
            _fields_ = [("grid", u * 3), ("block", u * 3), ("smem", u), ("stream", ctypes.c_void_p),
                        ("attrs", ctypes.c_void_p), ("n_attrs", u)]

        cluster, smem = bld.consts.get("CLUSTER", 1), bld.consts.get("SMEM_BYTES", 0)
        cfg = LaunchConfig((u * 3)(require_live().sms // cluster * cluster, 1, 1), (u * 3)(bld.consts[r.threads], 1, 1),
                           smem, None, None, 0)
        count = ctypes.c_int(0)
        res = ctypes.CDLL("libcuda.so.1").cuOccupancyMaxActiveClusters(ctypes.byref(count), ctypes.c_void_p(fn.kernel.ptr),
                                                                       ctypes.byref(cfg))
        if res != 0 or count.value < 1:
            raise RuntimeError(f"the driver cannot place {r.id} (cuOccupancyMaxActiveClusters returned CUresult {res}, "
                               f"{count.value} clusters): it needs {smem} bytes of shared memory per block.")
        _RESIDENT[bld.cubin] = count.value
    return _RESIDENT[bld.cubin]


def validate(r: Rung, m: int, n: int, k: int, source: str | None = None) -> None:
    """Refuse, in one sentence, a shape the rung (or its variant `source`) cannot handle."""
    if min(m, n, k) < 1:
        raise ShapeError(f"{r.id} needs positive M, N, K; got {m}x{n}x{k}.")
    consts = build(r, source).consts
    for dim, value in (("M", m), ("N", n), ("K", k)):
        if dim in r.divides and value % consts[r.divides[dim]]:
            step = consts[r.divides[dim]]
            raise ShapeError(f"{r.id} handles {dim} only in multiples of {step} ({r.divides[dim]}); "
                             f"got {dim}={value}: pad to {-(-value // step) * step} or pick an earlier rung.")
    if max(m * k, k * n, m * n) >= 2**31:
        raise ShapeError(f"{r.id} indexes with 32-bit ints, so no operand may hold 2^31 elements; got {m}x{n}x{k}.")


def _cp_dtype(dtype: str):
    import cupy as cp
    if dtype == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return {"fp32": cp.float32, "fp16": cp.float16}[dtype]


def random_inputs(dtype: str, m: int, n: int, k: int, seed: int | None = None, b_layout: str = "kn"):
    """Fresh standard-normal A [M,K] and B on the GPU, in the rung's dtype. Never zeros. B is [K,N], or
    Bt [N,K] (K-major) when b_layout is "nk"."""
    import cupy as cp
    rng = cp.random.default_rng(seed if seed is not None else int.from_bytes(os.urandom(8), "little"))
    a = rng.standard_normal((m, k), dtype=cp.float32)
    b = rng.standard_normal((k, n) if b_layout == "kn" else (n, k), dtype=cp.float32)
    if dtype == "bf16":
        return _to_bf16(a), _to_bf16(b)
    return a.astype(_cp_dtype(dtype)), b.astype(_cp_dtype(dtype))


def _to_bf16(x):
    """float32 -> bfloat16 with round-to-nearest-even, done on the bits (CuPy has no bfloat16 cast)."""
    import cupy as cp
    bits = x.view(cp.uint32)
    rounded = (bits + cp.uint32(0x7FFF) + ((bits >> 16) & cp.uint32(1))) >> 16
    return rounded.astype(cp.uint16).view(_cp_dtype("bf16"))


def launch(r: Rung | str, a, b, c, source: str | None = None) -> None:
    """C = A @ B with rung r (or its variant `source`). Shapes and dtypes are checked before the launch."""
    r = _rung(r) if isinstance(r, str) else r
    (m, k), (k2, n) = a.shape, b.shape[::1 if r.b_layout == "kn" else -1]
    want = np.dtype(_cp_dtype(r.dtype))
    if k2 != k or c.shape != (m, n):
        form = "B[K,N]" if r.b_layout == "kn" else "Bt[N,K]^T (B stored K-major)"
        raise ShapeError(f"{r.id} computes C[M,N] = A[M,K] @ {form}; got A{a.shape}, B{b.shape}, C{c.shape}.")
    if a.dtype != want or b.dtype != want or c.dtype != np.dtype(_cp_dtype(r.out_dtype)):
        raise ShapeError(f"{r.id} takes {r.dtype} A and B and an {r.out_dtype} C; got {a.dtype}, {b.dtype}, {c.dtype}.")
    if not all(x.flags.c_contiguous for x in (a, b, c)):
        raise ShapeError(f"{r.id} needs row-major contiguous arrays; call cupy.ascontiguousarray first.")
    validate(r, m, n, k, source)
    grid, block, smem = geometry(r, m, n, source)
    function(r, source)(grid, block, kernel_args(r, a, b, c, source), shared_mem=smem)


def kernel_args(r: Rung, a, b, c, source: str | None = None) -> tuple:
    """The launch arguments in the rung's convention: pointers, or TMA tensor maps of A and Bt."""
    m, k = a.shape
    n = c.shape[1]
    mnk = (np.int32(m), np.int32(n), np.int32(k))
    if r.operands.startswith("tensor_maps"):
        from .tma import tensor_map_2d
        consts = build(r, source).consts
        box_k = consts["BK"]
        # A cluster fetches a shared B tile in slices, one per CTA: the box is the slice.
        maps = (tensor_map_2d(a, consts[r.tile[0]], box_k),
                tensor_map_2d(b, consts.get("B_BOX_ROWS", consts[r.tile[1]]), box_k))
        if r.operands == "tensor_maps_c":  # C is written back by TMA stores in [64, C_CHUNK] boxes
            maps += (tensor_map_2d(c, 64, consts["C_CHUNK"], dtype=r.out_dtype),)
        return (*maps, c, *mnk)
    return (a, b, c, *mnk)


_FUNCTIONS: dict = {}


def function(r: Rung, source: str | None = None):
    """The loaded kernel (cached per cubin). Needs a live GPU that has the rung's features."""
    import cupy as cp
    require_live(r.needs_cc, r.arch)
    bld = build(r, source, arch=launch_arch(r.arch))
    if bld.cubin not in _FUNCTIONS:
        fn = cp.RawModule(path=str(bld.cubin)).get_function(r.entry)
        smem = bld.consts.get("SMEM_BYTES", 0)
        if smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = smem  # opt in past the 48 KiB default
        _FUNCTIONS[bld.cubin] = fn
    return _FUNCTIONS[bld.cubin]


def upcast(x):
    """fp32 copy of an fp32, fp16 or bf16 array; bf16 goes through its bits (CuPy cannot cast it)."""
    import cupy as cp
    if x.dtype == np.dtype(_cp_dtype("bf16")):
        return (x.view(cp.uint16).astype(cp.uint32) << 16).view(cp.float32)
    return x.astype(cp.float32)


def as_kn(b, b_layout: str):
    """B as a [K, N] operand for cupy.matmul: a transposed view (no copy) when it is stored K-major."""
    return b if b_layout == "kn" else b.T


def reference(a, b, b_layout: str = "kn"):
    """cuBLAS in higher precision: fp64 for fp32 inputs; fp32 on exact up-casts of 16-bit inputs."""
    import cupy as cp
    if a.dtype == cp.float32:
        return cp.matmul(a.astype(cp.float64), as_kn(b, b_layout).astype(cp.float64))
    return cp.matmul(upcast(a), as_kn(upcast(b), b_layout))


def check(r: Rung | str, m: int, n: int | None = None, k: int | None = None,
          source: str | None = None) -> CheckResult:
    """Run rung r (or its variant `source`) once on fresh random data with C poisoned by NaN; compare with
    cuBLAS in higher precision."""
    import cupy as cp
    r = _rung(r) if isinstance(r, str) else r
    n, k = n or m, k or m
    validate(r, m, n, k, source)
    function(r, source)  # compile and load before allocating, so a bad variant fails fast
    a, b = random_inputs(r.dtype, m, n, k, b_layout=r.b_layout)
    c = cp.full((m, n), cp.nan, dtype=cp.float32)  # every element the kernel forgets stays NaN
    if r.out_dtype == "bf16":
        c = _to_bf16(c)
    with faults_explained(r):
        launch(r, a, b, c, source)
        cp.cuda.runtime.deviceSynchronize()
    ref = reference(a, b, r.b_layout)
    c = upcast(c)
    finite = bool(cp.isfinite(c).all())
    err = float(cp.linalg.norm(c.astype(ref.dtype) - ref) / cp.linalg.norm(ref)) if finite else float("inf")
    return CheckResult(r.id, m, n, k, err, max(TOLERANCE[r.dtype], OUT_TOLERANCE[r.out_dtype]), finite)
