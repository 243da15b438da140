"""The stream-K experiment's builds: streamk.cu (chapter 10's kernel with a data-parallel + stream-K schedule) with
its switches set, launched as rung 10_chip is (any shape whose rows are whole 16-byte units), and what each build's
plan does at a shape (the same arithmetic as make_plan in the kernel, for the record and the checks)."""
from __future__ import annotations

from pathlib import Path

from helpers.csource import apply_config, read_consts

KERNEL = Path(__file__).with_name("streamk.cu")
BASE = "10_chip"  # the rung whose validation and launch run every build here
# name -> constexpr overrides; "whole tiles" is the same file with the schedule off: rung 10's round robin
BUILDS = {"whole tiles": {"STREAM_K": 0}, "stream-K": {}, "stream-K, tail only": {"SK_WAVES": 0},
          "stream-K, late flag": {"LATE_FLAG": 1}, "stream-K, no fix-up": {"FIXUP": 0}}
TIMING_ONLY = {"stream-K, no fix-up"}  # C is wrong where a tile is cut: timed, never checked
SOLO = {"CLUSTER": 1, "BN": 128, "WGMMA_N": 128}  # at M <= 128 a pair's second CTA would read only zeros


def config_for(m: int, build: dict) -> dict:
    """A build's overrides at M: clusters of one on 128 x 128 tiles where one tile row covers M."""
    return {**(SOLO if m <= 128 else {}), **build}


def source(config: dict | None = None) -> str:
    """streamk.cu with the constexpr overrides `config` applied."""
    return apply_config(KERNEL.read_text(), config or {})


def plan(m: int, n: int, k: int, workers: int, config: dict | None = None) -> dict:
    """make_plan's arithmetic on the host: tiles, k steps a tile, how many run whole, and the k steps a worker's
    stream-K range holds (0 where every tile runs whole)."""
    c = read_consts(source(config))
    tiles = -(-m // c["CLUSTER_BM"]) * -(-n // c["BN"])
    k_tiles = -(-k // c["BK"])
    tail, cut = tiles % workers, 0
    if c["STREAM_K"] and tail and tail * 100 < c["SK_FULL"] * workers:
        cut = tiles if tiles < workers else tail + min(c["SK_WAVES"], tiles // workers) * workers
        if cut * k_tiles < c["MIN_STEPS"] * workers:
            cut = 0
    return {"tiles": tiles, "k_tiles": k_tiles, "workers": workers, "whole": tiles - cut,
            "range_steps": cut * k_tiles / workers}


def pieces(p: dict, w: int) -> list[tuple[int, int, int]]:
    """Worker w's pieces (tile, k0, k1) in the order it runs them, as next_piece walks them in the kernel: its whole
    tiles round robin, then its range of the cut tiles' k steps, split where tiles end. `p` is a plan()."""
    out = [(t, 0, p["k_tiles"]) for t in range(w, p["whole"], p["workers"])]
    steps = (p["tiles"] - p["whole"]) * p["k_tiles"]
    at, end = steps * w // p["workers"], steps * (w + 1) // p["workers"]
    while at < end:
        cut, k0 = divmod(at, p["k_tiles"])
        k1 = min(p["k_tiles"], k0 + end - at)
        out.append((p["whole"] + cut, k0, k1))
        at += k1 - k0
    return out


def peers(p: dict, w: int, tile: int) -> list[int]:
    """The workers whose partials the owner w of a cut tile adds, in k order (the kernel's loop over w + 1, ...)."""
    steps = (p["tiles"] - p["whole"]) * p["k_tiles"]
    tile_end = (tile - p["whole"] + 1) * p["k_tiles"]
    return [q for q in range(w + 1, p["workers"]) if steps * q // p["workers"] < tile_end]
