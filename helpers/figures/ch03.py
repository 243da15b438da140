"""Chapter 03 (mma.sync and ldmatrix): fig_ldmatrix_lane_map, fig_warp_mma_tiling, fig_ldmatrix_bank_heat."""
from __future__ import annotations

import numpy as np

from ..compiler import build
from ..hardware import BANK_BYTES, CHUNK, SMEM_BANKS
from ..models import SHAPES, conflict_degree, ldmatrix_addresses, ldmatrix_x4, mma_fragment, wavefronts
from .common import BF16, axes, clean

RUNG = "03_mma_sync"
MMA_M, MMA_K = SHAPES["A"]                       # mma.sync.m16n8k16: A is [M, K], B is [K, N]
MMA_N = SHAPES["B"][1]
LDSM_BYTES = 4 * 8 * 8 * BF16                    # one ldmatrix.x4: four 8 x 8 matrices of b16 = 512 bytes
QUADRANT_COLOURS = ("#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb")   # matrices 0-3 of one ldmatrix.x4


def _consts() -> dict:
    return build(RUNG).consts


def _address_rows(lane_cols: int = 16) -> list[tuple[int, int]]:
    """(row, first column) each lane's row address names in a 16 x 16 fragment, the way rung 03 issues ldmatrix:
    recovered from the explorer's byte offsets into a row-major 16 x 16 bf16 tile."""
    offs = ldmatrix_addresses("A", "row-major", (16, lane_cols))
    return [(o // (lane_cols * BF16), o % (lane_cols * BF16) // BF16) for o in offs]


# ---- 1. ldmatrix.x4: who gives the addresses, who receives the elements ----------------------------------------

def fig_ldmatrix_lane_map(ax=None):
    """One ldmatrix.x4 of A (left) and one ldmatrix.x4.trans of B (right), exactly as rung 03 issues them, over the
    16 x 16 bf16 block each one loads. The label beside each 8-element row segment is the lane that supplies its
    16-byte row address; the number in a cell is the lane that receives that element, and the colour says which of
    the four matrices (hence which of the lane's four registers) it travels in. The receivers are computed by the
    explorer's ldmatrix model and asserted equal to mma.sync's own fragment layout."""
    from matplotlib.patches import Rectangle

    ax = axes(ax, (11.8, 7.0))   # the drawing is about 9.3 in wide: the column, so no text is scaled down
    rows_of = _address_rows()                      # lane -> (row, column) of its row address
    frag_a = mma_fragment("A")[0]                       # [16 m, 16 k] owner lanes
    frag_b = mma_fragment("B")[0]                       # [16 k, 8 n] owner lanes
    panels = [
        (False, 0.0, "A block of one mma.sync: 16 rows (m) x 16 k, row-major in shared memory",
         "ldmatrix.x4", "rows: m 0-15", "columns: k 0-7 | k 8-15", ["a[i][0]", "a[i][1]", "a[i][2]", "a[i][3]"],
         "the A fragment a[i][0..3] of one m16 tile"),
        (True, 23.0, "B block of two mma.sync: 16 k x 16 columns (n), row-major in shared memory",
         "ldmatrix.x4.trans", "rows: k 0-15", "columns: n 0-7 | n 8-15", ["b[j][0]", "b[j][1]", "b[j+1][0]",
                                                                          "b[j+1][1]"],
         "the B fragments b[j][0..1] and b[j+1][0..1] of two n8 tiles"),
    ]
    for trans, x0, title, instr, ylab, xlab, regs, dest in panels:
        recv = ldmatrix_x4(trans=trans)["receiver"]      # [matrix, r, c] -> receiving lane
        block = np.zeros((16, 16), int)
        matrix_of = np.zeros((16, 16), int)
        for m in range(4):
            r0, c0 = rows_of[8 * m]                       # lanes 8m..8m+7 give matrix m's rows
            block[r0:r0 + 8, c0:c0 + 8] = recv[m]
            matrix_of[r0:r0 + 8, c0:c0 + 8] = m
        if trans:   # each 8-column half is the B fragment of one n8 tile
            assert (block[:, :8] == frag_b).all() and (block[:, 8:] == frag_b).all()
        else:
            assert (block == frag_a).all()
        for (r, c), ln in np.ndenumerate(block):
            ax.add_patch(Rectangle((x0 + c, r), 1, 1, facecolor=QUADRANT_COLOURS[matrix_of[r, c]],
                                   edgecolor="white", lw=0.8))
            ax.text(x0 + c + 0.5, r + 0.5, str(ln), ha="center", va="center", fontsize=8)
        # row segments (16 bytes each) and the lane that addresses them
        for lane, (r, c) in enumerate(rows_of):
            ax.add_patch(Rectangle((x0 + c, r), 8, 1, fill=False, edgecolor="0.25", lw=0.9))
            left = c == 0
            ax.text(x0 + (-0.25 if left else 16.25), r + 0.5, f"lane {lane}", ha="right" if left else "left",
                    va="center", fontsize=8, color="tab:red")
        ax.plot([x0 + 8, x0 + 8], [0, 16], color="black", lw=1.8)
        ax.plot([x0, x0 + 16], [8, 8], color="black", lw=1.8)
        ax.add_patch(Rectangle((x0, 0), 16, 16, fill=False, edgecolor="black", lw=1.8))
        # which matrix (register) each quadrant is
        for m in range(4):
            r0, c0 = rows_of[8 * m]
            y = -0.45 if r0 == 0 else 16.45
            ax.text(x0 + c0 + 4, y, f"matrix {m} (lanes {8 * m}-{8 * m + 7})\nr[{m}] -> {regs[m]}",
                    ha="center", va="bottom" if r0 == 0 else "top", fontsize=8)
        ax.text(x0 + 8, -2.6, f"{instr}: {title.split(':')[0]}", ha="center", va="bottom", fontsize=9.5,
                fontweight="bold")
        ax.text(x0 + 8, 19.2, f"{ylab};  {xlab}\nthe four registers become\n{dest}", ha="center", va="top",
                fontsize=8)
    ax.set_xlim(-2.6, 23 + 16 + 2.6)     # room for the red lane labels, and no more
    ax.set_ylim(20.6, -3.6)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    clean(ax, ("top", "right", "bottom", "left"))
    ax.set_title("ldmatrix.x4 as rung 03 issues it: lane l names row l % 16, column 8 x (l / 16) (red labels); "
                 "the cell number is the lane\nthat receives the element: row-major for A, transposed (.trans) "
                 "for B, in both cases exactly mma.sync's fragment layout", fontsize=10)
    return ax


# ---- 2. one warp's k step: how many ldmatrix.x4 and mma.sync --------------------------------------------------

def fig_warp_mma_tiling(ax=None):
    """Left: the block tile of rung 03 and its warps (from BM, BN, WM, WN). Right: one warp's tile for one 16-deep k
    step, decomposed into m16n8k16 instructions: the A strip is loaded by MMA_M ldmatrix.x4, the B strip by
    MMA_N / 2 ldmatrix.x4.trans (each feeds two n8 tiles), and every (i, j) pair of fragments is one mma.sync."""
    from matplotlib.patches import Rectangle

    c = _consts()
    bm, bn, bk, wm, wn = c["BM"], c["BN"], c["BK"], c["WM"], c["WN"]
    mma_m, mma_n = wm // MMA_M, wn // MMA_N
    assert (mma_m, mma_n) == (c["MMA_M"], c["MMA_N"])
    warps_m, warps_n = bm // wm, bn // wn
    ldsm_a, ldsm_b = mma_m, mma_n // 2
    mmas = mma_m * mma_n
    ax = axes(ax, (12.8, 7.4))

    # left: the block tile at a reduced scale, level with the zoomed warp tile
    s = 0.3
    x0, y0 = bn * s + 22, 22.0
    for w in range(warps_m * warps_n):
        r, col = divmod(w, warps_n)
        hot = w == 0
        ax.add_patch(Rectangle((col * wn * s, y0 + r * wm * s), wn * s, wm * s,
                               facecolor="#fdae6b" if hot else "0.92", edgecolor="black", lw=1.0))
        ax.text((col + 0.5) * wn * s, y0 + (r + 0.5) * wm * s, f"warp {w}\n{wm} x {wn}", ha="center",
                va="center", fontsize=8)
    ax.text(bn * s / 2, y0 + bm * s + 1.5, "warp 0 (orange) is drawn enlarged\non the right, for one k step",
            ha="center", va="top", fontsize=8.5, color="tab:orange")
    ax.text(bn * s / 2, y0 - 2.0, f"block tile of C: {bm} x {bn}\n{warps_m * warps_n} warps ({warps_m} x {warps_n}), "
            f"{c['THREADS']} threads", ha="center", va="bottom", fontsize=9, fontweight="bold")

    # right: warp 0's tile at full scale (one unit = one element), with its A and B strips for one k step
    ka = MMA_K
    ax.add_patch(Rectangle((x0 - ka - 2, y0), ka, wm, facecolor="white", edgecolor="black", lw=1.0))
    for i in range(ldsm_a):
        y = y0 + i * MMA_M
        ax.add_patch(Rectangle((x0 - ka - 2, y), ka, MMA_M, facecolor="#c6dbef", edgecolor="black", lw=1.0))
        ax.text(x0 - ka / 2 - 2, y + MMA_M / 2, f"ldmatrix\n.x4\n-> a[{i}]", ha="center", va="center",
                fontsize=8)
    for jj in range(ldsm_b):
        x = x0 + jj * 2 * MMA_N
        ax.add_patch(Rectangle((x, y0 - ka - 2), 2 * MMA_N, ka, facecolor="#c7e9c0", edgecolor="black",
                               lw=1.0))
        ax.plot([x + MMA_N] * 2, [y0 - ka - 2, y0 - 2], color="0.4", lw=0.8, ls="--")
        ax.text(x + MMA_N, y0 - ka / 2 - 2, f"ldmatrix\n.x4.trans\n-> b[{2 * jj}], b[{2 * jj + 1}]",
                ha="center", va="center", fontsize=8)
    for i in range(mma_m):
        for j in range(mma_n):
            x, y = x0 + j * MMA_N, y0 + i * MMA_M
            ax.add_patch(Rectangle((x, y), MMA_N, MMA_M, facecolor="#fdd0a2", edgecolor="black", lw=1.0))
            ax.text(x + MMA_N / 2, y + MMA_M / 2, f"mma\n({i},{j})\n#{i * mma_n + j}", ha="center",
                    va="center", fontsize=8)
    ax.text(x0 - ka / 2 - 2, y0 - 2.5, f"A strip\n{wm} x {ka}", ha="center", va="bottom", fontsize=8)
    ax.text(x0 + wn + 1.0, y0 - ka / 2 - 2, f"B strip\n{ka} x {wn}", ha="left", va="center", fontsize=8)
    ax.text(x0 + wn + 1.0, y0 + wm / 2, f"warp 0's C tile\n{wm} x {wn} fp32\n= {mma_m} x {mma_n} tiles\n"
            f"of m16n8", ha="left", va="center", fontsize=8)

    flop = mmas * 2 * MMA_M * MMA_N * MMA_K
    smem = (ldsm_a + ldsm_b) * LDSM_BYTES
    ax.text(x0 + wn / 2 - 8, y0 + wm + 3, f"per 16-deep k step, one warp: {ldsm_a} + {ldsm_b} = {ldsm_a + ldsm_b} "
            f"ldmatrix.x4 and {mma_m} x {mma_n} = {mmas} mma.sync\n"
            f"{ldsm_a + ldsm_b} x {LDSM_BYTES} B = {smem:,} B read from shared memory for {flop:,} FLOP "
            f"({flop / smem:.1f} FLOP per byte)\n"
            f"per k tile (BK = {bk}): {bk // ka} k steps; per block: {(ldsm_a + ldsm_b) * bk // ka * warps_m * warps_n}"
            f" ldmatrix.x4 and {mmas * bk // ka * warps_m * warps_n} mma.sync",
            ha="center", va="top", fontsize=8.5)
    ax.set_xlim(-1, x0 + wn + 17)
    ax.set_ylim(y0 + wm + 14, y0 - MMA_K - 5)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    clean(ax, ("top", "right", "bottom", "left"))
    ax.set_title(f"Rung 03's tiling, from its constants: block {bm} x {bn} x {bk}, warp {wm} x {wn}, "
                 f"one k step of m16n8k16", fontsize=10.5)
    return ax


# ---- 3. every phase of one ldmatrix.x4 on the 32 banks ----------------------------------------------------------

def _bank_rows(operand: str, tile) -> tuple[np.ndarray, list[int]]:
    """[4 phases, 32 banks]: how many different 16-byte rows of each phase of one ldmatrix.x4 fall on each bank
    (0 = idle), and the wavefronts each phase needs (the explorer's slot rule)."""
    addrs = ldmatrix_addresses(operand, "row-major", tile)
    load = np.zeros((4, SMEM_BANKS), int)
    fronts = []
    for p in range(4):
        phase = addrs[8 * p: 8 * p + 8]
        for a in set(phase):
            bank = a // BANK_BYTES % SMEM_BANKS
            load[p, bank: bank + CHUNK // BANK_BYTES] += 1
        fronts.append(wavefronts(phase))
        assert load[p].max() == fronts[-1]
    return load, fronts


def fig_ldmatrix_bank_heat(ax=None):
    """Heat map, one row per phase of one ldmatrix.x4 (A) and one ldmatrix.x4.trans (B) of rung 03, one column per
    bank: how many different 16-byte rows that bank must deliver in that phase. The hottest bank of a phase is its
    wavefront count; on the right, the whole k tile of one block, from the kernel's constants."""
    import matplotlib.pyplot as plt

    c = _consts()
    tiles = {"A": (c["BM"], c["BK"]), "B": (c["BK"], c["BN"])}
    ax = axes(ax, (9.3, 5.4))   # wrapped labels leave the banks room inside the 9.4 in column
    grid, labels, fronts_all = [], [], []
    per_x4 = {}
    for operand in ("A", "B"):
        load, fronts = _bank_rows(operand, tiles[operand])
        # the chapter's averages over every ldmatrix the warp issues must agree with this one instruction
        assert abs(conflict_degree(operand, "row-major", tiles[operand]) - np.mean(fronts)) < 1e-9
        per_x4[operand] = sum(fronts)
        if grid:
            grid.append(np.full(SMEM_BANKS, np.nan))
            labels.append("")
            fronts_all.append(None)
        cols = tiles[operand][1]
        addrs = ldmatrix_addresses(operand, "row-major", tiles[operand])
        for p in range(4):
            grid.append(load[p])
            r0, c0 = addrs[8 * p] // (cols * BF16), addrs[8 * p] % (cols * BF16) // BF16
            what = f"rows {r0}-{r0 + 7}, k {c0}-{c0 + 7}" if operand == "A" else f"k {r0}-{r0 + 7}, n {c0}-{c0 + 7}"
            labels.append(f"{operand} phase {p}: lanes {8 * p}-{8 * p + 7},\n{what}")
            fronts_all.append(fronts[p])
    grid = np.array(grid, float)
    cmap = plt.get_cmap("YlOrRd").with_extremes(bad="0.94")  # an idle bank
    im = ax.imshow(np.ma.masked_invalid(np.where(grid == 0, np.nan, grid)), cmap=cmap, vmin=0, vmax=8,
                   aspect="auto")
    gap = labels.index("")
    ax.axhspan(gap - 0.5, gap + 0.5, color="white", zorder=2)
    for (r, b), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(b, r, f"{int(v)}" if v else "", ha="center", va="center", fontsize=8,
                    color="white" if v >= 6 else "black")
    for r, f in enumerate(fronts_all):
        if f is not None:
            ax.text(SMEM_BANKS - 0.2, r, f"  {f} wavefronts,\n  {SMEM_BANKS - int((grid[r] > 0).sum())} banks idle",
                    ha="left", va="center", fontsize=8.5)
    ax.set_yticks(range(len(labels)), labels, fontsize=8.5)
    ax.set_xticks(range(0, SMEM_BANKS, 4), [f"{b}" for b in range(0, SMEM_BANKS, 4)], fontsize=8)
    ax.set_xlabel("bank (4 bytes each; a 16-byte row address covers 4 consecutive banks; grey = idle)", fontsize=9)
    ax.tick_params(length=0)
    for b in range(0, SMEM_BANKS + 1, 4):
        ax.axvline(b - 0.5, color="0.6", lw=0.6)
    cb = plt.colorbar(im, ax=ax, fraction=0.02, pad=0.16)   # pad: clear of the wavefront notes
    cb.set_label("different rows on this bank", fontsize=8.5)

    warps = c["THREADS"] // 32
    steps = c["BK"] // MMA_K
    n_a, n_b = c["MMA_M"] * steps * warps, c["MMA_N"] // 2 * steps * warps
    total = n_a * per_x4["A"] + n_b * per_x4["B"]
    ideal = (n_a + n_b) * 4
    ra, rb = c["BK"] * BF16, c["BN"] * BF16
    ax.set_title(f"Rung 03, unswizzled: every phase of one ldmatrix.x4 on the {SMEM_BANKS} banks. A rows are {ra} B "
                 f"apart, B rows {rb} B\nper k tile the block issues {n_a} x4 of A and {n_b} x4.trans of B:\n"
                 f"{n_a} x {per_x4['A']} + {n_b} x {per_x4['B']} = {total:,} wavefronts where {ideal} would do "
                 f"({total / ideal:.2f}x)", fontsize=10)
    return ax
