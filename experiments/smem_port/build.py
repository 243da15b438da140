"""The smem_port experiment's builds, by name, and where each runs: every build is smem_port.cu (chapter 00's BF16
wgmma probe with a producer warp landing TMA fills in the same SM's shared memory) with a config of its constexpr
switches, built and launched as PROBE, a probe of its own (entry probe_smem_port, the file in this folder)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from helpers.csource import apply_config
from helpers.registry import probe

KERNEL = Path(__file__).with_name("smem_port.cu")
# chapter 00's wgmma probe (its needs and its sm_90a build), named for this file and entry; the registry's file path is
# relative to kernels/, so the build and its errors name smem_port.cu
PROBE = replace(probe("hgmma_peak"), id="smem_port", title="wgmma beside TMA fills in one SM's shared memory",
                entry="probe_smem_port", file="../experiments/smem_port/smem_port",
                sass_has=("HGMMA.64x256x16.F32.BF16", "UTMALDG.2D", "SYNCS"))

RATES = (0, 16, 32, 48, 64, 80)   # fill bytes a clock at the full tensor rate: FILL_BOXES = rate / 16


def _name(operands: str, rate: int) -> str:
    return f"{operands}, fill {rate}"


# name: the constexpr config. "A+B smem": both operands from shared memory (80 B a clock at the full rate); "A regs":
# A from registers (64 B a clock); "fills only": the producer and the consumers' waits, no wgmma.
BUILDS = {**{_name("A+B smem", r): {"A_IN_REGS": 0, "WGMMA": 1, "FILL_BOXES": r // 16} for r in RATES},
          **{_name("A regs", r): {"A_IN_REGS": 1, "WGMMA": 1, "FILL_BOXES": r // 16} for r in RATES},
          "fills only": {"A_IN_REGS": 0, "WGMMA": 0, "FILL_BOXES": max(RATES) // 16}}

# The grids, as a divisor of the SM count (one CTA an SM). On every SM the fills come from L2 at up to
# rate x 132 SMs x the clock: 32 B a clock at 1.98 GHz is 8.4 TB/s, about the H200's L2 -> SM roof, so the sweep on
# every SM stops there. On a quarter of the SMs 80 B a clock is 5.2 TB/s, under it: the port's sweep, every build.
# On an eighth, 2.6 TB/s: the same sweep where L2 is further still from binding, to show the quarter's is not L2's.
GRIDS = {"all SMs": 1, "quarter of the SMs": 4, "eighth of the SMs": 8}
SWEEP = [_name("A+B smem", r) for r in RATES]
RUNS = {"all SMs": [_name("A+B smem", r) for r in RATES if r <= 32] + ["fills only"],
        "quarter of the SMs": list(BUILDS),
        "eighth of the SMs": SWEEP + ["fills only"]}


def source(config: dict | None = None) -> str:
    """smem_port.cu with the constexpr overrides `config` applied."""
    return apply_config(KERNEL.read_text(), config or {})


def source_of(name: str) -> str:
    """The source of a build by name."""
    return source(BUILDS[name])
