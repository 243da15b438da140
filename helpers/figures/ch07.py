"""Chapter 07 (TMA): fig_load_instructions, fig_tma_box, fig_mbarrier_phase, fig_ring_parity."""
from __future__ import annotations

from ..compiler import build
from ..hardware import CHUNK, WARP
from ..models import mbarrier_countdown, ring_parities
from .common import BF16, axes, clean


def fig_tma_box(ax=None, m: int = 384, k: int = 512, block_row: int = 1, kt: int = 2):
    """A [m, k] bf16 drawn to scale (K across, M down) with the grid of TMA boxes [BM rows, BK columns]. One block
    (blockIdx.y = block_row) walks along K: the box it asks for at k tile kt, and the next one."""
    from matplotlib.patches import Rectangle

    c = build("07_tma").consts
    bm, bk = c["BM"], c["BK"]
    assert m % bm == 0 and k % bk == 0, "the example tensor must be a whole number of boxes"
    row_bytes, stride = bk * BF16, k * BF16
    ax = axes(ax, (10.4, 6.4))
    ax.add_patch(Rectangle((0, 0), k, m, facecolor="0.96", edgecolor="black", lw=1.2))
    for x in range(bk, k, bk):
        ax.plot([x, x], [0, m], color="0.78", lw=0.8)
    for y in range(bm, m, bm):
        ax.plot([0, k], [y, y], color="0.78", lw=0.8)
    y0, x0 = block_row * bm, kt * bk
    ax.add_patch(Rectangle((0, y0), k, bm, facecolor="tab:blue", alpha=0.08, edgecolor="none"))
    ax.text(x0 + 2 * bk + 10, y0 + bm - 8, f"blockIdx.y = {block_row}: its {k // bk} k tiles",
            ha="left", va="bottom", fontsize=8.5, color="tab:blue")
    ax.add_patch(Rectangle((x0, y0), bk, bm, facecolor="tab:blue", alpha=0.6, edgecolor="tab:blue", lw=2))
    ax.add_patch(Rectangle((x0 + bk, y0), bk, bm, facecolor="none", edgecolor="tab:orange", lw=2, ls="--"))
    ax.text(x0 + bk / 2, y0 + bm / 2, f"k tile\n{kt}", ha="center", va="center", fontsize=9, color="white",
            fontweight="bold")
    ax.text(x0 + 1.5 * bk, y0 + bm / 2, f"k tile\n{kt + 1}", ha="center", va="center", fontsize=9,
            color="tab:orange", fontweight="bold")
    ax.plot([x0], [y0], "o", color="black", ms=6, zorder=5)
    ax.annotate(f"box origin {{x, y}} = {{kt * BK, blockIdx.y * BM}} = {{{x0}, {y0}}}\n"
                f"the only operands thread 0 computes for this copy", xy=(x0, y0), xytext=(8, -40),
                fontsize=8.5, ha="left", va="center", arrowprops=dict(arrowstyle="->", lw=1))
    ax.annotate(f"next iteration: {{{x0 + bk}, {y0}}} (x += BK)", xy=(x0 + 1.5 * bk, y0 + bm),
                xytext=(x0 + 1.2 * bk, y0 + 1.45 * bm), fontsize=8.5, ha="left", va="center", color="tab:orange",
                arrowprops=dict(arrowstyle="->", lw=1, color="tab:orange"))
    # One box row: 128 contiguous bytes; the next row starts one global stride later.
    yr = m + 16
    ax.annotate("", xy=(x0, yr), xytext=(x0 + bk, yr), arrowprops=dict(arrowstyle="<->", lw=1))
    ax.text(x0 + bk / 2, yr + 8, f"BK = {bk} bf16 = {row_bytes} B contiguous\n(at most 128 B with the 128-byte swizzle)",
            ha="center", va="top", fontsize=8.5)
    ax.annotate("", xy=(k + 8, y0), xytext=(k + 8, y0 + bm), arrowprops=dict(arrowstyle="<->", lw=1))
    ax.text(k + 16, y0 + bm / 2, f"BM = {bm} rows\n(at most 256)", ha="left", va="center", fontsize=8.5)
    ax.text(k + 16, 0.5 * bm, f"one box of A:\n{bm} rows x {row_bytes} B\n= {bm * row_bytes:,} B\n\n"
            f"one box of Bt:\n{c['BN']} rows x {row_bytes} B\n= {c['BN'] * row_bytes:,} B",
            ha="left", va="center", fontsize=8.5)
    ax.text(k + 16, 2.5 * bm, f"consecutive rows are\nK x 2 = {stride:,} B apart\nin global memory (the\n"
            f"map's stride: a multiple\nof 16 B)", ha="left", va="center", fontsize=8.5)
    ax.set_xlim(-8, k + 150)
    ax.set_ylim(m + 62, -78)
    ax.set_aspect("equal")
    ax.set_xticks(range(0, k + 1, bk))
    ax.set_yticks(range(0, m + 1, bm))
    ax.set_xlabel(f"k: dimension 0 of the map (innermost, contiguous); global dims {{K, M}} = {{{k}, {m}}}",
                  fontsize=9)
    ax.set_ylabel("m: dimension 1 (rows)", fontsize=9)
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    clean(ax, ("bottom", "right"))
    ax.set_title(f"A [{m}, {k}] bf16 to scale, cut into TMA boxes of {{BK, BM}} = {{{bk}, {bm}}}: one instruction, "
                 f"one box", fontsize=10, pad=10)
    return ax


def fig_mbarrier_phase(ax=None, error: int = 1024):
    """One phase of one ring slot's full barrier: the transaction bytes still pending as the A box and then the Bt
    box land (bytes assumed to arrive at an even rate), for expect_tx exact, `error` bytes too large and too small.
    Drawn from mbarrier_countdown; the phase completes when pending arrivals and pending bytes are both zero. The
    inset magnifies the last few KiB, where the three cases part."""
    c = build("07_tma").consts
    a_bytes, b_bytes = c["BM"] * c["BK"] * BF16, c["BN"] * c["BK"] * BF16
    total = a_bytes + b_bytes
    cases = (("exact", c["TX_BYTES"], "tab:green"),
             (f"{error:,} B too large", c["TX_BYTES"] + error, "tab:red"),
             (f"{error:,} B too small", c["TX_BYTES"] - error, "tab:purple"))
    ax = axes(ax, (10.4, 5.2))
    zoom = ax.inset_axes([0.40, 0.38, 0.57, 0.55])
    ends = []
    for label, expect, colour in cases:
        events = mbarrier_countdown(expect, [a_bytes, b_bytes])
        landed = [x for _, x, _, _ in events]           # x axis: bytes delivered so far
        pending = [p for _, _, p, _ in events]
        done = [d for *_, d in events]
        assert not done[0], "one arrival with expect_tx must not complete the phase by itself"
        for a in (ax, zoom):
            a.plot(landed, pending, color=colour, lw=2, marker="o", ms=4,
                   label=f"expect_tx {label}: {expect:,} B")
        if pending[-1] > 0:
            assert not done[-1]
            ends.append((colour, None, pending[-1]))
        else:
            assert done[-1]
            x_zero = landed[done.index(True)]           # the byte at which the count reached zero
            zoom.plot([x_zero], [0], marker="*", ms=15, color=colour, zorder=5)
            ends.append((colour, x_zero, pending[-1]))
    for a in (ax, zoom):
        a.axhline(0, color="black", lw=0.8)
    lo = total - 4 * error
    zoom.set_xlim(lo, total + 4.6 * error)
    zoom.set_ylim(-2.2 * error, 4.2 * error)
    zoom.tick_params(labelsize=8)
    zoom.set_title(f"the last {4 * error:,} bytes, magnified", fontsize=8.5)
    for colour, x_zero, p in ends:
        if x_zero is None:
            zoom.annotate(f"stops at {p:,} B: never\ncompletes; the waits spin\n(this build traps after 4 s)",
                          xy=(total, p), xytext=(total + 0.5 * error, 3.0 * error), fontsize=8, color=colour,
                          va="center",
                          arrowprops=dict(arrowstyle="->", color=colour))
        elif p < 0:
            zoom.annotate(f"completes with {total - x_zero:,.0f} B still in flight;\nthe {-p:,} B left over count\n"
                          f"against the next phase", xy=(x_zero, 0), xytext=(lo + 0.1 * error,
                          -1.5 * error), va="center", fontsize=8, color=colour, arrowprops=dict(arrowstyle="->", color=colour))
        else:
            zoom.annotate("completes as the\nlast byte lands", xy=(x_zero, 0), xytext=(total + 1.6 * error,
                          -0.6 * error), fontsize=8, color=colour, va="center",
                          arrowprops=dict(arrowstyle="->", color=colour))
    ax.indicate_inset_zoom(zoom, edgecolor="0.5")
    ax.axvline(a_bytes, color="0.7", lw=0.8, ls=":")
    ax.set_xticks([0, a_bytes, total], ["0\narrive.expect_tx", f"{a_bytes:,}\nA box landed",
                                        f"{total:,}\nBt box landed"], fontsize=8.5)
    ax.set_xlim(-1000, total + 5 * error)
    ax.set_ylim(-4000, c["TX_BYTES"] + 4 * error)
    ax.set_xlabel("bytes the two TMA copies have written into the slot (complete_tx counts them off)", fontsize=9)
    ax.set_ylabel("tx-count: bytes still pending", fontsize=9)
    ax.legend(loc="lower left", fontsize=8, frameon=False, title_fontsize=8.5,
              title="thread 0 announces (pending arrivals 1 -> 0):")
    clean(ax)
    ax.set_title(f"One phase of a full barrier (init count 1): ({c['BM']} x {c['BK']} + {c['BN']} x {c['BK']}) x 2 = "
                 f"{c['TX_BYTES']:,} bytes per k tile", fontsize=10)
    return ax


def fig_load_instructions(ax=None):
    """Napkin from constants: what one block spends to load one k tile, rung 06 (a 16-byte cp.async per copy, from
    every thread) against rung 07 (one expect_tx and two tensor copies, from one thread); and, last, the registers
    per thread ptxas gave each kernel (the compiler's report for the whole kernel, not only its loads). Log scale."""
    import numpy as np
    from matplotlib.patches import Patch

    b6, b7 = build("06_wgmma_wide"), build("07_tma")
    c6, c7 = b6.consts, b7.consts
    stage = c6["STAGE_BYTES"]
    assert stage == c7["TX_BYTES"], "both rungs load the same tile"
    per_thread = c6["A_LOADS"] + c6["B_LOADS"]
    copies6 = c6["THREADS"] * per_thread                  # cp.async in the whole block
    assert copies6 * CHUNK == stage
    warps6 = c6["THREADS"] // WARP * per_thread           # warp instructions the schedulers issue
    a_box, b_box = c7["BM"] * c7["BK"] * BF16, c7["BN"] * c7["BK"] * BF16
    tma = 1 + 2                                           # arrive.expect_tx + one box of A + one box of Bt
    regs6, regs7 = (b.resources[e].registers for b, e in ((b6, "gemm_wgmma"), (b7, "gemm_tma")))
    groups = [
        ("instructions per block\n(counted per thread)", (copies6, f"{copies6:,} cp.async: {c6['THREADS']} threads x "
         f"{per_thread} ({c6['A_LOADS']} of A + {c6['B_LOADS']} of Bt)"),
         (tma, "3, all from thread 0: expect_tx + 2 tensor copies")),
        ("warp instructions the\nschedulers issue for them", (warps6, f"{warps6}: {c6['THREADS'] // WARP} warps x "
         f"{per_thread} LDGSTS, plus each copy's address math"), (tma, "3, from one warp (31 lanes idle)")),
        ("bytes one copy\ninstruction moves", (CHUNK, f"{CHUNK} B"),
         (a_box, f"{a_box:,} B (A box), {b_box:,} B (Bt box)")),
        ("registers per thread\n(ptxas, whole kernel)", (regs6, f"{regs6}"), (regs7, f"{regs7}")),
    ]
    ax = axes(ax, (10.4, 4.6))
    h = 0.36
    for i, (label, (v6, t6), (v7, t7)) in enumerate(groups):
        y = len(groups) - 1 - i
        for dy, v, t, colour in ((h / 2, v6, t6, "tab:blue"), (-h / 2, v7, t7, "tab:orange")):
            ax.barh(y + dy, v, height=h * 0.92, color=colour)
            ax.text(v * 1.2, y + dy, t, va="center", fontsize=8.5)
    ax.set_xscale("log")
    ax.set_xlim(0.8, 1e7)
    ax.set_yticks(np.arange(len(groups))[::-1], [g[0] for g in groups], fontsize=8.5)
    ax.legend(handles=[Patch(color="tab:blue", label="06_wgmma_wide: cp.async from every thread"),
                       Patch(color="tab:orange", label="07_tma: TMA from thread 0")],
              loc="lower right", fontsize=8.5, frameon=False)
    ax.set_xlabel(f"per k tile of {stage:,} bytes, one {c7['BM']} x {c7['BN']} block (log scale; counts from the "
                  f"kernels' constants, registers from ptxas; nothing measured)", fontsize=9)
    clean(ax)
    ax.set_title("What loading one k tile costs the block: cp.async from every thread vs TMA from one",
                 fontsize=10)
    return ax


def fig_ring_parity(ax=None, tiles: int = 8):
    """Which ring slot each k tile uses and which phase parity its wait names: tile kt sits in slot kt % STAGES on
    lap kt // STAGES, and the consumers wait for parity lap & 1 (the k-th phase of a barrier has parity k & 1)."""
    from matplotlib.patches import Rectangle

    c = build("07_tma").consts
    stages = c["STAGES"]
    steps = ring_parities(stages, tiles)
    colours = ("tab:cyan", "tab:pink")
    ax = axes(ax, (11.0, 4.4))
    for s in steps:
        kt, slot, lap, parity = s["it"], s["slot"], s["lap"], s["consumer_waits_full"]
        assert parity == (kt // stages) & 1
        ax.add_patch(Rectangle((kt, slot), 0.92, 0.86, facecolor=colours[parity], edgecolor="white"))
        issued = "prologue" if kt < stages - 1 else f"kt = {kt - (stages - 1)}"
        ax.text(kt + 0.46, slot + 0.43, f"tile {kt}\nissued: {issued}\nphase {lap}\nwait parity {parity}",
                ha="center", va="center", fontsize=8)
    for lap in range(1, -(-tiles // stages)):
        ax.axvline(lap * stages - 0.04, color="black", lw=1, ls="--")
        ax.text(lap * stages - 0.1, -0.25, f"ring wraps: lap {lap}", ha="right", va="center", fontsize=8.5)
    ax.set_xlim(-0.1, tiles + 0.1)
    ax.set_ylim(stages + 0.05, -0.5)
    ax.set_yticks([s + 0.43 for s in range(stages)], [f"slot {s}: full[{s}]" for s in range(stages)], fontsize=8.5)
    ax.set_xticks([])
    ax.set_xlabel(f"k tile (STAGES = {stages}): the consumers wait on full[kt % {stages}] for parity "
                  f"(kt / {stages}) & 1", fontsize=9)
    clean(ax, ("top", "right", "bottom"))
    ax.set_title("Each slot's barrier completes one phase per lap; the wait names that phase by its parity",
                 fontsize=10)
    return ax
