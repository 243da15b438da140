"""One prepared launch of a rung: the shape validated, the geometry, the loaded kernel and its argument convention.

    lau = prepare("10_beyond_cublas", 4096)     # refuses a bad shape in one sentence, before anything runs
    a, b = lau.inputs(); c = lau.output()       # fresh random operands, a NaN-poisoned C
    lau(a, b, c)                                # arrays checked (shape, dtype, layout, alignment), then launched

`check` (is it right?) and `bench` (how fast?) both take a Launch, so a rung is launched one way everywhere.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .build import build
from .gpu import launch_arch, require_live
from .registry import Rung, rung as _rung

MAX_GRID_Y = 65535  # gridDim.y and .z are 16-bit; only .x goes to 2^31 - 1


class ShapeError(ValueError):
    """The kernel cannot take this shape, dtype or buffer; raised before anything is launched."""


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


def square(m: int, n: int | None, k: int | None) -> tuple[int, int, int]:
    """(M, N, K) with N and K defaulting to M. Only a missing size defaults: 0 stays 0 and is refused later."""
    return m, m if n is None else n, m if k is None else k


def variant_source(r: Rung, overrides: dict) -> str | None:
    """The rung's source with constexpr overrides applied (None: the file as it is)."""
    from .build import apply_config
    return apply_config(r.path.read_text(), overrides) if overrides else None


def _misfit(r: Rung, m: int, n: int, k: int, consts: dict) -> str | None:
    for dim, value in (("M", m), ("N", n), ("K", k)):
        if dim in r.divides and value % consts[r.divides[dim]]:
            step = consts[r.divides[dim]]
            return (f"{r.id} handles {dim} only in multiples of {step} ({r.divides[dim]}); "
                    f"got {dim}={value}: pad to {-(-value // step) * step} or pick an earlier rung.")
    return None


def _tiles(r: Rung) -> list[tuple[dict, dict, float]]:
    """(overrides, constants, steady rate) of every tile a launch of r may use: its own first, then r.tile_choices."""
    return [(overrides, build(r, variant_source(r, overrides)).consts, rate)
            for overrides, rate in (({}, 1.0), *r.tile_choices)]


def tile_candidates(r: Rung) -> list[tuple[dict, int, int, float]]:
    """The tiles a launch of r may use: its own, then r.tile_choices, as (overrides, rows, columns, rate) with
    rows per cluster tile (what M must divide into) and columns per tile."""
    return [(overrides, c[r.divides.get("M", r.tile[0])], c[r.tile[1]], rate) for overrides, c, rate in _tiles(r)]


def choose_tile(r: Rung, m: int, n: int, k: int, workers: int) -> list[dict]:
    """helpers.explore.pick_tile over r's tiles that fit M x N x K, for `workers` resident clusters."""
    from .explore import pick_tile
    fits = [(overrides, c[r.divides.get("M", r.tile[0])], c[r.tile[1]], rate) for overrides, c, rate in _tiles(r)
            if _misfit(r, m, n, k, c) is None]
    return pick_tile(m, n, fits, workers) if fits else []


def validate(r: Rung, m: int, n: int, k: int, source: str | None = None) -> None:
    """Refuse, in one sentence, a shape the rung (or its variant `source`) cannot handle. Needs no GPU. A rung
    with tile choices takes a shape that any of its tiles divides."""
    if min(m, n, k) < 1:
        raise ShapeError(f"{r.id} needs positive M, N, K; got {m}x{n}x{k}.")
    consts = build(r, source).consts
    misfit = _misfit(r, m, n, k, consts)
    if misfit and source is None and r.tile_choices:  # fits one of its tiles, or say what the smallest needs
        misfit = None if choose_tile(r, m, n, k, 1) else _misfit(r, m, n, k, _tiles(r)[-1][1])
    if misfit:
        raise ShapeError(misfit)
    if max(m * k, k * n, m * n) >= 2**31:
        raise ShapeError(f"{r.id} indexes with 32-bit ints, so no operand may hold 2^31 elements; got {m}x{n}x{k}.")
    if r.grid == "tiles" and -(-m // consts[r.tile[0]]) > MAX_GRID_Y:
        raise ShapeError(f"{r.id} launches one block row per {consts[r.tile[0]]} rows of C, and a grid has at most "
                         f"{MAX_GRID_Y} rows of blocks; M={m} needs {-(-m // consts[r.tile[0]])}: split M.")


# FP8 operands travel as their uint8 codes: CuPy has no FP8 dtype (helpers.fp8 encodes and decodes them). Random
# ones are standard-normal data stored with a per-tensor scale of 1/16, so they reach about +-90 of e4m3's +-448 and
# the scale is exact; an FP8 rung multiplies its accumulators by the product of the two tensors' scales.
FP8 = ("e4m3",)
FP8_INPUT_SCALE = 2.0**-4


def cp_dtype(dtype: str):
    """The array dtype of a rung dtype name (CuPy has no bfloat16 of its own: ml_dtypes provides it; e4m3 is held
    as uint8 codes)."""
    if dtype == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return {"fp32": np.float32, "fp16": np.float16, "e4m3": np.uint8}[dtype]


def to_bf16(x):
    """float32 -> bfloat16 with round-to-nearest-even, done on the bits (CuPy has no bfloat16 cast)."""
    import cupy as cp
    bits = x.view(cp.uint32)
    rounded = (bits + cp.uint32(0x7FFF) + ((bits >> 16) & cp.uint32(1))) >> 16
    return rounded.astype(cp.uint16).view(cp_dtype("bf16"))


def upcast(x):
    """fp32 copy of an fp32, fp16, bf16 or e4m3 array (exact for all four); bf16 goes through its bits (CuPy cannot
    cast it), e4m3 codes (uint8) through helpers.fp8.decode."""
    if x.dtype == np.dtype(cp_dtype("bf16")):  # methods only, so NumPy arrays work too (CPU tests)
        return (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    if x.dtype == np.uint8:
        from .fp8 import decode
        return decode(x, "e4m3")
    return x.astype(np.float32)


def random_inputs(dtype: str, m: int, n: int, k: int, seed: int | None = None, b_layout: str = "kn"):
    """Fresh standard-normal A [M,K] and B on the GPU, in the rung's dtype. Never zeros. B is [K,N], or
    Bt [N,K] (K-major) when b_layout is "nk"."""
    import cupy as cp
    rng = cp.random.default_rng(seed if seed is not None else int.from_bytes(os.urandom(8), "little"))
    a = rng.standard_normal((m, k), dtype=cp.float32)
    b = rng.standard_normal((k, n) if b_layout == "kn" else (n, k), dtype=cp.float32)
    if dtype == "bf16":
        return to_bf16(a), to_bf16(b)
    if dtype in FP8:
        from .fp8 import encode
        return encode(a / FP8_INPUT_SCALE, dtype), encode(b / FP8_INPUT_SCALE, dtype)
    return a.astype(cp_dtype(dtype)), b.astype(cp_dtype(dtype))


def as_kn(b, b_layout: str):
    """B as a [K, N] operand for cupy.matmul: a transposed view (no copy) when it is stored K-major."""
    return b if b_layout == "kn" else b.T


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


def needs_16_bytes(r: Rung) -> bool:
    """Tiled rungs load and store 16 bytes at a time (LDG.128, cp.async, TMA): their buffers must start on a
    16-byte boundary. The untiled rungs read one element at a time."""
    return bool(r.divides) or r.operands != "pointers"


def check_arrays(r: Rung, a, b, c) -> tuple[int, int, int]:
    """(M, N, K) of C = A @ B, after refusing, in one sentence, arrays the rung cannot take."""
    (m, k), (k2, n) = a.shape, b.shape[::1 if r.b_layout == "kn" else -1]
    want = np.dtype(cp_dtype(r.dtype))
    if k2 != k or c.shape != (m, n):
        form = "B[K,N]" if r.b_layout == "kn" else "Bt[N,K]^T (B stored K-major)"
        raise ShapeError(f"{r.id} computes C[M,N] = A[M,K] @ {form}; got A{a.shape}, B{b.shape}, C{c.shape}.")
    if a.dtype != want or b.dtype != want or c.dtype != np.dtype(cp_dtype(r.out_dtype)):
        held = " (as uint8 codes: helpers.fp8.encode)" if r.dtype in FP8 else ""
        raise ShapeError(f"{r.id} takes {r.dtype} A and B{held} and an {r.out_dtype} C; got {a.dtype}, {b.dtype}, "
                         f"{c.dtype}.")
    if not all(x.flags.c_contiguous for x in (a, b, c)):
        raise ShapeError(f"{r.id} needs row-major contiguous arrays; call cupy.ascontiguousarray first.")
    if needs_16_bytes(r):
        for name, x in (("A", a), ("B", b), ("C", c)):
            if x.data.ptr % 16:
                raise ShapeError(f"{r.id} moves 16 bytes at a time, so {name} must start on a 16-byte boundary; it "
                                 f"starts {x.data.ptr % 16} bytes past one (a sliced view?): pass {name}.copy().")
    return m, n, k


def kernel_args(r: Rung, a, b, c, source: str | None = None, scale: float = 1.0) -> tuple:
    """The launch arguments in the rung's convention: pointers, or TMA tensor maps of A and Bt; an FP8 rung takes
    the dequantization scale (scale_a * scale_b) last."""
    m, k = a.shape
    n = c.shape[1]
    mnk = (np.int32(m), np.int32(n), np.int32(k))
    if r.dtype in FP8:
        if not np.isfinite(scale) or scale == 0:
            raise ShapeError(f"{r.id} multiplies C by scale_a * scale_b; got {scale}, which would zero or poison C.")
        mnk += (np.float32(scale),)
    elif scale != 1.0:
        raise ShapeError(f"{r.id} takes {r.dtype} operands, which carry no scale; only FP8 rungs take one.")
    if r.operands.startswith("tensor_maps"):
        from .tma import tensor_map_2d
        consts = build(r, source).consts
        box_k = consts["BK"]
        # A cluster fetches a shared B tile in slices, one per CTA: the box is the slice.
        maps = (tensor_map_2d(a, consts[r.tile[0]], box_k, dtype=r.dtype),
                tensor_map_2d(b, consts.get("B_BOX_ROWS", consts[r.tile[1]]), box_k, dtype=r.dtype))
        if r.operands == "tensor_maps_c":  # C is written back by TMA stores in [64, C_CHUNK] boxes
            maps += (tensor_map_2d(c, 64, consts["C_CHUNK"], dtype=r.out_dtype),)
        return (*maps, c, *mnk)
    return (a, b, c, *mnk)


@dataclass(frozen=True)
class Launch:
    """Rung r at M x N x K, validated, with its geometry and loaded kernel: what check and bench share."""
    rung: Rung
    m: int
    n: int
    k: int
    grid: tuple
    block: tuple
    smem: int
    source: str | None = None
    kernel: object = field(default=None, compare=False, repr=False)  # the loaded function, looked up once

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    def inputs(self, seed: int | None = None):
        """Fresh random A and B (B in the rung's layout)."""
        return random_inputs(self.rung.dtype, self.m, self.n, self.k, seed, self.rung.b_layout)

    def output(self):
        """C in the rung's output dtype, filled with NaN: every element the kernel forgets stays NaN."""
        import cupy as cp
        c = cp.full((self.m, self.n), cp.nan, dtype=cp.float32)
        return to_bf16(c) if self.rung.out_dtype == "bf16" else c

    def args(self, a, b, c, scale: float = 1.0) -> tuple:
        """Check the arrays against this launch's shape, then build the arguments (tensor maps are encoded here,
        once, not per launch). `scale` is an FP8 rung's scale_a * scale_b."""
        if check_arrays(self.rung, a, b, c) != (self.m, self.n, self.k):
            raise ShapeError(f"this launch of {self.rung.id} was prepared for {self.m}x{self.n}x{self.k}; got "
                             f"A{a.shape}, C{c.shape}.")
        return kernel_args(self.rung, a, b, c, self.source, scale)

    def enqueue(self, args: tuple) -> None:
        """Queue one launch with prepared arguments (no checks and no lookups: the timing loop calls this, and its
        host cost is what the spin kernel must cover)."""
        self.kernel(self.grid, self.block, args, shared_mem=self.smem)

    def __call__(self, a, b, c, scale: float = 1.0) -> None:
        with faults_explained(self.rung):
            self.enqueue(self.args(a, b, c, scale))


def prepare(r: Rung | str, m: int, n: int | None = None, k: int | None = None, source: str | None = None) -> Launch:
    """Validate the shape (one sentence if refused), compile and load the kernel, and work out its geometry."""
    r = _rung(r) if isinstance(r, str) else r
    m, n, k = square(m, n, k)
    validate(r, m, n, k, source)
    if source is None and r.tile_choices:  # the wave napkin picks the tile for this shape, on this chip
        rows = choose_tile(r, m, n, k, resident_clusters(r))
        source = variant_source(r, next(row["config"] for row in rows if row["picked"]))
    fn = function(r, source)  # needs the GPU; compiles and loads before anything is allocated
    grid, block, smem = geometry(r, m, n, source)
    return Launch(r, m, n, k, grid, block, smem, source, fn)


def launch(r: Rung | str, a, b, c, source: str | None = None, scale: float = 1.0) -> None:
    """C = A @ B with rung r (or its variant `source`); C = scale * (A @ B) for an FP8 rung. Shapes, dtypes and
    buffers are checked before the launch."""
    r = _rung(r) if isinstance(r, str) else r
    m, n, k = check_arrays(r, a, b, c)
    prepare(r, m, n, k, source)(a, b, c, scale)
