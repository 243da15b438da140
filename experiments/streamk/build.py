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
