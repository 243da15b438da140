"""The ping-pong experiment's builds, by name: each is pingpong.cu (chapter 10's kernel with the consumers' switches)
with a config of its constexpr switches, built and launched as 10_grouped_order (rung 10 with its 128 x 256 tile)."""
from __future__ import annotations

from pathlib import Path

from helpers.csource import apply_config

KERNEL = Path(__file__).with_name("pingpong.cu")
BASE = "10_grouped_order"   # the rung whose launch (grid, tensor maps, checks) runs every build here

# The builds the experiment compares. "cooperative" is the file with every switch off: 10_grouped_order's SASS.
VARIANTS = {"cooperative": {}, "ping-pong": {"PINGPONG": 1},
            "ping-pong, 5 stages": {"PINGPONG": 1, "C_BUFFERS": 1}}
# A control: GROUP_M counts tile rows of CLUSTER_BM, half as tall in ping-pong, so its grouped order walks a patch of C
# half as tall. With 16 rows per group the patch is the cooperative kernel's again.
CONTROL = {"cooperative": {}, "ping-pong, 5 stages": VARIANTS["ping-pong, 5 stages"],
           "ping-pong, 5 stages, GROUP_M 16": {"PINGPONG": 1, "C_BUFFERS": 1, "GROUP_M": 16}}
# The follow-ups. A ping-pong consumer on a 128 x 128 tile: two m64n128 wgmmas stacked along M per k step, the same
# 128 accumulators a thread, 32 KiB a stage, six stages.
SQUARE_TILE = {"ping-pong, 128 x 128": {"PINGPONG": 1, "M_WGMMAS": 2, "WGMMA_N": 128, "BN": 128}}
# What the ping-pong builds share, one warpgroup issuing wgmma at a time, without turns: one consumer on 64 x 256.
SINGLE = {"one consumer, 64 x 256": {"CONSUMERS": 1}}
# How a consumer issues: one wgmma group in flight (wait_group<1>), or two (WGMMA_GROUPS = 2: a slot is released two
# k tiles later). Issuing wgmma.fence only before a tile's first k tile was tried too: ptxas puts the fence back
# (C7519) and in the ping-pong build serializes the wgmmas (C7520), so it measures nothing.
ISSUE = {"one consumer": {"CONSUMERS": 1},
         "one consumer, two groups": {"CONSUMERS": 1, "WGMMA_GROUPS": 2},
         "cooperative, two groups": {"WGMMA_GROUPS": 2},
         "ping-pong, 5 stages, two groups": {"PINGPONG": 1, "C_BUFFERS": 1, "WGMMA_GROUPS": 2}}
BUILDS = {**VARIANTS, **CONTROL, **SQUARE_TILE, **SINGLE, **ISSUE}
TRACE_TILES = 64   # pingpong.cu's TRACE_TILES: tiles per consumer in pingpong_trace


def source(config: dict | None = None) -> str:
    """pingpong.cu with the constexpr overrides `config` applied."""
    return apply_config(KERNEL.read_text(), config or {})


def source_of(name: str, traced: bool = False) -> str:
    """The source of a build by name; `traced` adds the clock64 stamps (TRACE = 1)."""
    return source({**BUILDS[name], **({"TRACE": 1} if traced else {})})
