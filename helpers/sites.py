"""Stall sites: where in the SASS the warps of a rung wait, from Nsight Compute's source counters (issue "counters",
item 1). A stall reason's name is not enough to say what a kernel waits for: `barrier` counts warps at a
`BAR.SYNC` (__syncthreads, named barriers) and also at `WARPGROUP.DEPBAR` (wgmma.wait_group: a warpgroup waiting for
its own tensor-core work) and at the cluster barrier; `long_scoreboard` in a warp-specialized kernel is mostly the
polling of an mbarrier. Nsight Compute attributes every sampled stall to the instruction the warp was stopped at, so
the site, not the reason, says which.

    sites = stall_sites(parse_source_csv(ncu_stdout))   # the top sites, each with its share of all stall samples
    python3 -m tools.stall_sites [RUNG ...] [--n N ...]  records them (results section "stall_sites"); the profile
                                                          of the same rung and size carries them (helpers.profile)

How a site is read: the source page (`ncu --page source --print-source sass --csv`) has one row per SASS instruction
with its address, its text and its samples ("Warp Stall Sampling (All Samples)"; the per-reason columns where the
installed ncu prints them). Samples of the profiled launches are summed per address. Two readings of where a sample
lands: a branch that closes an mbarrier wait loop (a `BRA` within a few instructions after `SYNCS.PHASECHK`, the
try_wait) is that wait's site, the warp spinning on the try_wait's predicate (`long_scoreboard`); and
`BAR.SYNC.DEFER_BLOCKING` lets the warp issue on past the barrier until an instruction that must wait, so `barrier`
samples a few instructions after a barrier are that barrier's (seen on the H200: 18% of rung 07's samples on the
`BSSY` two instructions after its `BAR.SYNC`, 0.1% on the BAR itself).
"""
from __future__ import annotations

import csv
import io
import re

ALL_SAMPLES = "Warp Stall Sampling (All Samples)"
NOT_ISSUED = "Warp Stall Sampling (Not-issued Samples)"
EXECUTED = "Instructions Executed"   # warp-level executions of the instruction, summed over the profiled launches
TOP = 8              # sites kept per profile
LOOP_WINDOW = 4      # instructions after a try_wait within which a branch is that wait loop's

# What each waiting instruction is, in the words of the source (first match wins; the opcode without modifiers).
KINDS = (
    (re.compile(r"^WARPGROUP\.DEPBAR"), "wgmma.wait_group, waiting for its own wgmmas"),
    (re.compile(r"^WARPGROUP\.ARRIVE"), "wgmma.fence"),
    (re.compile(r"^UCGABAR_WAIT|^CGABAR"), "barrier.cluster.wait, the cluster barrier"),
    (re.compile(r"^UCGABAR_ARV"), "barrier.cluster.arrive"),
    (re.compile(r"^BAR\.(SYNC|RED|ARV)"), "bar.sync, __syncthreads or a named barrier"),
    (re.compile(r"^SYNCS\.PHASECHK"), "mbarrier.try_wait"),
    (re.compile(r"^SYNCS\.ARRIVE"), "mbarrier.arrive"),
    (re.compile(r"^(HGMMA|QGMMA|IGMMA)"), "wgmma issue"),
    (re.compile(r"^(HMMA|IMMA)"), "mma.sync"),
    (re.compile(r"^LDSM"), "ldmatrix"),
    (re.compile(r"^STSM"), "stmatrix"),
    (re.compile(r"^(LDS|STS|LDGSTS)"), "shared-memory load/store"),
    (re.compile(r"^(LDG|STG|LD|ST)(\.|$)"), "global-memory load/store"),
    (re.compile(r"^UBLKCP|^UTMALDG|^UTMASTG|^UTMA"), "TMA copy"),
    (re.compile(r"^(FFMA|FADD|FMUL)"), "FP32 math"),
    (re.compile(r"^(BRA|BRX|JMP)"), "branch"),
    (re.compile(r"^EXIT"), "exit"),
)
WAIT_LOOP = "mbarrier.try_wait loop, spinning on a ring slot"
MMA = re.compile(r"^(HGMMA|QGMMA|IGMMA|HMMA|IMMA)")
BARRIERS = re.compile(r"^(BAR\.|UCGABAR_|CGABAR|WARPGROUP\.DEPBAR)")


def opcode(sass: str) -> str:
    """The instruction's opcode with its modifiers (WARPGROUP.DEPBAR.LE), without the predicate guard (@P0, @!PT)."""
    tokens = sass.split()
    if tokens and tokens[0].startswith("@"):
        tokens = tokens[1:]
    return tokens[0].rstrip(";") if tokens else "?"


def kind_of(op: str) -> str:
    return next((what for pattern, what in KINDS if pattern.match(op)), "other")


def _number(text: str) -> float:
    try:
        return float((text or "").replace(",", ""))
    except ValueError:
        return 0.0


def parse_source_csv(stdout: str) -> list[dict]:
    """The SASS rows of `ncu --csv --page source --print-source sass` output, summed per address over every profiled
    launch: [{"address", "sass", "samples", "not_issued", "executed", "reasons": {reason: samples}}] in address
    order. A header
    row is one that names "Address" and "Source"; the rows under it that have its width are instructions."""
    rows = list(csv.reader(io.StringIO(stdout)))
    by_address: dict[str, dict] = {}
    header = None
    for row in rows:
        if "Address" in row and "Source" in row:
            header = row
            continue
        if header is None or len(row) != len(header):
            continue
        cells = dict(zip(header, row))
        address = cells["Address"].strip()
        if not address:
            continue
        site = by_address.setdefault(address, {"address": address, "sass": cells["Source"].strip(), "samples": 0.0,
                                               "not_issued": 0.0, "executed": 0.0, "reasons": {}})
        site["samples"] += _number(cells.get(ALL_SAMPLES, ""))
        site["executed"] += _number(cells.get(EXECUTED, ""))
        site["not_issued"] += _number(cells.get(NOT_ISSUED, ""))
        for column, text in cells.items():
            # stall_<reason> columns split the site's samples by reason; their "(Not Issued)" twins are subsets
            if column.startswith("stall_") and not column.endswith("(Not Issued)"):
                value = _number(text)
                if value:
                    name = column[len("stall_"):]
                    site["reasons"][name] = site["reasons"].get(name, 0.0) + value
    return sorted(by_address.values(), key=lambda s: int(s["address"], 16) if re.fullmatch(r"(0x)?[0-9a-fA-F]+",
                                                                                             s["address"]) else 0)


def stall_sites(instructions: list[dict], top: int = TOP) -> dict:
    """{"total_samples", "mma_executed", "sites": the `top` instructions by samples, each with its share of all
    samples, opcode, kind, leading reasons and how often it ran}; no sites when nothing was sampled. mma_executed is
    how often the first tensor-core instruction ran (once per warp and k step for a k loop's first wgmma), so a
    site that ran as often sits in the k loop, once per warp and k tile. "All samples" are every sampled warp, the
    ones issuing too (reason "selected"): a share is of the warps' time, and `reasons` says how much of a site's
    share was waiting."""
    total = sum(s["samples"] for s in instructions)
    ops = [opcode(s["sass"]) for s in instructions]
    mma = next((s["executed"] for s, op in zip(instructions, ops) if MMA.match(op)), None)
    if total <= 0:
        return {"total_samples": 0, "mma_executed": mma, "sites": []}
    sites = []
    for i in sorted(range(len(instructions)), key=lambda j: -instructions[j]["samples"])[:top]:
        s, op = instructions[i], ops[i]
        kind = kind_of(op)
        reasons = sorted(s["reasons"].items(), key=lambda kv: -kv[1])[:3]
        before = ops[max(0, i - LOOP_WINDOW):i]
        barrier = next((o for o in reversed(before) if BARRIERS.match(o)), None)
        if kind == "branch" and any(o.startswith("SYNCS.PHASECHK") for o in before):
            kind = WAIT_LOOP
        elif reasons and reasons[0][0] == "barrier" and barrier and not BARRIERS.match(op):
            # BAR.SYNC.DEFER_BLOCKING: the warp issues on past the barrier and blocks at a later instruction, so
            # the barrier's samples land a few instructions after it
            kind = f"{kind_of(barrier)}, sampled a few instructions after it"
        sites.append({"address": s["address"], "sass": s["sass"], "opcode": op, "kind": kind,
                      "share": round(s["samples"] / total, 4), "executed": s["executed"],
                      "reasons": {name: round(v / s["samples"], 3) for name, v in reasons} if s["samples"] else {}})
    return {"total_samples": int(total), "mma_executed": mma, "sites": sites}


def by_kind(entry: dict) -> dict[str, float]:
    """Shares of all stall samples per kind of site, over the recorded top sites (what a chapter's sentence reads:
    "half of the samples wait at wgmma.wait_group")."""
    out: dict[str, float] = {}
    for s in entry.get("sites", []):
        out[s["kind"]] = round(out.get(s["kind"], 0.0) + s["share"], 4)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def sentence(entry: dict, sites: int = 2) -> str:
    """The leading sites in words: "50% at WARPGROUP.DEPBAR.LE (wgmma.wait_group: ...), 12% at ..."."""
    top = entry.get("sites", [])[:sites]
    return ", ".join(f"{s['share']:.0%} at `{s['opcode']}` ({s['kind']})" for s in top) or "no stall samples"


def phrase(site: dict) -> str:
    """One site in a sentence: "`WARPGROUP.DEPBAR.LE` (28% of all samples; wgmma.wait_group, ...)"; a site whose kind
    says nothing of a wait ("other", "branch") names its leading reason instead."""
    what = site["kind"]
    if what in ("other", "branch") and site.get("reasons"):
        reasons = site["reasons"]  # a results file keeps its keys sorted by name: the largest is read, not the first
        what = f"{what}, mostly `{max(reasons, key=reasons.get)}`"
    return f"`{site['opcode']}` ({site['share']:.0%} of all samples; {what})"
