"""A kernel: one rung or probe (or a learner's variant of either) compiled once, with everything a launch needs
read off that one build: its constants, the loaded function, how many of its clusters fit on the chip, its grid,
and its argument convention.

    kern = kernel("10_chip")   # compiled once per process (NVRTC's cubin is also cached on disk)
    kern.consts["BN"], kern.build.sass() # what the compiler made of it: no GPU needed
    kern.geometry(4096, 4096)            # (grid, block, dynamic smem) of one launch: needs the GPU for a persistent grid
    kern.args(a, b, c)                   # pointers, or TMA tensor maps, in the order the kernel takes them

`helpers.launch` makes a validated launch per shape from a Kernel; bench, check, the timeline and the probes all
load kernels through here, so a rung is compiled and loaded one way everywhere.

A persistent or tile-list kernel (`Rung.grid`) says how its work divides C through optional constexprs; the core
reads only these, and a kernel that declares none is a cluster of CLUSTER CTAs stacked along M over one tile each:
    CLUSTER          CTAs per cluster (default 1)
    UNIT_M, UNIT_N   rows and columns of C one cluster's unit of work covers (default BM * CLUSTER, and BN: the
                     block tile's rows times CLUSTER, and its columns)
    UNITS_PER_TILE   units of work per UNIT_M x UNIT_N tile of C (default 1; more where the kernel splits K)
    A_BOX_ROWS       rows of the TMA box of A (default BM, the block tile's rows) ...
    B_BOX_ROWS       ... and of Bt (default BN): a cluster that shares a tile fetches it in slices, one per CTA
BM and BN are the constants the rung's `tile` names. The grid is then one cluster per unit of work for a tile list,
and for a persistent kernel as many clusters as the driver says fit on the chip at once, never more than units.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from .compiler import Build, build
from .facts import Facts, facts, variant_source
from .formats import FP8, cp_dtype
from .gpu import launch_arch, max_active_clusters, require_live
from .hardware import SMEM_DEFAULT_PER_BLOCK
from .registry import Probe, Rung, lookup

MAX_GRID_Y = 65535  # gridDim.y and .z are 16-bit; only .x goes to 2^31 - 1


class ShapeError(ValueError):
    """The kernel cannot take this shape, dtype or buffer; raised before anything is launched."""


class KernelFault(RuntimeError):
    """A launch did not finish (a trap, an illegal address); the message says what probably happened."""


@contextmanager
def faults_explained(r: Rung | Probe):
    """Turn the CUDA error of a kernel that trapped or faulted into one sentence about this rung."""
    import cupy as cp
    try:
        yield
    except (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError) as e:
        why = ("Its mbarrier waits trap after 4 s, so most likely a barrier never completed: an expect_tx byte count "
               "larger than what the TMA copies deliver, or a wrong phase parity."
               if getattr(r, "operands", "pointers").startswith("tensor_maps")
               else "Most likely an out-of-bounds shared or global access.")
        raise KernelFault(f"{r.id} did not finish ({e}). {why} This process's CUDA context is now unusable: restart "
                          f"the Python kernel before the next GPU cell.") from None


@dataclass(eq=False)
class Kernel:
    """A rung or probe built once. `source` is the text that replaced its .cu file (a variant), or None."""
    item: Rung | Probe
    source: str | None
    build: Build                                             # for the registry's arch: SASS, registers, constants
    _module: object = field(default=None, repr=False)       # the cubin loaded for this GPU, once
    _function: object = field(default=None, repr=False)
    _resident: int | None = field(default=None, repr=False)

    @property
    def facts(self) -> Facts:
        """What the source says, read without the build (the build's constants are the same numbers)."""
        return facts(self.item, self.source)

    @property
    def consts(self) -> dict[str, int]:
        return self.build.consts

    @property
    def threads(self) -> int:
        return self.facts.threads

    @property
    def smem(self) -> int:
        return self.facts.smem

    @property
    def tile(self) -> tuple[int, int]:
        """(rows, columns) of C one block computes."""
        return self.facts.tile

    def misfit(self, m: int, n: int, k: int) -> str | None:
        """Why this kernel cannot take M x N x K because a tile constant does not divide it, or None."""
        return self.facts.misfit(m, n, k)

    def module(self):
        """The cubin loaded on this GPU (compiled for its own architecture where the registry's is an older one's)."""
        if self._module is None:
            import cupy as cp
            require_live(self.item.needs_cc, self.item.arch)
            arch = launch_arch(self.item.arch)
            cubin = self.build.cubin if arch == self.build.arch else build(self.item, self.source, arch=arch).cubin
            self._module = cp.RawModule(path=str(cubin))
        return self._module

    def function(self):
        """The loaded entry function, with its dynamic shared-memory limit raised to what it asks for."""
        if self._function is None:
            fn = self.module().get_function(self.item.entry)
            if self.smem > SMEM_DEFAULT_PER_BLOCK:
                fn.max_dynamic_shared_size_bytes = self.smem  # opt in past the 48 KiB default
            self._function = fn
        return self._function

    def resident_clusters(self) -> int:
        """How many clusters of this kernel the GPU runs at once (the driver's count): one per SM for clusters of
        one CTA; fewer than SMs / 2 for pairs where a GPC has an odd SM left over."""
        if self._resident is None:
            cluster = self.consts.get("CLUSTER", 1)
            grid_x = require_live().sms // cluster * cluster
            self._resident = max_active_clusters(self.function().kernel.ptr, grid_x, self.threads, self.smem)
        return self._resident

    def geometry(self, m: int, n: int) -> tuple[tuple, tuple, int]:
        """(grid, block, dynamic smem bytes) for one launch of a rung at M x N."""
        bm, bn = self.tile
        if self.item.grid in ("persistent", "tile_list"):
            c = self.consts  # the launch-geometry constexprs of the module docstring, with their defaults
            cluster = c.get("CLUSTER", 1)
            # ceil: a ragged rung's edge tiles are units too (the kernel counts them so)
            unit_m, unit_n = c.get("UNIT_M", bm * cluster), c.get("UNIT_N", bn)
            units = -(-m // unit_m) * -(-n // unit_n) * c.get("UNITS_PER_TILE", 1)
            # persistent: as many clusters as fit on the chip at once, never more than units; a list: one per unit
            workers = units if self.item.grid == "tile_list" else min(self.resident_clusters(), units)
            grid = (workers * cluster, 1, 1)
        else:
            grid = ((n + bn - 1) // bn, (m + bm - 1) // bm, 1)
        return grid, (self.threads, 1, 1), self.smem

    @property
    def boxes(self) -> tuple[int, int, int]:
        """(rows of A's TMA box, rows of Bt's, their K columns) for a tensor-map rung: a cluster that shares a tile
        fetches it in slices, one per CTA, and the box is the slice (A_BOX_ROWS, B_BOX_ROWS)."""
        c = self.consts
        return c.get("A_BOX_ROWS", self.tile[0]), c.get("B_BOX_ROWS", self.tile[1]), c["BK"]

    def args(self, a, b, c, scale: float = 1.0) -> tuple:
        """The launch arguments in the rung's convention: pointers, or TMA tensor maps of A and Bt (and C); an FP8
        rung takes the dequantization scale (scale_a * scale_b) last."""
        r = self.item
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
            a_rows, b_rows, box_k = self.boxes
            maps = (tensor_map_2d(a, a_rows, box_k, dtype=r.dtype), tensor_map_2d(b, b_rows, box_k, dtype=r.dtype))
            if r.operands == "tensor_maps_c":  # C is written back by TMA stores in [64, C_CHUNK] bf16 boxes. An fp32-C
                # build (10_persistent) stores with st.global and never reads the map: it covers C's bytes as bf16.
                cmap = c if r.out_dtype == "bf16" else c.view(cp_dtype("bf16"))
                maps += (tensor_map_2d(cmap, 64, self.consts["C_CHUNK"], dtype="bf16"),)
            return (*maps, c, *mnk)
        return (a, b, c, *mnk)


_KERNELS: dict = {}


def kernel(item: Rung | Probe | str, source: str | None = None) -> Kernel:
    """The rung or probe (by object or id) built once per process; `source` replaces its .cu text (a variant). The
    registry's constexpr config applies either way."""
    item = lookup(item) if isinstance(item, str) else item
    key = (type(item).__name__, item.id, source)
    if key not in _KERNELS:
        _KERNELS[key] = Kernel(item, source, build(item, source))
    return _KERNELS[key]


def overriding(r: Rung, overrides: dict) -> Rung:
    """Rung r, or r with the overrides that differ from its registry config folded into that config: the build
    applies the config over any source, so an override of a constant the config sets must go there to win."""
    wins = {name: value for name, value in overrides.items() if r.config.get(name, value) != value}
    return replace(r, config={**r.config, **wins}) if wins else r


def variant(r: Rung, overrides: dict) -> Kernel:
    """Rung r with constexpr overrides applied to its file (a tile choice, a tuning experiment, an instrumented
    build); no overrides: the rung itself. An override of a constant the registry's config sets wins over the config
    (10_overlap's OVERLAP = 0 where the tile policy finds no CTA with a second tile)."""
    return kernel(overriding(r, overrides), variant_source(r, overrides))


def needs_16_bytes(r: Rung) -> bool:
    """Tiled rungs load and store 16 bytes at a time (LDG.128, cp.async, TMA): their buffers must start on a
    16-byte boundary. The untiled rungs read one element at a time."""
    return bool(r.divides) or r.operands != "pointers"
