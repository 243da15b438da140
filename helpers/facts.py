"""What a kernel's source says about its launches, read from the text with no compile: its constants (with the
registry's config applied, exactly as the build sees them), its tile, its block size and shared memory, and the
shapes its tile constants refuse. The tile policy (helpers.tiles) chooses from these facts before any variant is
built; helpers.kernel holds the same facts for the one build a launch uses.

    f = facts(rung("10_chip"))      # the rung as built
    f.consts["BN"], f.tile, f.misfit(4096, 4160, 4096)
    facts(r, variant_source(r, {"BN": 192, "WGMMA_N": 192}))   # a tile variant, still uncompiled
"""
from __future__ import annotations

from dataclasses import dataclass

from .csource import apply_config, read_consts
from .formats import ITEMSIZE
from .registry import Probe, Rung, lookup


@dataclass(frozen=True, eq=False)
class Facts:
    """The constants of a rung or probe (or a variant of one) and what follows from them alone."""
    item: Rung | Probe
    consts: dict

    @property
    def threads(self) -> int:
        return self.consts[self.item.threads]

    @property
    def smem(self) -> int:
        return self.consts.get("SMEM_BYTES", 0)

    @property
    def tile(self) -> tuple[int, int]:
        """(rows, columns) of C one block computes."""
        return self.consts[self.item.tile[0]], self.consts[self.item.tile[1]]

    def misfit(self, m: int, n: int, k: int) -> str | None:
        """Why this kernel cannot take M x N x K, or None: a tile constant that does not divide it or, for a ragged
        rung (its edges read zeros and its stores clip), a row that is no whole number of 16-byte units."""
        r = self.item
        if getattr(r, "ragged", False):
            return ragged_misfit(r, n, k)
        for dim, value in (("M", m), ("N", n), ("K", k)):
            if dim in r.divides and value % self.consts[r.divides[dim]]:
                step = self.consts[r.divides[dim]]
                return (f"{r.id} handles {dim} only in multiples of {step} ({r.divides[dim]}); "
                        f"got {dim}={value}: pad to {-(-value // step) * step} or pick an earlier rung.")
        return None


def ragged_misfit(r: Rung, n: int, k: int) -> str | None:
    """A ragged rung's one rule: TMA steps from row to row in whole 16-byte units, so K inputs (a row of A and of
    Bt) and N outputs (a row of C) must each fill some. None where they do."""
    for dim, value, dtype, rows in (("K", k, r.dtype, "A's and Bt's rows"), ("N", n, r.out_dtype, "C's rows")):
        step = 16 // ITEMSIZE[dtype]
        if value % step:
            return (f"{r.id} moves {rows} with TMA, which needs rows of whole 16-byte units: {dim} must be a "
                    f"multiple of {step} ({dtype}); got {dim}={value}: pad to {-(-value // step) * step}.")
    return None


def variant_source(r: Rung, overrides: dict) -> str | None:
    """The text of rung r's file with constexpr overrides applied (a tile choice, a tuning experiment, an
    instrumented build); no overrides: None, the rung itself."""
    return apply_config(r.path.read_text(), overrides) if overrides else None


_FACTS: dict = {}


def facts(item: Rung | Probe | str, source: str | None = None) -> Facts:
    """The facts of a rung or probe (by object or id), or of its variant `source`, read once per process. The
    registry's constexpr config applies either way, as it does to the build."""
    item = lookup(item) if isinstance(item, str) else item
    key = (type(item).__name__, item.id, source)
    if key not in _FACTS:
        text = item.path.read_text() if source is None else source
        _FACTS[key] = Facts(item, read_consts(apply_config(text, getattr(item, "config", {}))))
    return _FACTS[key]
