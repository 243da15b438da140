"""Chapter 06 (wgmma): fig_smem_budget, fig_swizzle_atom, fig_accumulator, fig_wgmma_timeline. The shared-memory
napkin (wgmma_smem_bytes) is also what chapter 06's exercise predicts with."""
from __future__ import annotations

import numpy as np

from ..compiler import build
from ..hardware import CHUNK, SMEM_BYTES_PER_CLK, TENSOR_FLOP_PER_CLK
from ..models import offset, wgmma_accumulator, wgmma_desc_decode, wgmma_desc_encode
from .common import axes


def wgmma_smem_bytes(c: dict) -> tuple[int, int, int]:
    """(FLOP, bytes wgmma reads from shared memory, bytes the copies write) for one block and one k-tile."""
    flop = 2 * c["BM"] * c["BN"] * c["BK"]
    per_wgmma = (64 * 16 + c["WGMMA_N"] * 16) * 2          # A [64, 16] and B [WGMMA_N, 16], bf16
    reads = c["WARPGROUPS"] * (c["BK"] // 16) * c["N_MMAS"] * per_wgmma
    writes = (c["BM"] + c["BN"]) * c["BK"] * 2             # the cp.async copies of A and Bt for this stage
    return flop, reads, writes


def fig_smem_budget(ax=None):
    """Napkin: clocks per k-tile of one block if the tensor cores ran at peak, against clocks the shared-memory port
    (one 128-byte wavefront a clock) needs for the operand reads of every wgmma. The copies that fill the stage write
    the same banks but are not the port's wavefronts (the profiles' port count follows the reads alone), so they are
    drawn as a bar of their own and left out of the bound."""
    ax = axes(ax, (8.6, 3.4))
    rungs = ("06_wgmma_m64n64", "06_wgmma_wide")
    for i, rid in enumerate(rungs):
        y = len(rungs) - 1 - i
        c = build(rid).consts
        flop, reads, writes = wgmma_smem_bytes(c)
        math = flop / TENSOR_FLOP_PER_CLK
        r_clk, w_clk = reads / SMEM_BYTES_PER_CLK, writes / SMEM_BYTES_PER_CLK
        ax.barh(y + 0.27, math, height=0.24, color="tab:pink")
        ax.text(math + 12, y + 0.27, f"tensor cores at peak: {math:.0f} clk", va="center", fontsize=9)
        ax.barh(y, r_clk, height=0.24, color="tab:blue")
        ax.text(r_clk / 2, y, f"wgmma reads {reads // 1024} KiB", va="center", ha="center", fontsize=8, color="white")
        bound = math / r_clk
        ax.text(r_clk + 12, y, f"port: {r_clk:.0f} clk, {r_clk / math:.0%} of the port at peak"
                + (" (full)" if bound <= 1 else ""), va="center", fontsize=9)
        ax.barh(y - 0.27, w_clk, height=0.24, color="tab:cyan")
        ax.text(w_clk + 12, y - 0.27, f"copies {writes // 1024} KiB: bank writes, beside the port", va="center",
                fontsize=8)
    labels = []
    for rid in rungs:
        c = build(rid).consts
        labels.append(f"{rid}\nm64n{c['WGMMA_N']}k16, block {c['BM']}x{c['BN']}x{c['BK']}")
    ax.set_yticks(range(len(rungs))[::-1], labels, fontsize=9)
    ax.set_xlim(0, 2000)
    ax.set_ylim(-0.6, len(rungs) - 0.4)
    ax.set_xlabel(f"SM clocks per k-tile of one block (napkin: {TENSOR_FLOP_PER_CLK} FLOP/clk of tensor math, "
                  f"{SMEM_BYTES_PER_CLK} B/clk through the shared-memory port)", fontsize=9)
    ax.set_title("Napkin: can the shared-memory port feed the tensor cores?", fontsize=11)
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

    ax = axes(ax, (9.6, 5.6))
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
    ax = axes(ax, (10.0, 8.6))
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

    ax = axes(ax, (10.5, 4.4))
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
            ax.text(t, y, text, ha="center", va="bottom" if up else "top", fontsize=8)
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
    ax.text(0, rows["wait 1 warps"] + 0.8, "chapter 08: a producer loads the ring; wait_group 1 leaves one group "
            "in flight,\nso the next group queues behind it", fontsize=9, fontweight="bold", va="center")
    ax.set_xlim(0, end06 + 0.5)
    ax.set_ylim(-0.35, 4.2)
    ax.set_xticks([])
    ax.set_xlabel(f"time (schematic, not measured); {n_mma} wgmma per warpgroup per k-tile\n(BK/16 = {c['BK'] // 16}"
                  f" steps x {c['N_MMAS']} of m64n{c['WGMMA_N']}k16); box label = k-tile.wgmma", fontsize=9)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=[Patch(color=colours["sync"], label="wait until the tile has landed"),
                       Patch(color=colours["copy"], label="issue cp.async"),
                       Patch(color=colours["issue"], label="issue wgmma"),
                       Patch(facecolor=colours["wait"], hatch="//", label="wgmma.wait_group"),
                       Patch(color=colours["tc"], label="tensor cores busy")],
              fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.17), frameon=False)
    ax.set_title("One warpgroup's k-loop: fence, wgmma issued back to back, commit_group, wait_group", fontsize=11)
    return ax
