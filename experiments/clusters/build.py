"""The cluster-shape experiment's builds: clusters.cu (chapter 10's kernel in clusters of CLUSTER_M x CLUSTER_N CTAs)
by shape, launched as 10_grouped_order."""
from __future__ import annotations

from pathlib import Path

from helpers.csource import apply_config

KERNEL = Path(__file__).with_name("clusters.cu")
BASE = "10_grouped_order"   # the rung whose launch runs every build here
SHAPES_OF = {"1 x 1": (1, 1), "2 x 1": (2, 1), "1 x 2": (1, 2), "2 x 2": (2, 2)}   # name: (CLUSTER_M, CLUSTER_N)
VARIANTS = {name: {"CLUSTER_M": cm, "CLUSTER_N": cn} for name, (cm, cn) in SHAPES_OF.items()}


def source(config: dict | None = None) -> str:
    """clusters.cu with the constexpr overrides `config` applied."""
    return apply_config(KERNEL.read_text(), config or {})


def cluster_source(cm: int, cn: int) -> str:
    return source({"CLUSTER_M": cm, "CLUSTER_N": cn})
