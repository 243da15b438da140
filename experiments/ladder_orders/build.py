"""The ladder-orders experiment's builds: chapter 10's five switches as a lattice of 32 configs of its file. P (the
persistent launch) picks the launch, not the source: off, the same rung runs one block per tile (grid "tile_list"),
under an id of its own (the cache key)."""
from __future__ import annotations

import itertools
from dataclasses import replace

from helpers.csource import apply_config
from helpers.registry import rung

FLAGS = "PCSEF"
# 10_grouped_order carries no registry config, so a source's constants stand (a rung's own config would override them)
PERSISTENT = rung("10_grouped_order")
TILE_LIST = replace(PERSISTENT, id="10_grouped_order_tile_list", grid="tile_list")
BUILDS = ["".join(c) for k in range(len(FLAGS) + 1) for c in itertools.combinations(FLAGS, k)]


def name(on: str) -> str:
    """The build's name: its five flags, '-' for each switch off ("P-S-F")."""
    return "".join(f if f in on else "-" for f in FLAGS)


def config(on: str) -> dict:
    return {"CLUSTER": 2 if "C" in on else 1, "SCHEDULE": int("S" in on), "EPILOGUE": 2 if "E" in on else 0,
            "STAGES": 4 if "F" in on else 3}


VARIANTS = {name(on): config(on) for on in BUILDS}


def source(cfg: dict | None = None) -> str:
    """Chapter 10's file with the constexpr overrides `cfg` applied."""
    return apply_config(PERSISTENT.path.read_text(), cfg or {})


def build(on: str):
    """(the rung whose launch runs it, its source) for the switches `on` ("PCS")."""
    return (PERSISTENT if "P" in on else TILE_LIST), source(config(on))
