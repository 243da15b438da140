"""The promoted-FP8 experiment's builds: configs of chapter 12's file (12_fp8.cu), launched as 12_fp8_promoted
(plainly: PDL = 0, OVERLAP = 0) or, for every-256, as rung 12."""
from __future__ import annotations

from helpers.csource import apply_config
from helpers.kernel import overriding
from helpers.registry import rung

BASE = "12_fp8"
PROMOTED = "12_fp8_promoted"
# The promoted rung's summing on narrower tiles: 128 x 128 in one slice (two 64-register buffers: the design
# before the slices), 128 x 192 in three 64-wide ones
TILES = {"promoted, 128 x 128": {"BN": 128, "WGMMA_N": 128}, "promoted, 128 x 192": {"BN": 192, "WGMMA_N": 64}}
TILE_RUNGS = {name: overriding(rung(PROMOTED), config) for name, config in TILES.items()}   # with tile_source(name)
# Controls that split 12_fp8_promoted's distance from rung 12: rung 12 launched as the promoted rung is (no PDL, no
# epilogue under the next tile), and the promoted rung with one add a slice instead of 32 (its slices, buffers and
# waits as built; with no add at all ptxas drops the slices whose sums nobody reads; C is wrong)
PLAIN = "rung 12, launched plainly"
PLAIN_RUNG = overriding(rung(BASE), {"PDL": 0, "OVERLAP": 0})
NO_ADDS = "promoted, one add a slice (C wrong)"
ADD = "for (int i = 0; i < WGMMA_N / 2; ++i) acc[b * WGMMA_N / 2 + i] += before[i];"
EVERY_256 = "12_fp8_promoted, every 256 k"
# Built as rung 12 with these constants, OVERLAP = 0 among them (the overlapped epilogue is written for the
# fast-accumulation loop); rung 12's config sets OVERLAP, so the build's rung carries the override (helpers.kernel).
# A partial sum kept over two k tiles must span the tile: the 128 x 128 tile.
EVERY_256_CONFIG = {"PROMOTE": 2, "BN": 128, "WGMMA_N": 128, "OVERLAP": 0}
EVERY_256_RUNG = overriding(rung(BASE), EVERY_256_CONFIG)


def source(config: dict | None = None) -> str:
    """Chapter 12's file with the constexpr overrides `config` applied."""
    return apply_config(rung(BASE).path.read_text(), config or {})


def every_256() -> str:
    return source(EVERY_256_CONFIG)


def tile_source(name: str) -> str:
    return source(TILES[name])


def no_adds_source() -> str:
    """12_fp8_promoted's source with one add, not 32, for each slice of its k loop (the last slice's, after the
    loop, stays whole)."""
    text = rung(BASE).path.read_text()
    if ADD not in text:
        raise ValueError(f"kernels/12_fp8.cu changed: the no-adds control no longer finds {ADD!r}")
    return apply_config(text.replace(ADD, "acc[b * WGMMA_N / 2] += before[0];"), rung(PROMOTED).config)
