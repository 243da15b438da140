"""The wgmma_issue experiment's builds, by name: each is wgmma_issue.cu (chapter 00's BF16 wgmma probe, alone, with an
optional GEMM consumer's handshake around each group) with a config of its constexpr switches, built and launched as
the probe hgmma_peak (its entry, probe_hgmma)."""
from __future__ import annotations

from pathlib import Path

from helpers.csource import apply_config

KERNEL = Path(__file__).with_name("wgmma_issue.cu")
BASE = "hgmma_peak"   # the probe whose entry (probe_hgmma) every build here defines

# name: the constexpr config. THREADS 256: two warpgroups a CTA, 128: one; HGMMA_GROUP: wgmmas per commit group;
# HANDSHAKE 1: the consumer's barrier wait, fence and release around each group.
BUILDS = {"two warpgroups, one CTA": {"THREADS": 256, "HGMMA_GROUP": 4, "HANDSHAKE": 0},
          "one warpgroup": {"THREADS": 128, "HGMMA_GROUP": 4, "HANDSHAKE": 0},
          "one warpgroup, 8 a group": {"THREADS": 128, "HGMMA_GROUP": 8, "HANDSHAKE": 0},
          "two CTAs of one warpgroup": {"THREADS": 128, "HGMMA_GROUP": 4, "HANDSHAKE": 0},
          "two warpgroups + handshake": {"THREADS": 256, "HGMMA_GROUP": 4, "HANDSHAKE": 1},
          "one warpgroup + handshake": {"THREADS": 128, "HGMMA_GROUP": 4, "HANDSHAKE": 1}}


def source(config: dict | None = None) -> str:
    """wgmma_issue.cu with the constexpr overrides `config` applied."""
    return apply_config(KERNEL.read_text(), config or {})


def source_of(name: str) -> str:
    """The source of a build by name."""
    return source(BUILDS[name])
