"""The split-K experiment's builds: splitk.cu (chapter 10's kernel on 128 x 128 tiles in clusters of one, each tile's
K range cut into SPLITS pieces) with SPLITS set, launched as 10_grouped_order; and the unsplit 128 x 128 build, a config of
chapter 10's file."""
from __future__ import annotations

from pathlib import Path

from helpers.csource import apply_config, read_consts
from helpers.registry import rung

KERNEL = Path(__file__).with_name("splitk.cu")
BASE = "10_grouped_order"                                 # the rung whose launch runs every build here
TILE = {"BN": 128, "WGMMA_N": 128, "CLUSTER": 1}     # rung 10's launch at N = 1024: 128 x 128, clusters of one
VARIANTS = {f"SPLITS={s}": {"SPLITS": s} for s in (2, 3, 4)}
CONTROL = {"128 x 128, no split": TILE}              # chapter 10's file on the same tile, unsplit


def source(config: dict | None = None) -> str:
    """splitk.cu with the constexpr overrides `config` applied."""
    return apply_config(KERNEL.read_text(), config or {})


def split_source(splits: int) -> str:
    return source({"SPLITS": splits})


def unsplit_source() -> str:
    """Chapter 10's file on the 128 x 128 tile, without the split."""
    return apply_config(rung(BASE).path.read_text(), TILE)


def fits(m: int, n: int, k: int, splits: int) -> bool:
    """Whether the module's workspace and flags hold a launch at M x N x K with `splits` pieces."""
    c = read_consts(KERNEL.read_text())
    tiles = (m // c["BM"]) * (n // c["BN"])
    return k // c["BK"] >= splits and (splits - 1) * tiles * c["BM"] * c["BN"] <= c["WS_FLOATS"] and \
        tiles * c["CONSUMERS"] <= c["FLAGS"]
