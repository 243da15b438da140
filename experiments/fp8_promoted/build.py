"""The promoted-FP8 experiment's builds: configs of chapter 12's file (12_fp8.cu), launched as rung 12."""
from __future__ import annotations

from dataclasses import replace

from helpers.csource import apply_config
from helpers.registry import rung

BASE = "12_fp8"
NARROW = {"BN": 128, "WGMMA_N": 128}   # 12_fp8_promoted's tile, without its promotion
EVERY_256 = "12_fp8_promoted, every 256 k"
# Built as rung 12 with these constants: a registry rung's own config would override a source's (helpers.kernel),
# so the build's rung is 12_fp8 with OVERLAP = 0 (its overlapped epilogue is written for the fast-accumulation loop)
EVERY_256_CONFIG = {"PROMOTE": 2, "BN": 128, "WGMMA_N": 128}
EVERY_256_RUNG = replace(rung(BASE), config={**rung(BASE).config, "OVERLAP": 0})
VARIANTS = {"12_fp8, 128 x 128": NARROW, EVERY_256: EVERY_256_CONFIG}


def source(config: dict | None = None) -> str:
    """Chapter 12's file with the constexpr overrides `config` applied."""
    return apply_config(rung(BASE).path.read_text(), config or {})


def every_256() -> str:
    return source(EVERY_256_CONFIG)
