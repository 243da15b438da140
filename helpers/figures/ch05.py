"""Chapter 05 (cp.async): fig_cp_async_ring_timeline, fig_cp_async_littles_law, fig_cp_async_register_file."""
from __future__ import annotations

from ..compiler import build
from ..hardware import (KIB, MAX_WARPS_PER_SM, REGISTER_FILE, SCHEDULERS, SMEM_PER_SM, SMEM_RESERVED_PER_BLOCK, SMS,
                        TENSOR_BOOST_HZ, TENSOR_FLOP_PER_CLK)
from ..models import blocks_per_sm, pipeline_schedule
from .common import axes

FILL, LANDED, READ, STALL = "tab:blue", "#9ecae1", "tab:orange", "tab:red"


def _ring_rung(rung_id: str) -> tuple[dict, int]:
    """(constants, registers per thread) of one rung, as this machine's NVRTC builds it."""
    b = build(rung_id)
    return b.consts, next(iter(b.resources.values())).registers


def _ring_tile(c: dict) -> dict:
    """One k tile of one block: FLOP, and bytes the cp.async copies bring (A [BM, BK] and B [BK, BN], bf16)."""
    flop = 2 * c["BM"] * c["BN"] * c["BK"]
    landed = (c["BM"] + c["BN"]) * c["BK"] * 2
    return {"flop": flop, "bytes": landed, "intensity": flop / landed}


def _ring_blocks(c: dict, registers: int, stages: int | None = None) -> int:
    stages = c["STAGES"] if stages is None else stages
    smem = stages * c["STAGE_ELEMS"] * 2 + SMEM_RESERVED_PER_BLOCK
    return blocks_per_sm(registers, c["THREADS"], smem, SMEM_PER_SM)["blocks"]


# ---- figure 1: the ring over time, slot by slot, and the group counter of one thread ------------------------------

def _ring_events(stages: int, tiles: int, copy_time: float, barrier: float = 0.15):
    """From pipeline_schedule: per tile its copy (issue, land) and its math (start, done), and one thread's count of
    pending groups as a step function. A group is issued just after the barrier that follows the wait (drawn
    `barrier` units late, so the moment the count reaches N stays visible); the empty groups committed past the end
    of K complete at once and never show."""
    bars = pipeline_schedule(stages, tiles, copy_time)
    copy = {t: (s, e) for kind, t, s, e in bars if kind == "copy"}
    math = {t: (s, e) for kind, t, s, e in bars if kind == "math"}
    changes = [(s + (barrier if s > 0 else 0.0), +1) for s, _ in copy.values()] + [(e, -1) for _, e in copy.values()]
    times = sorted({0.0, *[t for t, _ in changes]})
    pending = [sum(d for t, d in changes if t <= x) for x in times]
    return copy, math, times, pending


def fig_cp_async_ring_timeline(ax=None, tiles: int = 8, copy_time: float = 3.0):
    """The ring of 05_double_buffer and of 05_cp_async over time, from pipeline_schedule: what each slot holds
    (copy in flight, landed and waiting, read by ldmatrix + mma.sync), when the warps stall in cp.async.wait_group,
    and how many of one thread's groups are pending against the wait's immediate N = STAGES - 2."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rungs = [("05_double_buffer", _ring_rung("05_double_buffer")[0]), ("05_cp_async", _ring_rung("05_cp_async")[0])]
    spans = [max(e for _, e in _ring_events(c["STAGES"], tiles, copy_time)[1].values()) for _, c in rungs]
    xmax = max(spans) + 0.6
    rows = sum(c["STAGES"] + 2 for _, c in rungs) + 1.6 * len(rungs)
    ax = axes(ax, (10.2, 0.42 * rows + 1.6))    # tight width under the 948 px column
    h = 0.62
    y, ticks, labels = 0.0, [], []
    for (name, c), span in zip(rungs, spans):
        S = c["STAGES"]
        n = S - 2
        copy, math, times, pending = _ring_events(S, tiles, copy_time)
        # header
        ax.text(0, y - 1.3, f"{name}: STAGES = {S}, {tiles} k tiles in {span:g} units of one tile's math",
                fontsize=10, weight="bold", va="center")
        ax.text(0, y - 0.7, f"cp.async.wait_group {n} lets a thread pass once at most {n} of its groups are "
                f"pending (red triangles)", fontsize=8.5, color=STALL, va="center")
        # the group counter of one thread, one row of height `step` per possible count 0..S-1
        step = 0.42
        base = y + 0.2

        def level(p, base=base, top=S - 1):                                 # pending count -> y
            return base + step * (top - p)

        ys = [level(p) for p in pending]
        ax.step(times + [xmax], ys + [ys[-1]], where="post", color="black", lw=1.4)
        ax.axhline(level(n), color=STALL, ls=":", lw=1.1)
        for p in range(S):
            ax.text(xmax + 0.1, level(p), str(p), ha="left", va="center", fontsize=8,
                    color=STALL if p == n else "dimgray", clip_on=False)
        for t in range(tiles):
            ax.plot([math[t][0]], [level(n)], "v", color=STALL, ms=5)
        ticks.append(level((S - 1) / 2))
        labels.append("groups pending\n(one thread)")
        # the warps: computing, or stalled in wait_group
        yw = base + step * (S - 1) + 0.95
        prev = 0.0
        for t in range(tiles):
            s, e = math[t]
            if s - prev > 1e-9:
                ax.barh(yw, s - prev, left=prev, height=h, color=STALL, alpha=0.35, hatch="//", edgecolor=STALL)
            ax.barh(yw, e - s, left=s, height=h, color=READ, edgecolor="white")
            ax.text((s + e) / 2, yw, str(t), ha="center", va="center", fontsize=8, color="white")
            ax.plot([s, s], [level(n), yw + h / 2], color="0.55", lw=0.6, ls="--")
            prev = e
        ticks.append(yw)
        labels.append("warps: mma.sync\non tile t")
        # the slots
        for slot in range(S):
            ys_ = yw + 1.0 + slot
            for t in range(slot, tiles, S):
                i0, i1 = copy[t]
                m0, m1 = math[t]
                ax.barh(ys_, i1 - i0, left=i0, height=h, color=FILL, edgecolor="white")
                ax.text((i0 + i1) / 2, ys_, f"copy {t}", ha="center", va="center", fontsize=8, color="white")
                if m0 - i1 > 1e-9:
                    ax.barh(ys_, m0 - i1, left=i1, height=h, color=LANDED, edgecolor="white")
                ax.barh(ys_, m1 - m0, left=m0, height=h, color=READ, edgecolor="white")
            ticks.append(ys_)
            labels.append(f"slot {slot}")
        y = yw + S + 2.7
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.set_xlim(0, xmax)
    ax.set_ylim(y - 1.4, -1.7)
    ax.set_xlabel(f"time, in units of one tile's math (a model: each copy takes {copy_time:g} units to land;\n"
                  "dashed: wait_group returns and the barrier lets the warps start tile t)", fontsize=9)
    ax.legend(handles=[Patch(color=FILL, label="cp.async in flight"), Patch(color=LANDED, label="landed, not yet read"),
                       Patch(color=READ, label="read by ldmatrix + mma.sync"),
                       Patch(facecolor=STALL, alpha=0.35, hatch="//", edgecolor=STALL,
                             label="warps stalled in wait_group"),
                       Line2D([], [], color="black", label="groups pending (step)")],
              fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


# ---- figure 2: Little's law per SM --------------------------------------------------------------------------------

def _deepest_ring(c: dict, registers: int) -> int:
    """The deepest ring that still leaves as many blocks per SM as the double buffer does."""
    deepest = 2
    while _ring_blocks(c, registers, deepest + 1) == _ring_blocks(c, registers, 2):
        deepest += 1
    return deepest


def fig_cp_async_littles_law(ax=None, max_latency: int = 4000):
    """Napkin: to keep the tensor cores at the datasheet peak an SM consumes peak / intensity bytes per clock, so it
    needs that rate x latency bytes in flight. A ring of STAGES slots keeps STAGES - 1 tiles in flight per block,
    which covers (STAGES - 1) x one tile's time of latency. Rungs 05 (STAGES = 2 and 4) are marked."""
    c, regs = _ring_rung("05_cp_async")
    st = _ring_tile(c)
    rate = TENSOR_FLOP_PER_CLK / st["intensity"]                  # bytes per clock per SM at the peak
    ax = axes(ax, (8.6, 5.6))        # tight width under the 948 px column
    xs = [0, max_latency]
    ax.plot(xs, [rate * x / KIB for x in xs], color="black", lw=2)
    stages_max = _deepest_ring(c, regs)
    ymax = (stages_max + 0.6) * 2 * st["bytes"] / KIB
    ax.axvspan(300, 1000, color="0.92", zorder=0)
    ax.text(650, ymax * 0.97, "a few hundred to ~1,000 clk:\nL2 hit to HBM trip\n(order of magnitude,\n"
            "not measured here)", ha="center", va="top", fontsize=8, color="dimgray")
    for S in range(2, stages_max + 1):
        blocks = _ring_blocks(c, regs, S)
        tile_clk = blocks * st["flop"] / TENSOR_FLOP_PER_CLK       # the blocks share the SM's tensor cores
        flight = blocks * (S - 1) * st["bytes"] / KIB
        cover = (S - 1) * tile_clk
        rung = {2: "05_double_buffer", c["STAGES"]: "05_cp_async"}.get(S)
        colour = {2: "tab:blue", c["STAGES"]: "tab:orange"}.get(S, "0.6")
        ax.plot([0, cover], [flight, flight], color=colour, lw=2.4 if rung else 1.2, ls="-" if rung else "--")
        ax.plot([cover], [flight], "o", color=colour, ms=7 if rung else 5)
        label = f"STAGES = {S}: {blocks} x {S - 1} x {st['bytes'] // KIB} KiB = {flight:.0f} KiB"
        label += f" -> covers {cover:,.0f} clk" + (f"  ({rung})" if rung else "")
        ax.text(cover + 60, flight, label, va="center", fontsize=8.5 if rung else 8,
                weight="bold" if rung else "normal", color="black" if rung else "dimgray")
    ax.set(xlim=(0, max_latency), ylim=(0, ymax),
           ylabel="KiB in flight per SM")
    tile_clk = st["flop"] / TENSOR_FLOP_PER_CLK
    blocks = _ring_blocks(c, regs)
    ax.set_title(f"Little's law per SM: block tile {c['BM']} x {c['BN']} x {c['BK']} = {st['intensity']:.0f} FLOP "
                 f"per byte;\none tile = {st['flop']:,} FLOP = {tile_clk:.0f} clk of the SM's tensor peak "
                 f"({TENSOR_FLOP_PER_CLK} FLOP/clk),\n{blocks} blocks share the SM: "
                 f"{blocks * tile_clk:.0f} clk per tile per block", fontsize=10)
    whole = rate * SMS * TENSOR_BOOST_HZ / 1e12
    ax.set_xlabel(f"latency a copy must be hidden behind (SM clocks)\n"
                  f"black line: KiB that must be in flight at the tensor peak, {rate:.0f} B/clk x latency;\n"
                  f"on every SM at once that is {rate:.0f} B/clk x {SMS} SMs x {TENSOR_BOOST_HZ / 1e9:.2f} GHz "
                  f"= {whole:.1f} TB/s from L2\nSTAGES = {stages_max + 1} would leave room for only "
                  f"{_ring_blocks(c, regs, stages_max + 1)} block in {SMEM_PER_SM // KIB} KiB of shared memory",
                  fontsize=8.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


# ---- figure 3: the register file of one SM ------------------------------------------------------------------------

def fig_cp_async_register_file(ax=None):
    """The SM's 65,536 registers as a bar, filled block by block and warp by warp (allocation rounded up to 8 per
    thread, as blocks_per_sm does): rung 04, rung 05, and the 16 warps a 64 x 64 warp tile would need. Hatched: the
    FP32 accumulators of each thread's warp tile. (Exercise 2's block is left for the reader: drawn, it would be the
    answer.)"""
    from matplotlib.patches import Patch

    c4, r4 = _ring_rung("04_swizzle")
    c5, r5 = _ring_rung("05_cp_async")
    acc4, acc5 = c4["WM"] * c4["WN"] // 32, c5["WM"] * c5["WN"] // 32
    quarter = REGISTER_FILE // (4 * c5["THREADS"])                     # per thread, for 4 blocks of rung 05
    rows = [(f"04_swizzle\nwarp tile {c4['WM']} x {c4['WN']}", r4, c4["THREADS"], acc4, None),
            (f"05_cp_async\nwarp tile {c5['WM']} x {c5['WN']}", r5, c5["THREADS"], acc5, None),
            (f"what 4 warps per scheduler\nwould allow ({c5['THREADS']}-thread blocks)", quarter, c5["THREADS"],
             acc5, 4)]
    ax = axes(ax, (8.0, 4.6))       # notes wrapped to 3 lines so the tight width fits the 948 px column
    colours = ["tab:blue", "tab:green", "tab:purple", "tab:olive"]  # one a block
    for y, (label, regs, threads, acc, force) in enumerate(rows):
        fit = blocks_per_sm(regs, threads)
        blocks = force if force else fit["blocks"]
        alloc = fit["registers_per_thread_allocated"]
        warps = threads // 32
        left = 0
        for b in range(blocks):
            for _ in range(warps):
                ax.barh(y, alloc * 32, left=left, height=0.6, color=colours[b % 4], alpha=0.55,
                        edgecolor="white", lw=0.6)
                if acc:
                    ax.barh(y, min(acc, alloc) * 32, left=left, height=0.6, color="none", edgecolor="black",
                            hatch="////", lw=0)
                left += alloc * 32
        if left < REGISTER_FILE:
            ax.barh(y, REGISTER_FILE - left, left=left, height=0.6, color="0.88", edgecolor="white")
        total = blocks * warps
        text = (f"{alloc} x {threads} threads = {alloc * threads:,} registers per block\n-> {blocks} "
                f"block{'s' if blocks > 1 else ''} of {warps} warps = {total} warps, {total / SCHEDULERS:g} per "
                f"scheduler\n(limited by {fit['limited_by']})")
        if force:
            text = (f"{REGISTER_FILE:,} / ({blocks} x {threads}) = {regs} per thread,\nall of them taken by the {acc} "
                    f"accumulators\nof a {c5['WM']} x {c5['WN']} warp tile")
        ax.text(REGISTER_FILE + 800, y, text, va="center", fontsize=8)
    ax.axvline(REGISTER_FILE, color="black", lw=1.2)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8.5)
    ax.set_xticks(range(0, REGISTER_FILE + 1, 8192), [f"{v:,}" for v in range(0, REGISTER_FILE + 1, 8192)],
                  fontsize=8)
    ax.set(xlim=(0, REGISTER_FILE * 1.5), ylim=(len(rows) - 0.5, -0.6))
    ax.set_xlabel(f"32-bit registers of one SM ({REGISTER_FILE:,}); one segment = one warp's allocation\n"
                  f"(rounded up to 8 per thread); {MAX_WARPS_PER_SM} warps at most, {SCHEDULERS} schedulers",
                  fontsize=9)
    ax.legend(handles=[Patch(facecolor="white", edgecolor="black", hatch="////", label="FP32 accumulators"),
                       Patch(color="0.88", label="unused: too few for another block")],
              fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False)
    ax.spines["bottom"].set_bounds(0, REGISTER_FILE)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax
