"""The bf16_c_8192 experiment's builds, by name. Rung 09's variants are bf16_c_8192.cu (rung 09's kernel: C_STORE = 2
writes bf16 C with chapter 10's paired stores, CLUSTER_LAUNCH = 1 adds __cluster_dims__(1, 1, 1)); 10_bf16_c_per_tile
without its __cluster_dims__ is experiments/bf16_stores/bf16_stores.cu with the lanes paired, configured as the
registry configures that rung. The others are rungs as the registry builds them."""
from __future__ import annotations

from pathlib import Path

from experiments.bf16_stores.build import configured, source as stores_source
from helpers.registry import rung

KERNEL = Path(__file__).with_name("bf16_c_8192.cu")


def source(config: dict | None = None) -> str:
    """bf16_c_8192.cu, configured as the registry configures rung 09, with the overrides `config` (CLUSTER_LAUNCH
    among them)."""
    return configured(KERNEL, {**rung("09_setmaxnreg").config, **(config or {})})


def variants() -> dict:
    """name -> (rung id, source or None): each profiled with the C its rung's launch allocates (rung 09's fp32 C
    is twice what its bf16 build writes)."""
    return {"09_setmaxnreg": ("09_setmaxnreg", None),
            "09_cluster_launch": ("09_setmaxnreg", source({"CLUSTER_LAUNCH": 1})),
            "09_bf16_c": ("09_setmaxnreg", source({"C_STORE": 2})),
            "10_bf16_c_per_tile": ("10_bf16_c_per_tile", None),
            "10_bf16_c_per_tile_no_cluster_launch": (
                "10_bf16_c_per_tile",
                stores_source({**rung("10_bf16_c_per_tile").config, "PAIRED": 1, "CLUSTER_LAUNCH": 0})),
            "10_persistent": ("10_persistent", None),
            "10_bf16_c": ("10_bf16_c", None)}
