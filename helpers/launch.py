"""One launch of a rung at one shape: the shape validated, the tile picked, the geometry worked out, the kernel
loaded. `check` (is it right?) and `bench` (how fast?) both take a Launch, so a rung is launched one way everywhere.
`prepare` goes down once: the registry's rung, its facts (constants read from the source, no compile), the tile
policy's choice (helpers.tiles), the one build it chose (helpers.kernel), the Launch.

    lau = prepare("10_chip", 4096)     # refuses a bad shape in one sentence, before anything runs
    a, b = lau.inputs(); c = lau.output()       # fresh random operands, a NaN-poisoned C
    lau(a, b, c)                                # arrays checked (shape, dtype, layout, alignment), then launched

A build with PDL > 0 (griddepcontrol in its prologue) is launched with programmatic stream serialization
(helpers.pdl): `lau.programmatic` says so, and `dataclasses.replace(lau, programmatic=False)` is the same build
launched plainly, as CuPy launches every other rung.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from .formats import FP8, FP8_INPUT_SCALE, cp_dtype, encode, to_bf16
from .facts import facts
from .gpu import require_live
from .kernel import MAX_GRID_Y, Kernel, ShapeError, faults_explained, kernel, needs_16_bytes, variant
from .registry import Rung, rung as _rung
from .tiles import fits, launch_config


def square(m: int, n: int | None, k: int | None) -> tuple[int, int, int]:
    """(M, N, K) with N and K defaulting to M. Only a missing size defaults: 0 stays 0 and is refused later."""
    return m, m if n is None else n, m if k is None else k


def validate(r: Rung, m: int, n: int, k: int, source: str | None = None) -> None:
    """Refuse, in one sentence, a shape the rung (or its variant `source`) cannot handle. Needs no GPU and no
    compile: the source's constants say it. A rung with tile choices takes a shape that any of its tiles divides."""
    if min(m, n, k) < 1:
        raise ShapeError(f"{r.id} needs positive M, N, K; got {m}x{n}x{k}.")
    own = facts(r, source)
    misfit = fits(r, m, n, k) if source is None else own.misfit(m, n, k)
    if misfit:
        raise ShapeError(misfit)
    if max(m * k, k * n, m * n) >= 2**31:
        raise ShapeError(f"{r.id} indexes with 32-bit ints, so no operand may hold 2^31 elements; got {m}x{n}x{k}.")
    rows = own.tile[0]
    if r.grid == "tiles" and -(-m // rows) > MAX_GRID_Y:
        raise ShapeError(f"{r.id} launches one block row per {rows} rows of C, and a grid has at most "
                         f"{MAX_GRID_Y} rows of blocks; M={m} needs {-(-m // rows)}: split M.")


def takes(r: Rung, m: int, n: int | None = None, k: int | None = None) -> bool:
    """Whether the rung takes an M x N x K problem (N and K default to M): validate, as a yes or no."""
    try:
        validate(r, *square(m, n, k))
    except ShapeError:
        return False
    return True


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
        return encode(a / FP8_INPUT_SCALE, dtype), encode(b / FP8_INPUT_SCALE, dtype)
    return a.astype(cp_dtype(dtype)), b.astype(cp_dtype(dtype))


def as_kn(b, b_layout: str):
    """B as a [K, N] operand for matmul: a transposed view (no copy) when it is stored K-major."""
    return b if b_layout == "kn" else b.T


def check_arrays(r: Rung, a, b, c) -> tuple[int, int, int]:
    """(M, N, K) of C = A @ B, after refusing, in one sentence, arrays the rung cannot take."""
    (m, k), (k2, n) = a.shape, b.shape[::1 if r.b_layout == "kn" else -1]
    want = np.dtype(cp_dtype(r.dtype))
    if k2 != k or c.shape != (m, n):
        form = "B[K,N]" if r.b_layout == "kn" else "Bt[N,K]^T (B stored K-major)"
        raise ShapeError(f"{r.id} computes C[M,N] = A[M,K] @ {form}; got A{a.shape}, B{b.shape}, C{c.shape}.")
    if a.dtype != want or b.dtype != want or c.dtype != np.dtype(cp_dtype(r.out_dtype)):
        held = " (as uint8 codes: helpers.formats.encode)" if r.dtype in FP8 else ""
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


@dataclass(frozen=True)
class Launch:
    """Rung r at M x N x K, validated, with its kernel (the tile picked for this shape) and geometry."""
    kernel: Kernel
    m: int
    n: int
    k: int
    grid: tuple
    block: tuple
    smem: int
    programmatic: bool = False   # queued with programmatic stream serialization (helpers.pdl): it may start under
                                 # the previous kernel of the stream
    _driver: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.programmatic:  # the driver's function and launch config, worked out once (the kernel is loaded)
            from .pdl import config
            object.__setattr__(self, "_driver", config(self.kernel, self.grid, self.block, self.smem))

    @property
    def rung(self) -> Rung:
        return self.kernel.item

    @property
    def source(self) -> str | None:
        return self.kernel.source

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
        args = self.kernel.args(a, b, c, scale)
        if self.programmatic:
            from .pdl import Packed
            return Packed(args)
        return args

    def enqueue(self, args: tuple) -> None:
        """Queue one launch with prepared arguments (no checks and no lookups: the timing loop calls this, and its
        host cost is what the spin kernel must cover)."""
        if self.programmatic:
            from .pdl import enqueue
            enqueue(*self._driver, args, f"{self.rung.id} at {self.m}x{self.n}x{self.k}")
        else:
            self.kernel.function()(self.grid, self.block, args, shared_mem=self.smem)

    def __call__(self, a, b, c, scale: float = 1.0) -> None:
        with faults_explained(self.rung):
            self.enqueue(self.args(a, b, c, scale))


def prepare(r: Rung | str, m: int, n: int | None = None, k: int | None = None, source: str | None = None) -> Launch:
    """Validate the shape (one sentence if refused), pick the tile, build and load the one kernel it picked and
    work out its geometry. The tile policy prices waves with the resident clusters of the rung's own build (the
    driver's count, asked once per build); the grid uses those of the build it launches."""
    r = _rung(r) if isinstance(r, str) else r
    m, n, k = square(m, n, k)
    validate(r, m, n, k, source)
    config = {}
    if source is None and (r.tile_choices or r.solo_clusters):  # the policy picks for this shape, on this chip
        workers = kernel(r).resident_clusters() if r.tile_choices else None
        config = launch_config(r, m, n, k, workers, require_live().sms)
    kern = variant(r, config) if config else kernel(r, source)
    kern.function()  # needs the GPU; loads before anything is allocated
    return Launch(kern, m, n, k, *kern.geometry(m, n), programmatic=kern.consts.get("PDL", 0) > 0)


def gemm(r: Rung | str, a, b, c, source: str | None = None, scale: float = 1.0) -> None:
    """C = A @ B with rung r (or its variant `source`); C = scale * (A @ B) for an FP8 rung. Shapes, dtypes and
    buffers are checked before the launch."""
    r = _rung(r) if isinstance(r, str) else r
    m, n, k = check_arrays(r, a, b, c)
    prepare(r, m, n, k, source)(a, b, c, scale)
