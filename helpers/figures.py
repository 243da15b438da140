"""Conceptual figures of the Hopper chapters, drawn from the explorers (helpers/explore.py) and from each kernel's
own constants (`build(rung).consts`), so a change to a kernel redraws its picture instead of falsifying it. Each
`fig_*` takes an optional Axes and returns the Axes it drew on.

    chapter 06 (wgmma)                fig_smem_budget, fig_swizzle_atom, fig_accumulator, fig_wgmma_timeline
    chapter 07 (TMA)                  fig_load_instructions, fig_tma_box, fig_mbarrier_phase, fig_ring_parity
    chapter 08 (warp specialization)  fig_stage_clocks, fig_ring, fig_parities, fig_ring_bytes
"""
from __future__ import annotations

import numpy as np

from .build import build
from .explore import (mbarrier_countdown, offset, ring_parities, wgmma_accumulator, wgmma_desc_decode,
                      wgmma_desc_encode)

# Hardware numbers the napkins use (H100 SXM, from the datasheet and the bank structure, not measured here).
TENSOR_FLOP_PER_CLK = 4096     # dense BF16 per SM per clock: 989.4 TFLOP/s / (132 SMs x 1,830 MHz)
SMEM_BYTES_PER_CLK = 128       # 32 banks x 4 bytes per SM per clock, reads and writes alike (napkin assumption)
CHUNK = 16                     # bytes in one core-matrix row (8 bf16), and what one cp.async moves
WARP = 32
KIB = 1024


def _axes(ax, size):
    import matplotlib.pyplot as plt
    return ax if ax is not None else plt.subplots(figsize=size)[1]


# ---- chapter 06: wgmma ----------------------------------------------------------------------------------------

# Hardware constants the napkin uses (H100 SXM, from the spec sheet and the bank structure, not measured here).


def _wgmma_smem_bytes(c: dict) -> tuple[int, int, int]:
    """(FLOP, bytes wgmma reads from shared memory, bytes the copies write) for one block and one k-tile."""
    flop = 2 * c["BM"] * c["BN"] * c["BK"]
    per_wgmma = (64 * 16 + c["WGMMA_N"] * 16) * 2          # A [64, 16] and B [WGMMA_N, 16], bf16
    reads = c["WARPGROUPS"] * (c["BK"] // 16) * c["N_MMAS"] * per_wgmma
    writes = (c["BM"] + c["BN"]) * c["BK"] * 2             # the cp.async copies of A and Bt for this stage
    return flop, reads, writes


def fig_smem_budget(ax=None):
    """Napkin: clocks per k-tile of one block if the tensor cores ran at peak, against clocks the shared-memory
    banks need for the operand reads of every wgmma plus the copies that fill the stage."""
    ax = _axes(ax, (8.6, 3.2))
    rungs = ("06_wgmma_m64n64", "06_wgmma_wide")
    for i, rid in enumerate(rungs):
        y = len(rungs) - 1 - i
        c = build(rid).consts
        flop, reads, writes = _wgmma_smem_bytes(c)
        math = flop / TENSOR_FLOP_PER_CLK
        r_clk, w_clk = reads / SMEM_BYTES_PER_CLK, writes / SMEM_BYTES_PER_CLK
        ax.barh(y + 0.18, math, height=0.32, color="tab:pink")
        ax.text(math + 12, y + 0.18, f"tensor cores at peak: {math:.0f} clk", va="center", fontsize=9)
        ax.barh(y - 0.18, r_clk, height=0.32, color="tab:blue")
        ax.barh(y - 0.18, w_clk, left=r_clk, height=0.32, color="tab:cyan")
        ax.text(r_clk / 2, y - 0.18, f"wgmma reads {reads // 1024} KiB", va="center", ha="center", fontsize=8,
                color="white")
        ax.text(r_clk + w_clk / 2, y - 0.18, f"copies {writes // 1024} KiB", va="center", ha="center",
                fontsize=8)
        bound = min(1.0, math / (r_clk + w_clk))
        ax.text(r_clk + w_clk + 12, y - 0.18, f"shared memory: {r_clk + w_clk:.0f} clk -> at most {bound:.0%} "
                f"of peak", va="center", fontsize=9)
    labels = []
    for rid in rungs:
        c = build(rid).consts
        labels.append(f"{rid}\nm64n{c['WGMMA_N']}k16, block {c['BM']}x{c['BN']}x{c['BK']}")
    ax.set_yticks(range(len(rungs))[::-1], labels, fontsize=9)
    ax.set_xlim(0, 2000)
    ax.set_ylim(-0.6, len(rungs) - 0.4)
    ax.set_xlabel(f"SM clocks per k-tile of one block (napkin: {TENSOR_FLOP_PER_CLK} FLOP/clk of tensor math, "
                  f"{SMEM_BYTES_PER_CLK} B/clk of shared memory)", fontsize=9)
    ax.set_title("Napkin: can shared memory keep up with the tensor cores?", fontsize=11)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def fig_swizzle_atom(ax=None):
    """One 128-byte swizzle atom of a K-major bf16 tile: 8 rows x 8 chunks of 16 bytes. Each cell is a physical
    16-byte slot, labelled with the logical chunk (8 consecutive k) the copies put there; colour = k step."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    c = build("06_wgmma_wide").consts
    row_bytes = c["BK"] * 2                    # one row of the [rows, BK] tile: 128 bytes
    chunks = row_bytes // CHUNK                # 8 chunks of 16 bytes
    rows = chunks                              # the 128-byte pattern repeats every 8 rows
    sbo = rows * row_bytes                     # 1024 bytes from one atom to the next
    steps = c["BK"] // 16                      # k steps of 16 per stage: 4
    step_bytes = 16 * 2                        # 32 bytes of K per step
    colours = plt.get_cmap("tab10").colors

    def desc(addr):                            # the descriptor the kernel builds for this tile
        return wgmma_desc_decode(wgmma_desc_encode(addr, sbo=sbo, swizzle=c["SWIZZLE_MODE"]))

    ax = _axes(ax, (9.6, 5.6))
    for r in range(rows):
        for logical in range(chunks):
            byte = offset("swizzled", r, logical * 8, c["BK"]) - r * row_bytes
            assert byte == (logical ^ (r % 8)) * CHUNK       # the hardware's 128-byte pattern
            p = byte // CHUNK
            step = logical * CHUNK // step_bytes
            shade = 0.55 if logical % 2 else 0.85
            ax.add_patch(Rectangle((p, r), 1, 1, facecolor=colours[step], alpha=shade, edgecolor="white", lw=1.5))
            ax.text(p + 0.5, r + 0.5, f"c{logical}\nk{logical * 8}-{logical * 8 + 7}", ha="center", va="center",
                    fontsize=8)
    ax.set_xlim(-0.2, chunks + 0.9)
    ax.set_ylim(rows + 0.05, -1.7)
    ax.set_xticks(np.arange(chunks + 1), [f"{b}" for b in range(0, row_bytes + 1, CHUNK)], fontsize=8)
    ax.set_yticks(np.arange(rows) + 0.5, [f"row {r}  (+{r * row_bytes} B)" for r in range(rows)], fontsize=8)
    ax.set_xlabel("byte offset inside the 128-byte row (physical 16-byte slots)", fontsize=9)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)

    # Where the descriptor points for each k step: the unswizzled address of row 0, +32 bytes per step.
    for kk in range(steps):
        x = kk * step_bytes / CHUNK
        d = desc(kk * step_bytes)
        ax.annotate(f"k step {kk}\nstart +{d['start_address']} B", xy=(x, 0), xytext=(x + 0.02, -1.05),
                    fontsize=8, ha="left", va="center", color=colours[kk],
                    arrowprops=dict(arrowstyle="->", color=colours[kk], lw=1.2))
    d = desc(0)
    ax.annotate("", xy=(chunks + 0.15, rows), xytext=(chunks + 0.15, 0),
                arrowprops=dict(arrowstyle="->", color="black", lw=1))
    ax.text(chunks + 0.3, rows / 2, f"SBO = {d['stride_byte_offset']} B = {rows} rows x {row_bytes} B:\n"
            f"row {rows} starts the next atom", rotation=90, ha="left", va="center", fontsize=8)
    ax.set_title("One 128-byte swizzle atom of a K-major bf16 tile (label: logical chunk c, its 8 k values)\n"
                 "slot = c XOR (row mod 8); one c over the 8 rows = one 8x8 core matrix; one hue = one k step of 16\n"
                 f"descriptor: swizzle mode {c['SWIZZLE_MODE']} = {d['swizzle']}, SBO "
                 f"{d['stride_byte_offset']} B, LBO {d['leading_byte_offset']} B (unused here), base offset "
                 f"{d['base_offset']}", fontsize=9.5)
    return ax


def fig_accumulator(ax=None, n: int = 64):
    """The m64nNk16 FP32 accumulator: which of the warpgroup's 128 threads holds each of the 64 x n results.
    Colour = warp (4 bands of 16 rows); lightness = lane % 4 (which column pair). One thread is traced in black."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    thread, reg = wgmma_accumulator(n)
    traced = 37
    base = [to_rgb(x) for x in ("tab:blue", "tab:orange", "tab:green", "tab:purple")]
    img = np.zeros((*thread.shape, 3))
    for (r, col), t in np.ndenumerate(thread):
        lane = t % 32
        mix = 0.05 + 0.22 * (lane % 4) + 0.06 * ((lane // 4) % 2)
        img[r, col] = np.array(base[t // 32]) * (1 - mix) + mix
    ax = _axes(ax, (10.0, 8.6))
    ax.imshow(img, interpolation="nearest", aspect="equal")
    for (r, col) in zip(*np.nonzero(thread == traced)):
        ax.add_patch(plt.Rectangle((col - 0.5, r - 0.5), 1, 1, facecolor="black"))
        if reg[r, col] % 2 == 0:                            # one label per pair d[i], d[i+1]
            ax.text(col + 0.5, r, str(reg[r, col]), ha="center", va="center", fontsize=8, color="white")
    for x in range(8, n, 8):
        ax.axvline(x - 0.5, color="white", lw=0.8)
    for y in range(8, 64, 8):
        ax.axhline(y - 0.5, color="white", lw=2.5 if y % 16 == 0 else 0.8)
    lane = traced % 32
    for w in range(4):
        text = f"warp {w}\nthreads {32 * w}-{32 * w + 31}\nrows {16 * w}-{16 * w + 15}"
        if w == traced // 32:
            text += (f"\n\nthread {traced} = lane {lane}:\nrows {16 * w + lane // 4} and {16 * w + lane // 4 + 8},"
                     f"\ncolumns {2 * (lane % 4)}, {2 * (lane % 4) + 1}\n+ 8j for j = 0..{n // 8 - 1}")
        ax.text(n + 0.5, 16 * w + 7.5, text, va="center", fontsize=9, color=base[w])
    ax.set_xlim(-0.5, n + 13)
    ax.set_xticks(range(0, n, 8))
    ax.set_yticks(range(0, 64, 8))
    ax.set_xlabel("column of the 64 x N tile (thin lines: the m16n8 pattern repeats every 8 columns)", fontsize=9)
    ax.set_ylabel("row", fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"m64n{n}k16 accumulator: {n // 2} fp32 registers in each of 128 threads\n"
                 f"black: thread {traced}'s {n // 2} values; the number i on a pair = registers d[i], d[i+1]",
                 fontsize=10)
    return ax


def fig_wgmma_timeline(ax=None):
    """Schematic of the k-loop of one warpgroup: what the warps do and what the tensor cores do. Top: this rung,
    wait_group 0 after every k-tile. Bottom: wait_group 1, one group left in flight (chapter 08's loop)."""
    from matplotlib.patches import Patch

    c = build("06_wgmma_wide").consts
    n_mma = (c["BK"] // 16) * c["N_MMAS"]                  # wgmma per warpgroup per k-tile: 4 for the wide rung
    mma = 2.0                                              # one wgmma on the tensor cores (arbitrary unit)
    issue = 0.25                                           # issuing one wgmma from the warps
    sync = 2.2                                             # wait for copies, proxy fence, __syncthreads
    copies = 1.6                                           # each thread issuing its cp.async for a later tile
    tiles = 3
    colours = {"sync": "0.75", "copy": "tab:blue", "issue": "tab:orange", "wait": "tab:red", "tc": "tab:pink"}

    ax = _axes(ax, (10.5, 4.4))
    rows = {"06 warps": 3.3, "06 tensor cores": 2.6, "wait 1 warps": 1.0, "wait 1 tensor cores": 0.3}
    h = 0.5

    def bar(row, t0, dt, kind, label=None, hatch=None):
        ax.barh(rows[row], dt, left=t0, height=h, color=colours[kind], edgecolor="white", hatch=hatch)
        if label:
            ax.text(t0 + dt / 2, rows[row], label, ha="center", va="center", fontsize=8)

    last = {}

    def mark(row, t, text, up=True):
        y = rows[row] + (h / 2 + 0.02 if up else -h / 2 - 0.02)
        ax.plot([t, t], [rows[row] - h / 2, rows[row] + h / 2], color="black", lw=1.6)
        if t - last.get((row, up), -10.0) > 2.5:           # skip a label that would collide with the previous one
            ax.text(t, y, text, ha="center", va="bottom" if up else "top", fontsize=7.5)
            last[(row, up)] = t

    # This rung: every k-tile drains the tensor pipe (wait_group 0) before the next tile can start.
    t = 0.0
    for kt in range(tiles):
        bar("06 warps", t, sync, "sync", "sync" if kt == 0 else None)
        t += sync
        bar("06 warps", t, copies, "copy", "copies")
        t += copies
        mark("06 warps", t, "fence")
        tc = t
        for i in range(n_mma):
            bar("06 warps", t, issue, "issue")
            start = max(tc, t + issue)
            bar("06 tensor cores", start, mma, "tc", f"{kt}.{i}")
            tc = start + mma
            t += issue
        mark("06 warps", t, "commit", up=False)
        bar("06 warps", t, tc - t, "wait", "wait_group 0", hatch="//")
        t = tc
    end06 = t

    # wait_group 1 (chapter 08): a producer fills the ring, so the consumer only waits for a full slot; the group
    # of tile kt keeps the tensor cores busy while the warps wait for group kt-1 and move on to tile kt+1.
    t, tc, ends = 0.0, 0.0, []
    ready = 0.6                                            # wait on the slot's "full" barrier (data already there)
    kt = 0
    while t < end06:
        bar("wait 1 warps", t, ready, "sync")
        t += ready
        mark("wait 1 warps", t, "fence")
        for i in range(n_mma):
            bar("wait 1 warps", t, issue, "issue")
            start = max(tc, t + issue)
            if start + mma <= end06 + 0.5:
                bar("wait 1 tensor cores", start, mma, "tc", f"{kt}.{i}")
            tc = start + mma
            t += issue
        ends.append(tc)
        mark("wait 1 warps", t, "commit", up=False)
        if len(ends) > 1 and ends[-2] > t:                 # wait_group 1: only group kt-1 must be finished
            dt = min(ends[-2], end06 + 0.5) - t
            bar("wait 1 warps", t, dt, "wait", "wait 1" if dt > 0.9 else None, hatch="//")
            t = ends[-2]
        kt += 1
    ax.set_yticks(list(rows.values()), ["warps (issue)", "tensor cores", "warps (issue)", "tensor cores"],
                  fontsize=9)
    ax.text(0, rows["06 warps"] + 0.72, "this rung: wait_group 0 after every k-tile, so the tensor cores idle "
            "while the warps sync and copy", fontsize=9, fontweight="bold", va="center")
    ax.text(0, rows["wait 1 warps"] + 0.72, "chapter 08: a producer loads the ring; wait_group 1 leaves one group "
            "in flight, so the next group queues behind it", fontsize=9, fontweight="bold", va="center")
    ax.set_xlim(0, end06 + 0.5)
    ax.set_ylim(-0.35, 4.2)
    ax.set_xticks([])
    ax.set_xlabel(f"time (schematic, not measured); {n_mma} wgmma per warpgroup per k-tile (BK/16 = {c['BK'] // 16}"
                  f" steps x {c['N_MMAS']} of m64n{c['WGMMA_N']}k16); box label = k-tile.wgmma", fontsize=9)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=[Patch(color=colours["sync"], label="wait until the tile has landed"),
                       Patch(color=colours["copy"], label="issue cp.async"),
                       Patch(color=colours["issue"], label="issue wgmma"),
                       Patch(facecolor=colours["wait"], hatch="//", label="wgmma.wait_group"),
                       Patch(color=colours["tc"], label="tensor cores busy")],
              fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.13), frameon=False)
    ax.set_title("One warpgroup's k-loop: fence, wgmma issued back to back, commit_group, wait_group", fontsize=11)
    return ax


# ---- chapter 07: TMA ------------------------------------------------------------------------------------------

BF16 = 2         # bytes per element


def _clean(ax, sides=("top", "right")):
    for side in sides:
        ax.spines[side].set_visible(False)


def fig_tma_box(ax=None, m: int = 384, k: int = 512, block_row: int = 1, kt: int = 2):
    """A [m, k] bf16 drawn to scale (K across, M down) with the grid of TMA boxes [BM rows, BK columns]. One block
    (blockIdx.y = block_row) walks along K: the box it asks for at k tile kt, and the next one."""
    from matplotlib.patches import Rectangle

    c = build("07_tma").consts
    bm, bk = c["BM"], c["BK"]
    assert m % bm == 0 and k % bk == 0, "the example tensor must be a whole number of boxes"
    row_bytes, stride = bk * BF16, k * BF16
    ax = _axes(ax, (10.4, 6.4))
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
    _clean(ax, ("bottom", "right"))
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
    ax = _axes(ax, (10.4, 5.2))
    zoom = ax.inset_axes([0.40, 0.38, 0.57, 0.55])
    landed = [0, a_bytes, total]                       # x axis: bytes delivered so far
    ends = []
    for label, expect, colour in cases:
        events = mbarrier_countdown(expect, [a_bytes, b_bytes])
        pending = [p for _, p, _ in events]
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
            p0, p1 = pending[-2], pending[-1]           # where the count reaches zero, bytes arriving evenly
            x_zero = landed[-2] + (landed[-1] - landed[-2]) * p0 / (p0 - p1)
            zoom.plot([x_zero], [0], marker="*", ms=15, color=colour, zorder=5)
            ends.append((colour, x_zero, p1))
    for a in (ax, zoom):
        a.axhline(0, color="black", lw=0.8)
    lo = total - 4 * error
    zoom.set_xlim(lo, total + 4.6 * error)
    zoom.set_ylim(-2.2 * error, 4.2 * error)
    zoom.tick_params(labelsize=7.5)
    zoom.set_title(f"the last {4 * error:,} bytes, magnified", fontsize=8.5)
    for colour, x_zero, p in ends:
        if x_zero is None:
            zoom.annotate(f"stops at {p:,} B: never\ncompletes; the waits spin\n(this build traps after 4 s)",
                          xy=(total, p), xytext=(total + 0.5 * error, 3.0 * error), fontsize=8, color=colour,
                          va="center",
                          arrowprops=dict(arrowstyle="->", color=colour))
        elif p < 0:
            zoom.annotate(f"completes with {total - x_zero:,.0f} B still in flight;\nthe {-p:,} B left over "
                          f"count against the next phase", xy=(x_zero, 0), xytext=(lo + 0.1 * error,
                          -1.75 * error), va="center", fontsize=8, color=colour, arrowprops=dict(arrowstyle="->", color=colour))
        else:
            zoom.annotate("completes as the\nlast byte lands", xy=(x_zero, 0), xytext=(total + 0.9 * error,
                          -0.9 * error), fontsize=8, color=colour, va="center",
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
    _clean(ax)
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
    ax = _axes(ax, (10.4, 4.6))
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
    _clean(ax)
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
    ax = _axes(ax, (11.0, 4.4))
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
    _clean(ax, ("top", "right", "bottom"))
    ax.set_title("Each slot's barrier completes one phase per lap; the wait names that phase by its parity",
                 fontsize=10)
    return ax


# ---- chapter 08: warp specialization ---------------------------------------------------------------------------

# Hardware constants the napkin uses (H100 SXM spec sheet and bank structure, not measured here).

# One colour per role, shared by every figure of the chapter.
PRODUCER, CONSUMER, FULL, EMPTY = "tab:blue", "tab:red", "tab:green", "tab:purple"
A_COLOUR, B_COLOUR = "tab:cyan", "tab:orange"


def _consts(rung_id: str) -> dict:
    return build(rung_id).consts


def _stage(c: dict) -> dict:
    """One k tile of one block: FLOP, bytes the TMA brings, bytes every wgmma reads from shared memory."""
    flop = 2 * c["BM"] * c["BN"] * c["BK"]
    landed = (c["BM"] + c["BN"]) * c["BK"] * 2
    warpgroups = c["BM"] // 64                                  # each consumer owns 64 rows of C
    per_wgmma = (64 * 16 + c["WGMMA_N"] * 16) * 2               # A [64, 16] and B [WGMMA_N, 16], bf16
    reads = warpgroups * (c["BK"] // 16) * (c["BN"] // c["WGMMA_N"]) * per_wgmma
    return {"flop": flop, "landed": landed, "reads": reads, "intensity": flop / landed}


def _in_flight(c: dict) -> int:
    """Slots that can be loading while the consumers compute one tile: every slot but the one being read."""
    return c["STAGES"] - 1


def fig_ring(ax=None, kt: int = 9):
    """Left: the protocol of one slot (who arrives on which barrier, who waits, with the counts from the kernel).
    Right: a snapshot of the whole ring just after the consumers issued tile `kt`'s wgmmas."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    c = _consts("08_warp_specialized")
    S, cons, tx = c["STAGES"], c["CONSUMERS"], c["TX_BYTES"]
    ax = _axes(ax, (14.0, 5.6))
    label_box = dict(fc="white", ec="none", alpha=0.9, pad=1.0)

    def box(x, y, w, h, text, colour, fs=9, alpha=0.18, weight="normal"):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                                    fc=colour, ec="none", alpha=alpha))
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                                    fc="none", ec=colour, lw=1.5))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs, weight=weight)

    def arrow(p, q, colour, dashed=False, rad=0.0):
        ax.add_patch(FancyArrowPatch(p, q, arrowstyle="-|>", mutation_scale=14, color=colour, lw=1.6,
                                     ls="--" if dashed else "-", connectionstyle=f"arc3,rad={rad}",
                                     shrinkA=2, shrinkB=2))

    def label(x, y, text, colour, ha="center"):
        ax.text(x, y, text, fontsize=8, color=colour, ha=ha, va="center", bbox=label_box)

    # --- left: one slot and its two barriers ------------------------------------------------------------------
    box(1.9, 6.3, 4.2, 1.0, "producer warpgroup\n(one thread issues every copy)", PRODUCER, weight="bold")
    box(1.9, -0.2, 4.2, 1.0, f"{cons} consumer warpgroups\n({128 * cons} threads, wgmma only)", CONSUMER,
        weight="bold")
    box(3.0, 2.6, 2.0, 2.0, f"slot s\nA [{c['BM']}, {c['BK']}]\nB [{c['BN']}, {c['BK']}]\n{tx // KIB} KiB", "gray",
        fs=8)
    box(6.5, 3.05, 1.5, 1.1, f"full[s]\ninit count 1\n+ {tx:,} B", FULL, fs=8)
    box(0.0, 3.05, 1.5, 1.1, f"empty[s]\ninit count {cons}", EMPTY, fs=8)
    arrow((2.4, 6.3), (0.75, 4.2), EMPTY, dashed=True, rad=0.2)
    label(0.55, 5.55, "1. wait empty[s]\nparity lap & 1", EMPTY)
    arrow((5.6, 6.3), (7.25, 4.2), FULL, rad=-0.2)
    label(7.45, 5.55, f"2. arrive.expect_tx\n({tx:,} B): 1 arrival", FULL)
    arrow((4.0, 6.3), (4.0, 4.65), "gray")
    label(4.0, 5.45, f"3. two TMA boxes, {tx // 2 // KIB} KiB each", "dimgray")
    arrow((5.0, 3.6), (6.5, 3.6), FULL)
    label(5.75, 3.25, "bytes land", FULL)
    arrow((5.6, 0.8), (7.25, 3.0), FULL, dashed=True, rad=0.2)
    label(7.45, 1.65, "4. every consumer thread\nwaits full[s], parity lap & 1", FULL)
    arrow((4.0, 2.6), (4.0, 0.85), "gray")
    label(4.0, 1.7, "5. wgmma reads the slot", "dimgray")
    arrow((2.4, 0.8), (0.75, 3.0), EMPTY, rad=-0.2)
    label(0.55, 1.65, "6. after wait_group,\nthread 0 of each\nconsumer arrives", EMPTY)
    ax.text(4.0, -0.75, "solid: arrives or writes    dashed: waits", ha="center", fontsize=8, color="dimgray")

    # --- right: the ring just after the consumers issued tile kt ----------------------------------------------
    x0, w, gap = 9.6, 1.3, 0.15
    mid = x0 + S * (w + gap) / 2
    ax.text(mid, 7.1, f"the ring of {S} slots just after the consumers issued tile {kt}", ha="center",
            fontsize=10, weight="bold")
    # In the ring: tile kt - 1 (its wgmma group still running), tile kt (queued behind it), and the producer's
    # tiles up to kt - 1 + STAGES - 1: it may not refill slot (kt - 1) % S before tile kt - 1 is released.
    tiles = {t % S: t for t in range(kt - 1, kt - 1 + S)}
    for s in range(S):
        t = tiles[s]
        if t == kt - 1:
            colour, state = CONSUMER, "wgmma\nrunning"
        elif t == kt:
            colour, state = CONSUMER, "wgmma\nqueued"
        else:
            colour, state = PRODUCER, "copy in flight\nor landed"
        x = x0 + s * (w + gap)
        box(x, 2.4, w, 2.1, f"slot {s}\n\ntile {t}\nlap {t // S}", colour, fs=8.5, alpha=0.22)
        ax.text(x + w / 2, 2.2, state, ha="center", va="top", fontsize=7.5)
        ax.text(x + w / 2, 4.75, f"parity {(t // S) & 1}", ha="center", fontsize=7.5, color="dimgray")
    nxt = kt - 1 + S
    xs = x0 + ((kt - 1) % S) * (w + gap) + w / 2
    arrow((xs, 6.1), (xs, 5.05), EMPTY, dashed=True)
    ax.text(xs - 0.4, 6.35, f"the producer waits on empty[{(kt - 1) % S}] (parity {(nxt // S) & 1}) to load "
            f"tile {nxt} there", fontsize=8.5, color=EMPTY, ha="left")
    ax.text(mid, 0.3, f"once tile {kt - 1} is released the producer may run {_in_flight(c)} tiles ahead of the "
            f"running group:\n{_in_flight(c)} x {tx // KIB} KiB = {_in_flight(c) * tx // KIB} KiB in flight",
            ha="center", fontsize=9)
    ax.set(xlim=(-0.4, x0 + S * (w + gap) + 0.1), ylim=(-1.0, 7.5))
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def fig_parities(ax=None, laps: int = 3):
    """Which parity each side passes to mbarrier.try_wait.parity at every k tile, over `laps` laps of the ring
    (from helpers.explore.ring_parities). Rung 08 primes the empty barriers, so the producer waits for the
    same parity as the consumers; chapter 10 skips the priming and waits for the opposite parity."""
    c = _consts("08_warp_specialized")
    S, cons = c["STAGES"], c["CONSUMERS"]
    steps = ring_parities(S, laps * S)
    ax = _axes(ax, (12.0, 4.6))
    kts = [r["it"] for r in steps] + [laps * S]
    lanes = [("consumers wait on full[s]", [r["consumer_waits_full"] for r in steps], FULL, "-"),
             ("producer waits on empty[s]\n(rung 08: empty primed)", [r["lap"] & 1 for r in steps], EMPTY, "-"),
             ("producer, chapter 10\n(no priming)", [r["producer_waits_empty"] for r in steps], "gray", "--")]
    for i, (label, parity, colour, ls) in enumerate(lanes):
        base = 2.0 * (len(lanes) - 1 - i)
        ax.step(kts, [base + 1.1 * p for p in parity] + [base + 1.1 * parity[-1]], where="post", color=colour,
                ls=ls, lw=2)
        ax.text(-0.6, base + 0.55, label, ha="right", va="center", fontsize=9, color=colour)
        ax.text(laps * S + 0.3, base, "0", va="center", fontsize=8, color="dimgray")
        ax.text(laps * S + 0.3, base + 1.1, "1", va="center", fontsize=8, color="dimgray")
    for lap in range(laps):
        lo = lap * S
        if lap % 2:
            ax.axvspan(lo, lo + S, color="0.93", zorder=0)
        who = (f"the {cons} priming arrivals" if lap == 0 else f"tile kt - {S} released")
        ax.text(lo + S / 2, 6.75, f"lap {lap}: tiles {lo}-{lo + S - 1}", ha="center", fontsize=9, weight="bold")
        ax.text(lo + S / 2, 6.3, f"full phase {lap}: tile kt landed", ha="center", fontsize=7.5,
                color=FULL)
        ax.text(lo + S / 2, 5.9, f"empty phase {lap}: {who}", ha="center", fontsize=7.5, color=EMPTY)
    ax.set_xticks([k + 0.5 for k in range(laps * S)])
    ax.set_xticklabels([f"{r['it']}\ns{r['slot']}" for r in steps], fontsize=7)
    ax.set_xlabel(f"k tile kt and its slot kt % {S}   (parity = (kt / {S}) & 1 for full, and for empty once primed)",
                  fontsize=9)
    ax.set(xlim=(0, laps * S + 0.9), ylim=(-0.4, 7.0), yticks=[])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title("the parity each wait names, lap by lap", fontsize=10)
    return ax


def fig_ring_bytes(ax=None):
    """Shared memory of one block: STAGES x (A + B) plus the 1 KiB alignment pad, for rung 07's 128 x 256 tile and
    rung 08's 128 x 128 tile, against the 227 KiB a block can opt in to. Hatched: what one tile being read holds;
    the rest can be in flight."""
    c8, c7 = _consts("08_warp_specialized"), _consts("07_tma")
    budget = c8["SMEM_BUDGET"]
    ax = _axes(ax, (11.0, 3.4))
    rows = [("07_tma", c7), ("08_warp_specialized", c8)]
    for y, (name, c) in enumerate(rows):
        a, b = c["A_TILE"] * 2 / KIB, c["B_TILE"] * 2 / KIB
        left = 0.0
        for s in range(c["STAGES"]):
            hatch = "//" if s == 0 else None
            ax.barh(y, a, left=left, color=A_COLOUR, edgecolor="white", hatch=hatch, height=0.55)
            ax.barh(y, b, left=left + a, color=B_COLOUR, edgecolor="white", hatch=hatch, height=0.55)
            ax.text(left + (a + b) / 2, y - 0.36, f"s{s}", ha="center", fontsize=7, color="dimgray")
            left += a + b
        ax.barh(y, 1.0, left=left, color="0.6", edgecolor="white", height=0.55)
        st = _stage(c)
        fl = _in_flight(c)
        ax.text(budget / KIB + 3, y,
                f"{c['STAGES']} x {c['STAGE_BYTES'] // KIB} KiB = {c['STAGES'] * c['STAGE_BYTES'] // KIB} KiB; "
                f"up to {fl} loading while one is read\n"
                f"{st['intensity']:.1f} FLOP per byte x {fl * c['STAGE_BYTES'] // KIB} KiB = "
                f"{fl * st['flop'] / 1e6:.1f} MFLOP of work in flight", va="center", fontsize=8)
    ax.axvline(budget / KIB, color="black", ls="--", lw=1.2)
    ax.text(budget / KIB + 3, -0.45, f"{budget // KIB} KiB: what one block can opt in to", ha="left",
            fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{n}\n{c['BM']} x {c['BN']} tile" for n, c in rows], fontsize=9)
    ax.set(xlim=(0, 420), ylim=(len(rows) - 0.55, -0.55), xlabel="KiB of shared memory per block")
    ax.set_xticks(range(0, budget // KIB + 1, 32))
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=A_COLOUR, label="A box"), Patch(color=B_COLOUR, label="B box"),
                       Patch(facecolor="white", edgecolor="dimgray", hatch="//", label="slot being read"),
                       Patch(color="0.6", label="1 KiB alignment pad")],
              fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.22), ncol=4, frameon=False)
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)
    return ax


def fig_stage_clocks(ax=None):
    """The napkin per k tile of one block, in SM clocks: the tensor cores at their peak rate, the shared-memory
    banks carrying every wgmma operand read plus the TMA's writes, and the bytes per clock L2 would have to deliver
    to keep the tensor cores at peak."""
    ax = _axes(ax, (10.5, 3.4))
    rows = [("07_tma", _consts("07_tma")), ("08_warp_specialized", _consts("08_warp_specialized"))]
    for y, (name, c) in enumerate(rows):
        st = _stage(c)
        math = st["flop"] / TENSOR_FLOP_PER_CLK
        r_clk, w_clk = st["reads"] / SMEM_BYTES_PER_CLK, st["landed"] / SMEM_BYTES_PER_CLK
        ax.barh(y - 0.2, math, height=0.34, color="tab:pink")
        ax.text(math + 15, y - 0.2, f"tensor cores at peak: {math:.0f} clk  ({st['flop'] / 1e6:.1f} MFLOP)",
                va="center", fontsize=8)
        ax.barh(y + 0.2, r_clk, height=0.34, color=CONSUMER, alpha=0.75)
        ax.barh(y + 0.2, w_clk, left=r_clk, height=0.34, color=PRODUCER, alpha=0.75)
        ax.text(r_clk / 2, y + 0.2, f"wgmma reads {st['reads'] // KIB} KiB", ha="center", va="center",
                fontsize=7.5, color="white")
        ax.text(r_clk + w_clk / 2, y + 0.2, f"TMA {st['landed'] // KIB} KiB", ha="center", va="center",
                fontsize=7.5, color="white")
        cap = min(1.0, math / (r_clk + w_clk))
        ax.text(r_clk + w_clk + 15, y + 0.2, f"shared memory: {r_clk + w_clk:.0f} clk -> at most {cap:.0%} "
                f"of peak;  peak needs {st['landed'] / math:.0f} B/clk from L2", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{n}\n{c['BM']} x {c['BN']} x {c['BK']}" for n, c in rows], fontsize=9)
    ax.set(xlim=(0, 2300), ylim=(len(rows) - 0.4, -0.6),
           xlabel=f"SM clocks per k tile ({TENSOR_FLOP_PER_CLK} FLOP/clk tensor peak, "
                  f"{SMEM_BYTES_PER_CLK} B/clk shared memory)")
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)
    return ax
