"""The small-tiles experiment's builds: configs of chapter 10's file (one consumer warpgroup, 64-row tiles), launched
as 10_grouped_order. No kernel of its own: CONSUMERS = 1 makes BM = 64."""
from __future__ import annotations

from helpers.csource import apply_config
from helpers.registry import rung

BASE = "10_grouped_order"
VARIANTS = {"64 x 128, clusters of one": {"CONSUMERS": 1, "BN": 128, "WGMMA_N": 128, "CLUSTER": 1},
            "64 x 128, pairs": {"CONSUMERS": 1, "BN": 128, "WGMMA_N": 128},
            "64 x 256, pairs": {"CONSUMERS": 1}}
BUILDS = VARIANTS


def source(config: dict | None = None) -> str:
    """Chapter 10's file with the constexpr overrides `config` applied."""
    return apply_config(rung(BASE).path.read_text(), config or {})


def build_source(name: str) -> str:
    return source(VARIANTS[name])
