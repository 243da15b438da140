"""Conceptual figures of the Hopper chapters, drawn from the explorers (helpers/explore.py) and from each kernel's
own constants (`build(rung).consts`), so a change to a kernel redraws its picture instead of falsifying it. Each
`fig_*` takes an optional Axes and returns the Axes it drew on.

    chapter 01 (FP32 SIMT)            fig_simt_warp_sectors, fig_simt_thread_tiles, fig_simt_warp_tiles, fig_simt_lds_banks
    chapter 02 (WMMA)                 fig_wmma_warp_tiles, fig_wmma_intensity, fig_wmma_opaque
    chapter 03 (mma.sync)             fig_ldmatrix_lane_map, fig_warp_mma_tiling, fig_ldmatrix_bank_heat
    chapter 04 (swizzle)              fig_ktile_wavefronts, fig_phase_on_banks, fig_swizzle_permutation, fig_padding_bytes
    chapter 05 (cp.async)             fig_cp_async_ring_timeline, fig_cp_async_littles_law, fig_cp_async_register_file
    chapter 06 (wgmma)                fig_smem_budget, fig_swizzle_atom, fig_accumulator, fig_wgmma_timeline
    chapter 07 (TMA)                  fig_load_instructions, fig_tma_box, fig_mbarrier_phase, fig_ring_parity
    chapter 08 (warp specialization)  fig_stage_clocks, fig_ring, fig_parities, fig_ring_bytes
    chapter 09 (setmaxnreg)           fig_tile_intensity, fig_register_pool, fig_pool_ledger, fig_consumer_registers
    chapter 10 (the chip)             fig_persistent_schedule, fig_cluster_multicast, fig_tma_store_epilogue,
                                      fig_tile_waves
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .build import build, intensity
from .explore import (REGISTER_FILE, blocks_per_sm, conflict_degree, l2_bytes_per_k_tile, launch_registers,
                      ldmatrix_addresses, ldmatrix_x4, mbarrier_countdown, mma_fragment, offset, pipeline_schedule,
                      register_budget, ring_parities, wavefronts, wgmma_accumulator, wgmma_desc_decode,
                      wgmma_desc_encode)
from .tiles import waves
from .registry import rung

# Hardware numbers the napkins use (H100 SXM, from the datasheet and the bank structure, not measured here).
TENSOR_FLOP_PER_CLK = 4096     # dense BF16 per SM per clock: 989.4 TFLOP/s / (132 SMs x 1,830 MHz)
SMEM_BYTES_PER_CLK = 128       # 32 banks x 4 bytes per SM per clock, reads and writes alike (napkin assumption)
CHUNK = 16                     # bytes in one core-matrix row (8 bf16), and what one cp.async moves
WARP = 32
KIB = 1024


def _axes(ax, size):
    import matplotlib.pyplot as plt
    return ax if ax is not None else plt.subplots(figsize=size)[1]


def _clean(ax, sides=("top", "right")):
    for side in sides:
        ax.spines[side].set_visible(False)


# ---- chapter 01: FP32 SIMT -------------------------------------------------------------------------------------

# The models below do not restate the kernels' index arithmetic: they read each kernel's `const int name = ...;`
# lines and its operand subscripts from the .cu file and evaluate them for the threads of block (0, 0).
CH01_SECTOR = 32              # bytes in one sector: the unit L1 and L2 move for a global access
CH01_FP32 = 4                 # bytes per element
CH01_SIZE = 4096              # the M = N = K the chapter times; any size of 8 or more gives the same counts
CH01_FLOP_PER_FFMA = 2
CH01_SECTOR_ROW = 16          # sectors drawn per row in fig_simt_warp_sectors
CH01_A, CH01_B = "tab:cyan", "tab:orange"


def _ch01_source(rung_id: str) -> str:
    """The rung's kernel without its comments (the headers quote subscripts such as A[row, k] in prose)."""
    return re.sub(r"//.*", "", rung(rung_id).path.read_text())


def _ch01_eval(expr: str, env: dict):
    """A C integer expression of a kernel on NumPy arrays. Every operand is non-negative, so C's / and % are
    Python's // and %."""
    return eval(expr.replace("/", "//"), {"__builtins__": {}}, env)  # noqa: S307 - the course's own kernels


def _ch01_thread_index(rung_id: str) -> dict[str, np.ndarray]:
    """Every `const int name = expr;` of the kernel that depends only on threadIdx, blockIdx and its constexprs,
    evaluated for each thread of block (0, 0): name -> array over threadIdx.x. Lines that need a loop variable or
    a pointer are left out; a later line with the same name would replace an earlier one."""
    from types import SimpleNamespace
    c = build(rung_id).consts
    env = {**c, "threadIdx": SimpleNamespace(x=np.arange(c["THREADS"])), "blockIdx": SimpleNamespace(x=0, y=0)}
    out: dict[str, np.ndarray] = {}
    for decl in re.findall(r"^\s*const int ([^;]+);", _ch01_source(rung_id), re.M):
        for part in decl.split(","):
            name, _, expr = (s.strip() for s in part.partition("="))
            try:
                value = _ch01_eval(expr, env)
            except (NameError, AttributeError, TypeError, SyntaxError):
                continue
            out[name] = env[name] = np.broadcast_to(value, (c["THREADS"],))
    return out


def _ch01_expr(rung_id: str, name: str) -> str:
    """The right-hand side of `const int name = ...` in the kernel, as written there."""
    decl = re.search(rf"\bconst int (?:[^;]*,\s*)?{name}\s*=\s*([^,;]+)", _ch01_source(rung_id))
    return " ".join(decl.group(1).split())


def _ch01_warp_sectors(rung_id: str, k: int = 0, size: int = CH01_SIZE) -> dict:
    """What warp 0 of block (0, 0) of 01_naive or 01_coalesced touches at one step k: for A and B (the loads) and C
    (the store), the kernel's subscript, the byte address each of its 32 lanes names, the 32-byte sectors those fall
    in, and the bytes moved (sectors x 32) against the bytes used (distinct addresses x 4). Matrices start at 0."""
    idx = _ch01_thread_index(rung_id)
    row, col = idx["row"][:WARP], idx["col"][:WARP]
    env = {"row": row, "col": col, "M": size, "N": size, "K": size, "k": k}
    src = _ch01_source(rung_id)
    out = {"row": row, "col": col}
    for op in "ABC":
        expr = " ".join(re.search(rf"\b{op}\[([^\]]+)\]", src).group(1).split())
        addr = CH01_FP32 * np.broadcast_to(_ch01_eval(expr, env), (WARP,))
        sectors = sorted({int(a) // CH01_SECTOR for a in addr})
        out[op] = {"expr": expr, "addresses": addr, "sectors": sectors, "moved": CH01_SECTOR * len(sectors),
                   "used": CH01_FP32 * len(set(addr.tolist()))}
    return out


def _ch01_owner(rung_id: str) -> np.ndarray:
    """[BM, BN] array: the thread of block (0, 0) that computes each element of the block tile. 01_blocktile_2d and
    01_vectorized: thread (trow, tcol) owns the TM x TN patch at (trow * TM, tcol * TN). 01_warptiled: a lane owns
    2 x 2 patches of 4 x 4 whose top-left corners are (m0, n0) plus half a warp tile (WM / 2, WN / 2)."""
    c, idx = build(rung_id).consts, _ch01_thread_index(rung_id)
    owner = np.full((c["BM"], c["BN"]), -1)
    for t in range(c["THREADS"]):
        if "m0" in idx:
            rows = [idx["m0"][t] + p * c["WM"] // 2 + i for p in range(2) for i in range(c["TM"] // 2)]
            cols = [idx["n0"][t] + p * c["WN"] // 2 + j for p in range(2) for j in range(c["TN"] // 2)]
        else:
            rows = [idx["trow"][t] * c["TM"] + i for i in range(c["TM"])]
            cols = [idx["tcol"][t] * c["TN"] + j for j in range(c["TN"])]
        owner[np.ix_(rows, cols)] = t
    return owner


def _ch01_lds128(rung_id: str, k: int = 0) -> list[dict]:
    """The 16-byte shared loads (`float4` reads of sA / sB in the inner loop) warp 0 issues at one step k of
    01_vectorized or 01_warptiled, in source order: operand, the kernel's column subscript, and the byte offset each
    lane reads inside that operand's [BK, BM] or [BK, BN] tile. A subscript with the loop variable i or j (stepping
    by 4) stands for one load per value."""
    c, idx = build(rung_id).consts, _ch01_thread_index(rung_id)
    env = {**c, **{n: v[:WARP] for n, v in idx.items()}, "k": k}
    pattern = r"reinterpret_cast<const float4\s*\*>\(&(s[AB])(?:\[buf\])?\[k\]\[([^\]]+)\]\)"
    loads = []
    for tile, expr in re.findall(pattern, _ch01_source(rung_id)):
        var = next((v for v in ("i", "j") if re.search(rf"\b{v}\b", expr)), None)
        width = c["BM"] if tile == "sA" else c["BN"]
        for step in range(0, c["TM"] if var == "i" else c["TN"], 4) if var else [None]:
            col = np.broadcast_to(_ch01_eval(expr, {**env, **({var: step} if var else {})}), (WARP,))
            addr = CH01_FP32 * (k * width + col)
            chunks = len(set((addr // CHUNK).tolist()))
            loads.append({"operand": tile[1], "expr": " ".join(expr.split()) + (f"  ({var} = {step})" if var else ""),
                          "addresses": addr, "wavefronts": wavefronts(addr.tolist()),
                          "ideal": -(-chunks * CHUNK // (32 * 4))})
    return loads


# ---- figure 1: one warp, one step k, the sectors it moves --------------------------------------------------------

def _ch01_sector_strip(ax, x, y, sectors, addresses, colours, cell=1.0, height=2.2):
    """Sectors as boxes of 8 fp32 cells, CH01_SECTOR_ROW boxes per row; a used cell takes its first lane's colour.
    Returns the y below the strip."""
    from matplotlib.patches import Rectangle
    per = CH01_SECTOR // CH01_FP32
    lane_at = {}
    for lane, a in enumerate(addresses.tolist()):
        lane_at.setdefault(a // CH01_FP32, lane)
    for p, s in enumerate(sectors):
        sx, sy = x + (p % CH01_SECTOR_ROW) * (per + 1) * cell, y + (p // CH01_SECTOR_ROW) * (height + 0.6)
        for e in range(per):
            lane = lane_at.get(s * per + e)
            ax.add_patch(Rectangle((sx + e * cell, sy), cell, height, ec="white", lw=0.3,
                                   fc="0.86" if lane is None else colours[lane]))
        ax.add_patch(Rectangle((sx, sy), per * cell, height, fc="none", ec="0.25", lw=0.7))
    rows = -(-len(sectors) // CH01_SECTOR_ROW)
    return y + rows * (height + 0.6)


def fig_simt_warp_sectors(ax=None, size: int = CH01_SIZE):
    """Rungs 01_naive and 01_coalesced, warp 0 of block (0, 0), one step k. Left: the block's C tile with the 32
    elements the warp computes, coloured by lane (the kernel's own row/col expressions, evaluated). Right: the
    32-byte sectors its load of A, its load of B and its store of C fall in, 8 fp32 cells each, the cells a lane
    asked for in that lane's colour and the rest grey: everything grey is moved and thrown away."""
    import matplotlib.pyplot as plt

    colours = plt.get_cmap("viridis")(np.linspace(0.05, 0.95, WARP))
    ax = _axes(ax, (13.0, 9.2))
    strip_x = 44
    y0 = 0.0
    for rid in ("01_naive", "01_coalesced"):
        c = build(rid).consts
        s = _ch01_warp_sectors(rid, size=size)
        ax.text(0, y0 - 3.5, f"{rid}:  row = {_ch01_expr(rid, 'row')},  col = {_ch01_expr(rid, 'col')}",
                fontsize=10.5, weight="bold", ha="left", va="bottom", family="monospace")
        # the block's C tile, warp 0 in lane colours
        grid = np.full((c["BM"], c["BN"], 4), 0.93)
        for lane in range(WARP):
            grid[s["row"][lane], s["col"][lane]] = colours[lane]
        ax.imshow(grid, extent=(0, c["BN"], y0 + c["BM"], y0), interpolation="nearest")
        ax.text(c["BN"] / 2, y0 + c["BM"] + 1.2, f"C block tile {c['BM']} x {c['BN']}: warp 0 (threads 0-31)\n"
                f"coloured lane 0 (dark) to lane 31 (yellow)", ha="center", va="top", fontsize=8.5)
        y = y0
        for op, what in (("A", "load"), ("B", "load"), ("C", "store, once after the loop:")):
            d = s[op]
            n = len(d["sectors"])
            if d["used"] == CH01_FP32:
                use = f"one address for all {WARP} lanes (a broadcast) in {n} sector -> {d['moved']} B moved"
            else:
                use = (f"{d['used'] // CH01_FP32} addresses in {n} sectors -> {d['moved']:,} B moved, {d['used']} B "
                       f"used ({d['used'] / d['moved']:.1%})")
            ax.text(strip_x, y, f"{what} {op}[{d['expr']}]: {use}", fontsize=9, ha="left", va="top")
            y = _ch01_sector_strip(ax, strip_x, y + 3.4, d["sectors"], d["addresses"], colours) + 2.4
        moved = s["A"]["moved"] + s["B"]["moved"]
        flop = WARP * CH01_FLOP_PER_FFMA
        ax.text(strip_x, y + 0.2, f"per step k: one warp-wide FFMA ({flop} FLOP) for {moved:,} B of loads moved "
                f"= {flop / moved:.2g} FLOP per byte", fontsize=9.5, weight="bold", ha="left", va="top")
        y0 = max(y0 + c["BM"] + 16, y + 12)
    ax.set_xlim(-1, strip_x + CH01_SECTOR_ROW * 9 + 1)
    ax.set_ylim(y0 - 10, -9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"Who computes what, and the 32-byte sectors one warp moves for it (N = K = {size}, one step k):\n"
                 "lanes down a column of C hit 32 sectors of A for 4 bytes each; lanes along a row fill 4 sectors "
                 "of B", fontsize=10.5)
    return ax


# ---- figure 2: the block tile and thread tiles of 01_blocktile_2d ------------------------------------------------

def fig_simt_thread_tiles(ax=None, thread: int = 37, k: int = 2, rung_id: str = "01_blocktile_2d"):
    """The 128 x 128 block tile of 01_blocktile_2d cut into the TM x TN patches of its 256 threads (thread ids
    written in, coloured by warp), with the [BM, BK] tile of A and the [BK, BN] tile of B that one k tile stages in
    shared memory on its left and top. Outlined: `thread`'s patch, and the column of sA and row of sB it reads into
    registers at step `k`."""
    from matplotlib.patches import Rectangle
    import matplotlib.pyplot as plt

    c = build(rung_id).consts
    idx = _ch01_thread_index(rung_id)
    owner = _ch01_owner(rung_id)
    bm, bn, bk, tm, tn, threads = c["BM"], c["BN"], c["BK"], c["TM"], c["TN"], c["THREADS"]
    warps = threads // WARP
    pastel = plt.get_cmap("Pastel1").colors + plt.get_cmap("Pastel2").colors
    gap = 5
    cx, cy = bk + gap, bk + gap
    ax = _axes(ax, (13.0, 9.0))
    # shared tiles, one cell per element
    for x0, y0, w, h, name in ((0, cy, bk, bm, "sA"), (cx, 0, bn, bk, "sB")):
        ax.add_patch(Rectangle((x0, y0), w, h, fc=CH01_A if name == "sA" else CH01_B, alpha=0.25, ec="black", lw=0.8))
        for i in range(1, bk):
            if name == "sA":
                ax.plot([x0 + i] * 2, [y0, y0 + h], color="white", lw=0.5)
            else:
                ax.plot([x0, x0 + w], [y0 + i] * 2, color="white", lw=0.5)
    ax.text(bk / 2, cy + bm + 1.5, f"sA\n[{bm}, {bk}]", ha="center", va="top", fontsize=8.5)
    ax.text(cx + bn + 1.5, bk / 2, f"sB [{bk}, {bn}]", ha="left", va="center", fontsize=8.5)
    # thread patches, from the ownership map
    for r0 in range(0, bm, tm):
        for c0 in range(0, bn, tn):
            t = int(owner[r0, c0])
            ax.add_patch(Rectangle((cx + c0, cy + r0), tn, tm, fc=pastel[t // WARP % len(pastel)], ec="white",
                                   lw=0.6))
            ax.text(cx + c0 + tn / 2, cy + r0 + tm / 2, str(t), ha="center", va="center", fontsize=6.2,
                    color="0.15")
    # the chosen thread: its patch, and what it reads at step k
    r0, c0 = idx["trow"][thread] * tm, idx["tcol"][thread] * tn
    hi = "tab:red"
    ax.add_patch(Rectangle((cx + c0, cy + r0), tn, tm, fc="none", ec=hi, lw=2.4))
    ax.add_patch(Rectangle((k, cy + r0), 1, tm, fc=hi, alpha=0.7, ec=hi, lw=1.5))
    ax.add_patch(Rectangle((cx + c0, k), tn, 1, fc=hi, alpha=0.7, ec=hi, lw=1.5))
    ax.plot([k + 1, cx + c0], [cy + r0 + tm / 2] * 2, color=hi, lw=0.9, ls="--", zorder=0.5)  # under the patches
    ax.plot([cx + c0 + tn / 2] * 2, [k + 1, cy + r0], color=hi, lw=0.9, ls="--", zorder=0.5)
    ax.text(bk / 2, cy - 0.6, f"k: 0-{bk - 1}", ha="center", va="bottom", fontsize=7.5)
    ax.text(cx - 0.6, bk / 2, f"k: 0-{bk - 1}", ha="right", va="center", fontsize=7.5)
    # the numbers, from the constants
    loads, ffma = tm + tn, tm * tn
    tile_bytes = (bm * bk + bk * bn) * CH01_FP32
    tile_flop = 2 * bm * bn * bk
    tx = cx + bn + 6
    ax.text(tx, cy, f"thread {thread}:  trow = {_ch01_expr(rung_id, 'trow')} = {idx['trow'][thread]}\n"
            f"            tcol = {_ch01_expr(rung_id, 'tcol')} = {idx['tcol'][thread]}\n"
            f"owns rows {r0}-{r0 + tm - 1}, columns {c0}-{c0 + tn - 1} of the tile", fontsize=8.5, ha="left",
            va="top", family="monospace")
    ax.text(tx, cy + 20,
            f"at each step k (red: k = {k}), thread {thread}\n"
            f"  reads {tm} values of A (a column of sA)\n"
            f"  and {tn} of B (a row of sB) into registers,\n"
            f"  then does {tm} x {tn} = {ffma} FFMA on them:\n"
            f"  {ffma / loads:g} FFMA per shared value read\n"
            f"  (01_smem_tiled: 1 FFMA per 2 values read)\n\n"
            f"per k tile ({bk} steps), the whole block\n"
            f"  copies A {bm} x {bk} + B {bk} x {bn} from global\n"
            f"  = {tile_bytes // KIB} KiB, {bm * bk // threads} + {bk * bn // threads} elements per thread\n"
            f"  for 2 x {bm} x {bn} x {bk} = {tile_flop:,} FLOP\n"
            f"  = {tile_flop / tile_bytes:g} FLOP per byte\n\n"
            f"registers per thread: {ffma} accumulators\n  + {tm} + {tn} operands\n\n"
            f"colour = warp: warp w is threads {WARP}w to {WARP}w + 31,\n"
            f"  {WARP * tm * tn // bn} rows x {bn} columns; {warps} warps in all",
            fontsize=8.5, ha="left", va="top", linespacing=1.3)
    ax.set_xlim(-1, tx + 62)
    ax.set_ylim(cy + bm + 9, -3)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"{rung_id}: {threads} threads, each computing a {tm} x {tn} patch of the {bm} x {bn} block tile\n"
                 f"(numbers: thread ids; outlined: what thread {thread} reads from shared memory at one step k)",
                 fontsize=10.5)
    return ax


# ---- figure 3: block tile -> warp tiles -> lane patches of 01_warptiled ------------------------------------------

def fig_simt_warp_tiles(ax=None, lanes=(0, 9), rung_id: str = "01_warptiled"):
    """Left: the 128 x 128 block tile of 01_warptiled as its WM x WN warp tiles. Right: warp 0's tile enlarged,
    every 4 x 4 patch labelled with the lane that computes it (from the kernel's m0 / n0 and its half-tile offsets);
    the patches of `lanes` are filled. Dashed: the half-tile lines that separate a lane's four patches."""
    from matplotlib.patches import ConnectionPatch, Rectangle
    import matplotlib.pyplot as plt

    c = build(rung_id).consts
    idx = _ch01_thread_index(rung_id)
    owner = _ch01_owner(rung_id)
    bm, bn, wm, wn = c["BM"], c["BN"], c["WM"], c["WN"]
    warps = c["THREADS"] // WARP
    pastel = plt.get_cmap("Pastel1").colors
    strong = ("tab:red", "tab:blue", "tab:green", "tab:purple")
    ax = _axes(ax, (13.0, 6.6))
    for w in range(warps):
        r0, c0 = idx["wm"][w * WARP] * wm, idx["wn"][w * WARP] * wn
        ax.add_patch(Rectangle((c0, r0), wn, wm, fc=pastel[w % len(pastel)], ec="black", lw=1.0))
        ax.text(c0 + wn / 2, r0 + wm / 2, f"warp {w}\n{wm} x {wn}", ha="center", va="center", fontsize=9)
    ax.add_patch(Rectangle((0, 0), wn, wm, fc="none", ec="black", lw=2.4))
    ax.text(bn / 2, bm + 4, f"block tile {bm} x {bn}: {warps} warps as {bm // wm} x {bn // wn},\n"
            f"wm = {_ch01_expr(rung_id, 'wm')}, wn = {_ch01_expr(rung_id, 'wn')}", ha="center", va="top",
            fontsize=8.5)
    # warp 0, enlarged
    z, zx = 2.15, bn + 22
    p = 4                                      # a lane's patches are 4 x 4 (the kernel's float4 loads)
    mine = owner[:wm, :wn]
    for r in range(0, wm, p):
        for col in range(0, wn, p):
            lane = int(mine[r, col])
            fill = strong[lanes.index(lane)] if lane in lanes else pastel[0]
            ax.add_patch(Rectangle((zx + col * z, r * z), p * z, p * z, fc=fill, ec="white", lw=0.8,
                                   alpha=0.85 if lane in lanes else 1.0))
            ax.text(zx + (col + p / 2) * z, (r + p / 2) * z, str(lane), ha="center", va="center", fontsize=8,
                    color="white" if lane in lanes else "0.15", weight="bold" if lane in lanes else "normal")
    ax.add_patch(Rectangle((zx, 0), wn * z, wm * z, fc="none", ec="black", lw=2.0))
    ax.plot([zx, zx + wn * z], [wm / 2 * z] * 2, color="black", lw=1.2, ls="--")
    ax.plot([zx + wn / 2 * z] * 2, [0, wm * z], color="black", lw=1.2, ls="--")
    for xy_a, xy_b in (((wn, 0), (zx, 0)), ((wn, wm), (zx, wm * z))):
        ax.add_artist(ConnectionPatch(xy_a, xy_b, "data", "data", axesA=ax, axesB=ax, color="0.6", lw=0.8, ls=":"))
    for r in range(0, wm, wm // 2):
        ax.text(zx - 1, r * z + 1, f"row {r}", ha="right", va="top", fontsize=7.5, color="0.3")
    for col in range(0, wn, wn // 2):
        ax.text(zx + col * z + 1, wm * z + 1, f"column {col}", ha="left", va="top", fontsize=7.5, color="0.3")
    y = wm * z + 8
    for i, lane in enumerate(lanes):
        m0, n0 = int(idx["m0"][lane]), int(idx["n0"][lane])
        ax.text(zx, y, f"lane {lane}: m0 = {_ch01_expr(rung_id, 'm0')} = {m0}\n"
                f"        n0 = {_ch01_expr(rung_id, 'n0')} = {n0}\n"
                f"  patches at rows {m0}, {m0 + wm // 2} x columns {n0}, {n0 + wn // 2}",
                fontsize=8.5, ha="left", va="top", color=strong[i], family="monospace")
        y += 14
    ax.text(zx + wn * z / 2, -2, f"warp 0 enlarged: {WARP} lanes as {c['LANES_M']} x {c['LANES_N']}, "
            f"each owning 2 x 2 patches of {p} x {p}", ha="center", va="bottom", fontsize=9.5)
    ax.text(zx, y + 1,
            f"Neighbouring lanes own neighbouring {p}-column patches, so at each k\n"
            f"the warp's 16-byte reads of a row of sB are {c['LANES_N']} consecutive float4s\n"
            f"({c['LANES_N'] * CHUNK} B). {warps} warps x {WARP} lanes x {c['TM'] * c['TN']} elements = "
            f"{warps * WARP * c['TM'] * c['TN']:,} = {bm} x {bn}.", fontsize=8.5, ha="left", va="top")
    ax.set_xlim(-2, zx + wn * z + 2)
    ax.set_ylim(max(bm + 12, y + 16), -9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"{rung_id}: block tile -> warp tiles -> lane patches (read from the kernel's constexprs "
                 f"and index lines)", fontsize=10.5)
    return ax


# ---- figure 4: warp 0's 16-byte shared loads on the banks, 01_vectorized against 01_warptiled ---------------------

def _ch01_lanes_text(lanes: list[int]) -> str:
    """[0, 1, ..., 15] -> '0-15'; [0, 8, 16, 24] -> '0, 8, 16, 24'."""
    runs, start = [], lanes[0]
    for prev, cur in zip(lanes, lanes[1:] + [None]):
        if cur != prev + 1:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return ", ".join(runs)


def fig_simt_lds_banks(ax=None, k: int = 0):
    """The first LDS.128 of A and of B that warp 0 issues at step k, in 01_vectorized and in 01_warptiled, on the
    32 banks (8 slots of 16 bytes). Each distinct 16-byte chunk the warp asks for hangs under its slot, labelled
    with the lanes that share it (a broadcast); the deepest stack is the number of wavefronts, the explorer's
    `wavefronts` model. Below each rung: the wavefronts of all its LDS.128 at one k."""
    from matplotlib.patches import Rectangle
    import matplotlib.pyplot as plt

    colours = plt.get_cmap("tab20").colors
    ax = _axes(ax, (11.5, 11.0))
    y, box = 0.0, 1.35
    for rid in ("01_vectorized", "01_warptiled"):
        loads = _ch01_lds128(rid, k)
        for operand in ("A", "B"):
            d = next(ld for ld in loads if ld["operand"] == operand)
            chunks: dict[int, list[int]] = {}
            for lane, a in enumerate(d["addresses"].tolist()):
                chunks.setdefault(a // CHUNK, []).append(lane)
            fronts = d["wavefronts"]
            ax.text(-0.5, y, f"{rid}, s{operand}[k][{d['expr']}]: {len(chunks)} distinct 16-byte chunks "
                    f"-> {fronts} wavefront{'s' if fronts > 1 else ''} (ideal {d['ideal']})", fontsize=9.5,
                    ha="left", va="top", weight="bold")
            y += 1.6
            for b in range(BANKS):
                ax.add_patch(Rectangle((b, y), 1, 0.8, fc="0.93", ec="0.6", lw=0.6))
            for s in range(SLOTS + 1):
                ax.plot([s * 4] * 2, [y - 0.15, y + 0.95], color="black", lw=1.4)
            for s in range(SLOTS):
                ax.text(s * 4 + 2, y + 0.4, f"slot {s}", ha="center", va="center", fontsize=8, color="0.35")
            depth: dict[int, int] = {}
            for i, (chunk, who) in enumerate(sorted(chunks.items())):
                slot = chunk % SLOTS
                level = depth.get(slot, 0)
                depth[slot] = level + 1
                yy = y + 1.0 + level * (box + 0.1)
                ax.add_patch(Rectangle((slot * 4 + 0.06, yy), 3.88, box, fc=colours[i % len(colours)], alpha=0.75,
                                       ec="white"))
                ax.text(slot * 4 + 2, yy + box / 2, f"byte {chunk * CHUNK}\nlanes {_ch01_lanes_text(who)}",
                        ha="center", va="center", fontsize=7, linespacing=1.15)
            y += 1.0 + max(depth.values()) * (box + 0.1) + 1.2
        total, ideal = sum(ld["wavefronts"] for ld in loads), sum(ld["ideal"] for ld in loads)
        ax.text(-0.5, y, f"{rid}, all {len(loads)} LDS.128 of one step k: "
                f"{' + '.join(str(ld['wavefronts']) for ld in loads)} = {total} wavefronts (ideal {ideal})",
                fontsize=10, ha="left", va="top", color="tab:red" if total > ideal else "tab:green", weight="bold")
        y += 3.6
    ax.set_xlim(-0.6, BANKS + 0.6)
    ax.set_ylim(y - 2.2, -0.8)
    ax.set_xticks(np.arange(0, BANKS, 4) + 0.5, [f"bank {b}" for b in range(0, BANKS, 4)], fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks([])
    _clean(ax, ("bottom", "right", "left"))
    ax.set_title(f"Warp 0's 16-byte shared loads at step k = {k}: chunks under the same slot need separate "
                 f"wavefronts\nthe 32-byte stride of 01_vectorized puts four B chunks under each used slot; "
                 f"01_warptiled's lanes read consecutive chunks", fontsize=10.5, pad=12)
    return ax


# ---- chapter 02: WMMA ---------------------------------------------------------------------------------------

# Numbers the chapter 02 napkins use (H100 SXM datasheet and the ISA, not measured here).
CH02_TENSOR_FLOP_PER_CLK = 4096   # dense BF16 per SM per clock: 989.4 TFLOP/s / (132 SMs x 1,830 MHz)
CH02_FFMA_FLOP_PER_CLK = 256      # 128 FP32 lanes per SM x 2 FLOP per FFMA
CH02_BF16, CH02_FP32 = 2, 4       # bytes per element
CH02_WARP = 32
CH02_KIB = 1024
CH02_A, CH02_B = "tab:cyan", "tab:orange"
CH02_SIMT = "01_warptiled"        # chapter 01's best SIMT rung
CH02_RUNGS = ("02_wmma_naive", "02_wmma_smem")


def _ch02_fragment_elements() -> dict:
    """Elements per lane of the three m16n16k16 fragments the kernels declare, as this machine's crt/mma.h
    declares them (`__frag_base<T, num_elements>`); 16 x 16 / 32 where the header cannot be read."""
    default = {"a": 16 * 16 // CH02_WARP, "b": 16 * 16 // CH02_WARP, "acc": 16 * 16 // CH02_WARP}
    try:
        from .build import _include_dirs
        header = next(Path(d, "crt", "mma.h") for d in _include_dirs() if Path(d, "crt", "mma.h").exists())
        text = header.read_text()
    except Exception:   # no CUDA headers here: the arithmetic is the same
        return default
    bf16 = r"16, 16, 16, __nv_bfloat16, row_major>\s*:\s*public __frag_base<__nv_bfloat16, (\d+)"
    pats = {"a": r"fragment<matrix_a, " + bf16, "b": r"fragment<matrix_b, " + bf16,
            "acc": r"fragment<accumulator, 16, 16, 16, float>\s*:\s*public __frag_base<float, (\d+)"}
    got = {k: re.search(p, text) for k, p in pats.items()}
    return {k: int(m.group(1)) if m else default[k] for k, m in got.items()}


def _ch02_sass_per_call() -> dict:
    """What one WMMA call became in rung 02_wmma_smem's SASS, counted from its inventory over one k tile (the main
    loop is one k tile of BK, holding BK / WK steps of FRAG_M A fragments, FRAG_N B fragments, FRAG_M x FRAG_N
    mma_sync), and the epilogue's FRAG_M x FRAG_N store_matrix_sync."""
    r = rung("02_wmma_smem")
    b = build(r)
    c, inv = b.consts, b.inventory(r.entry)
    steps = c["BK"] // c["WK"]
    frags = steps * (c["FRAG_M"] + c["FRAG_N"])
    b_frags = steps * c["FRAG_N"]
    mmas = steps * c["FRAG_M"] * c["FRAG_N"]
    stores = c["FRAG_M"] * c["FRAG_N"]
    count = {op: inv.get(op, 0) for op in ("LD.E", "MOVM.16.MT88", "HMMA.16816.F32.BF16", "STG.E.64")}
    per = {"ld": count["LD.E"] / frags, "movm": count["MOVM.16.MT88"] / b_frags,
           "hmma": count["HMMA.16816.F32.BF16"] / mmas, "stg": count["STG.E.64"] / stores}
    assert all(v == int(v) and v > 0 for v in per.values()), (per, count)
    out = {k: int(v) for k, v in per.items()}
    # one warp, one 16-deep step: FRAG_M + FRAG_N fragment loads, FRAG_N of them transposed, FRAG_M x FRAG_N mma_sync
    out["step_ld"] = count["LD.E"] // steps
    out["step_movm"] = count["MOVM.16.MT88"] // steps
    out["step_hmma"] = count["HMMA.16816.F32.BF16"] // steps
    # the same warp tile fed by ldmatrix.x4 (four 8 x 8 b16 tiles, one 16 x 16 bf16 block per instruction):
    # FRAG_M blocks of A and FRAG_N blocks of B (16 deep x 16 wide each)
    out["step_ldsm"] = c["FRAG_M"] * (c["WM"] * c["WK"] // 256) + c["FRAG_N"] * (c["WK"] * c["WN"] // 256)
    out["warp_tile"] = (c["FRAG_M"] * c["WM"], c["FRAG_N"] * c["WN"])
    return out


# ---- figure 1: which warp computes which 16 x 16 tile of C, and what it loads per k step --------------------------

def _ch02_rect(ax, x, y, w, h, **kw):
    from matplotlib.patches import Rectangle
    ax.add_patch(Rectangle((x, y), w, h, **kw))


def fig_wmma_warp_tiles(ax=None):
    """Both rungs' block tiles drawn to one scale (1 unit = 1 element). Each C tile is coloured by the warp that owns
    it; the A and B pieces one warp reads in one 16-deep k step are outlined in that warp's colour. Rung 02_wmma_naive:
    four warps in 2 x 2, one 16 x 16 tile each, fragments straight from global. Rung 02_wmma_smem: the [BM, BK] and
    [BK, BN] tiles staged in shared memory (padding drawn grey), four warps in 2 x 2 owning 32 x 32 of C each
    (FRAG_M x FRAG_N fragments)."""
    import matplotlib.pyplot as plt

    colours = plt.get_cmap("tab10").colors
    warp_colours = [colours[i] for i in (0, 2, 3, 4)]
    n = build("02_wmma_naive").consts
    s = build("02_wmma_smem").consts
    ax = _axes(ax, (13.0, 7.4))
    gap = 3                       # between an operand and C
    lw = 2.4

    # -- rung 02_wmma_naive ----------------------------------------------------------------------------------------
    wm, wn, wk = n["WM"], n["WN"], n["WK"]
    bm, bn = n["BM"], n["BN"]
    warps = n["THREADS"] // CH02_WARP
    x0 = 0.0
    cx, cy = x0 + wk + gap, wk + gap        # C's corner
    _ch02_rect(ax, cx, 0, bn, wk, fc=CH02_B, ec="black", lw=0.8, alpha=0.35)       # B: [WK, BN] of this k step
    _ch02_rect(ax, x0, cy, wk, bm, fc=CH02_A, ec="black", lw=0.8, alpha=0.35)      # A: [BM, WK]
    for w in range(warps):
        r, c = w // n["WARPS_N"], w % n["WARPS_N"]
        col = warp_colours[w % len(warp_colours)]
        _ch02_rect(ax, cx + c * wn, cy + r * wm, wn, wm, fc=col, ec="white", lw=1.5, alpha=0.75)
        ax.text(cx + c * wn + wn / 2, cy + r * wm + wm / 2, f"warp {w}\n{wm} x {wn}", ha="center", va="center",
                fontsize=8, color="white", weight="bold")
    for r in range(bm // wm):
        readers = [w for w in range(warps) if w // n["WARPS_N"] == r]
        ax.text(x0 + wk / 2, cy + r * wm + wm / 2, f"A {wm}x{wk}\nwarps\n{', '.join(map(str, readers))}",
                ha="center", va="center", fontsize=7)
    for c in range(bn // wn):
        readers = [w for w in range(warps) if w % n["WARPS_N"] == c]
        ax.text(cx + c * wn + wn / 2, wk / 2, f"B {wk}x{wn}\nwarps {', '.join(map(str, readers))}", ha="center",
                va="center", fontsize=7)
    # warp 0's two pieces, outlined
    _ch02_rect(ax, x0, cy, wk, wm, fc="none", ec=warp_colours[0], lw=lw)
    _ch02_rect(ax, cx, 0, wn, wk, fc="none", ec=warp_colours[0], lw=lw)
    flop = 2 * wm * wn * wk
    per_warp = (wm * wk + wk * wn) * CH02_BF16
    distinct = (bm * wk + wk * bn) * CH02_BF16
    ax.text(x0, -4, f"02_wmma_naive: block {bm} x {bn},\n{warps} warps, k step {wk},\nevery operand from global",
            ha="left", va="bottom", fontsize=10, weight="bold")
    ax.text(x0, cy + bm + 4,
            f"per k step, each warp:\n  A {wm}x{wk} + B {wk}x{wn} = {per_warp // CH02_KIB} KiB\n"
            f"  for 2 x {wm} x {wn} x {wk} = {flop:,} FLOP\n  = {flop / per_warp:.0f} FLOP per byte\n"
            f"the block asks for {warps * per_warp // CH02_KIB} KiB,\n"
            f"{distinct // CH02_KIB} KiB of it distinct: each\npiece is read by {bm // wm} warps,\n"
            f"and no warp keeps it",
            ha="left", va="top", fontsize=8.5, linespacing=1.35)

    # -- rung 02_wmma_smem -----------------------------------------------------------------------------------------
    bm, bn, bk, pad = s["BM"], s["BN"], s["BK"], s["PAD"]
    wm, wn, wk = s["WM"], s["WN"], s["WK"]
    fm, fn = s["FRAG_M"], s["FRAG_N"]
    warps = s["THREADS"] // CH02_WARP
    x0 = cx + n["BN"] + 30
    cx, cy = x0 + bk + pad + gap, bk + gap
    _ch02_rect(ax, cx, 0, bn, bk, fc=CH02_B, ec="black", lw=0.8, alpha=0.35)                  # sB [BK, BN]
    _ch02_rect(ax, cx + bn, 0, pad, bk, fc="0.8", ec="0.5", lw=0.6, hatch="////")           # its padding
    _ch02_rect(ax, x0, cy, bk, bm, fc=CH02_A, ec="black", lw=0.8, alpha=0.35)                 # sA [BM, BK]
    _ch02_rect(ax, x0 + bk, cy, pad, bm, fc="0.8", ec="0.5", lw=0.6, hatch="////")          # its padding
    for kk in range(wk, bk, wk):                                                              # the kk steps
        ax.plot([x0 + kk] * 2, [cy, cy + bm], color="black", lw=0.6, ls="--")
        ax.plot([cx, cx + bn], [kk] * 2, color="black", lw=0.6, ls="--")
    for w in range(warps):
        r, c = w // s["WARPS_N"], w % s["WARPS_N"]
        col = warp_colours[w % len(warp_colours)]
        top, left = cy + r * fm * wm, cx + c * fn * wn
        _ch02_rect(ax, left, top, fn * wn, fm * wm, fc=col, ec="white", lw=1.5, alpha=0.75)
        for i in range(1, fm):
            ax.plot([left, left + fn * wn], [top + i * wm] * 2, color="white", lw=0.8)
        for j in range(1, fn):
            ax.plot([left + j * wn] * 2, [top, top + fm * wm], color="white", lw=0.8)
        ax.text(left + fn * wn / 2, top + fm * wm / 2, f"warp {w}: {fm * wm} x {fn * wn}\n= {fm} x {fn} "
                f"fragments", ha="center", va="center", fontsize=8, color="white", weight="bold",
                bbox=dict(fc=col, ec="none", alpha=0.95, pad=1.5))
    # warp 0 in its first kk step: FRAG_M A fragments and FRAG_N B fragments
    _ch02_rect(ax, x0, cy, wk, fm * wm, fc="none", ec=warp_colours[0], lw=lw)
    _ch02_rect(ax, cx, 0, fn * wn, wk, fc="none", ec=warp_colours[0], lw=lw)
    ax.text(x0 + wk + (bk - wk) / 2, cy + bm / 2 + 14, f"sA\n{bm} x {bk}\n+ {pad}\npad", ha="center", va="center",
            fontsize=8)
    ax.text(cx + bn / 2 + 10, bk / 2 + 5, f"sB {bk} x {bn} + {pad} pad", ha="center", va="center", fontsize=8)
    smem = (bm * (bk + pad) + bk * (bn + pad)) * CH02_BF16
    tile_bytes = (bm * bk + bk * bn) * CH02_BF16
    tile_flop = 2 * bm * bn * bk
    step_bytes = (fm * wm * wk + wk * fn * wn) * CH02_BF16
    step_flop = 2 * fm * wm * fn * wn * wk
    ax.text(x0, -4, f"02_wmma_smem: block {bm} x {bn}, {warps} warps, k tile {bk}\n(two 16-deep steps, dashed), "
            f"operands staged in shared memory", ha="left", va="bottom", fontsize=10, weight="bold")
    ax.text(cx + bn + pad + 3, cy,
            f"per k tile, the block copies\n  A {bm}x{bk} + B {bk}x{bn} = {tile_bytes // CH02_KIB} KiB from global\n"
            f"  for 2 x {bm} x {bn} x {bk} = {tile_flop:,} FLOP\n  = {tile_flop / tile_bytes:.0f} FLOP per byte\n\n"
            f"per 16-deep step, warp 0 (outlined)\nreads {fm} A + {fn} B fragments\n"
            f"  = {step_bytes // CH02_KIB} KiB from shared memory\n  for {fm * fn} mma_sync = {step_flop:,} FLOP\n\n"
            f"shared tiles with padding:\n  {smem:,} B per block",
            ha="left", va="top", fontsize=8.5, linespacing=1.35)
    ax.set_xlim(-2, cx + bn + pad + 62)
    ax.set_ylim(cy + bm + 6, -22)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("Who computes what: each warp owns 16 x 16 tiles of C and fetches its own A and B pieces\n"
                 "(drawn to one scale from the kernels' constants; outlined: what warp 0 reads in one 16-deep step)",
                 fontsize=10.5)
    return ax


# ---- figure 2: FLOP per byte loaded, against what each pipe needs ---------------------------------------------------

def fig_wmma_intensity(ax=None):
    """FLOP per byte of global loads of chapter 01's best SIMT rung and of both WMMA rungs (helpers.build.intensity,
    from each kernel's tile constants), with the machine balance of each pipe: the recorded peak of the pipe divided
    by the recorded HBM and L2 bandwidth. A rung left of its pipe's balance line cannot keep that pipe busy from that
    memory. Beside each bar: the bytes per clock one SM would need to run its pipe at the datasheet peak."""
    from .ladder import recorded_ceilings

    ceil = recorded_ceilings()
    rows = [(CH02_SIMT, "FP32 FFMA (CUDA cores)", CH02_FFMA_FLOP_PER_CLK, "tab:orange")] + \
           [(r, "BF16 HMMA (tensor cores)", CH02_TENSOR_FLOP_PER_CLK, "tab:green") for r in CH02_RUNGS]
    ax = _axes(ax, (11.0, 5.6))
    ys = [2.4, 1.0, 0.0]                  # the SIMT rung apart from the two tensor-core rungs
    labels = []
    for y, (rid, pipe, flop_clk, colour) in zip(ys, rows):
        r = rung(rid)
        c = build(r).consts
        ai = intensity(r)
        ax.barh(y, ai, height=0.5, color=colour, alpha=0.8)
        ax.text(ai * 1.06, y, f"{ai:.0f} FLOP/B", va="center", fontsize=9.5, weight="bold")
        labels.append(f"{rid}\n{c[r.reuse[0]]} x {c[r.reuse[1]]} {r.dtype} tile\n{pipe}: at the datasheet peak\n"
                      f"({flop_clk:,} FLOP/clk per SM) it needs\n{flop_clk / ai:.0f} B per clock per SM")
    # each pipe's balance lines span only the rows that use that pipe
    lines = [("ffma_peak", "l2_read", "tab:orange", ":", (1.95, 3.4)),
             ("ffma_peak", "hbm_copy", "tab:orange", "-", (1.95, 3.4)),
             ("hmma_peak", "l2_read", "tab:green", ":", (-0.45, 1.55)),
             ("hmma_peak", "hbm_copy", "tab:green", "-", (-0.45, 1.55))]
    names = {"ffma_peak": "FFMA probe", "hmma_peak": "mma.sync probe", "hbm_copy": "HBM copy", "l2_read": "L2 read"}
    for peak, bw, colour, ls, (lo, hi) in lines:
        if peak not in ceil or bw not in ceil:
            continue
        bal = ceil[peak].value / ceil[bw].value           # TFLOP/s / (TB/s) = FLOP per byte
        ax.vlines(bal, lo, hi, color=colour, ls=ls, lw=1.5)
        ax.text(bal * 1.04, hi, f"{names[peak]} /\n{names[bw]}\n= {bal:.0f} FLOP/B", fontsize=7.5, color=colour,
                va="top", ha="left")
    src = next(iter(ceil.values()))
    ax.set(xscale="log", xlim=(1, 1000), ylim=(-0.6, 3.45))
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel("arithmetic intensity: FLOP per byte of global loads (log scale); left of a line of its own colour, "
                  "a rung\ncannot keep that pipe busy from that memory (solid: HBM, dotted: L2)", fontsize=9)
    ax.set_title("The same 32 FLOP per byte that fed the CUDA cores starves the tensor cores\n"
                 f"(lines: a pipe's peak / a memory's bandwidth, recorded on {src.gpu}, {src.date[:10]})",
                 fontsize=10.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


# ---- figure 3: what WMMA hides, and what chapter 03 will write by hand --------------------------------------------

def _ch02_lanes(ax, x, y, regs, colour, w=3.2, h=1.0, label=""):
    """A fragment as 32 lane columns x `regs` 32-bit registers, every cell a '?': the API does not say which lane
    holds which element."""
    from matplotlib.patches import Rectangle
    cw, rh = w / CH02_WARP, h / regs
    for lane in range(CH02_WARP):
        for reg in range(regs):
            ax.add_patch(Rectangle((x + lane * cw, y + reg * rh), cw, rh, fc=colour, ec="white", lw=0.4,
                                   alpha=0.55))
    ax.text(x + w / 2, y + h / 2, "?", ha="center", va="center", fontsize=20, color="0.25", weight="bold")
    ax.text(x + w / 2, y + h + 0.08, label, ha="center", va="bottom", fontsize=8)
    ax.text(x, y - 0.06, "lane 0", ha="left", va="top", fontsize=6.5, color="0.35")
    ax.text(x + w, y - 0.06, "lane 31", ha="right", va="top", fontsize=6.5, color="0.35")


def _ch02_box(ax, x, y, w, h, text, fc="white", ec="0.3", fontsize=8.5, weight="normal"):
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.03", fc=fc, ec=ec, lw=1.0))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize, weight=weight,
            linespacing=1.3)


def _ch02_arrow(ax, x0, y0, x1, y1, text="", colour="black"):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.3))
    if text:
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.08, text, ha="center", va="bottom", fontsize=8.5,
                family="monospace", weight="bold")


def fig_wmma_opaque(ax=None):
    """The WMMA pipeline of one 16 x 16 x 16 step: load_matrix_sync -> mma_sync -> store_matrix_sync, with the
    fragments drawn as opaque boxes of 32 lanes x registers (per-lane element counts from crt/mma.h). Below each call,
    what it became in rung 02_wmma_smem's SASS (counted from the inventory), and what chapter 03 writes instead."""
    el = _ch02_fragment_elements()
    per = _ch02_sass_per_call()
    regs = {"a": el["a"] * CH02_BF16 // 4, "b": el["b"] * CH02_BF16 // 4, "acc": el["acc"] * CH02_FP32 // 4}
    ax = _axes(ax, (13.0, 7.6))
    # columns: memory | fragments a, b | accumulator | memory
    xm, xf, xc, xo = 0.0, 3.3, 7.9, 11.8
    ya, yb = 4.3, 2.6
    _ch02_box(ax, xm, ya + 0.1, 1.7, 0.9, "A tile\n16 x 16 bf16\n512 B, row-major", fc="#d9f2f7")
    _ch02_box(ax, xm, yb + 0.1, 1.7, 0.9, "B tile\n16 x 16 bf16\n512 B, row-major", fc="#fde3c8")
    _ch02_lanes(ax, xf, ya, regs["a"], CH02_A,
                label=f"fragment a: {el['a']} bf16 per lane = {regs['a']} registers")
    _ch02_lanes(ax, xf, yb, regs["b"], CH02_B,
                label=f"fragment b: {el['b']} bf16 per lane = {regs['b']} registers")
    _ch02_lanes(ax, xc, (ya + yb) / 2 - 0.35, regs["acc"], "0.6", w=3.0, h=1.6,
                label=f"accumulator c: {el['acc']} fp32 per lane = {regs['acc']} registers")
    _ch02_box(ax, xo, (ya + yb) / 2 + 0.05, 1.5, 0.9, "C tile\n16 x 16 fp32\n1 KiB", fc="0.92")
    _ch02_arrow(ax, xm + 1.75, ya + 0.55, xf - 0.05, ya + 0.55, "load_matrix_sync")
    _ch02_arrow(ax, xm + 1.75, yb + 0.55, xf - 0.05, yb + 0.55, "load_matrix_sync")
    _ch02_arrow(ax, xf + 3.25, ya + 0.5, xc - 0.05, (ya + yb) / 2 + 0.75, "")
    _ch02_arrow(ax, xf + 3.25, yb + 0.5, xc - 0.05, (ya + yb) / 2 + 0.15, "")
    ax.text(xf + 3.95, (ya + yb) / 2 + 0.45, "mma_sync", ha="center", va="center", fontsize=8.5,
            family="monospace", weight="bold")
    _ch02_arrow(ax, xc + 3.05, (ya + yb) / 2 + 0.5, xo - 0.05, (ya + yb) / 2 + 0.5, "")
    ax.text(xo + 0.75, (ya + yb) / 2 + 1.12, "store_matrix_sync", ha="center", va="bottom", fontsize=8.5,
            family="monospace", weight="bold")
    ax.text(xf + 1.6, ya + 1.55, "which lane holds which element: unspecified, per the CUDA guide",
            ha="center", va="bottom", fontsize=9, style="italic")

    # the two lower rows: what this build does, what chapter 03 writes
    y1, y2, h = 0.9, -0.55, 1.0
    ax.text(-0.1, y1 + h + 0.12, "what rung 02_wmma_smem's SASS does per call (counted on this build):",
            fontsize=9.5, weight="bold", ha="left", va="bottom")
    _ch02_box(ax, xm, y1, 3.1, h, f"load_matrix_sync(a): {per['ld']} x LD.E\n32-bit generic loads, 128 B per "
              f"warp instr.\nload_matrix_sync(b): + {per['movm']} x MOVM.16.MT88\n(8 x 8 transposes in registers)",
              fc="#fff4e0", fontsize=8)
    _ch02_box(ax, xm + 3.4, y1, 3.0, h, f"mma_sync: {per['hmma']} x HMMA.16816.F32.BF16\n"
              f"the hardware's m16n8k16,\none per 8 columns of C", fc="#fff4e0", fontsize=8)
    _ch02_box(ax, xm + 6.7, y1, 3.0, h, f"store_matrix_sync: {per['stg']} x STG.E.64\n"
              f"({el['acc']} fp32 per lane, 2 per store)", fc="#fff4e0", fontsize=8)
    _ch02_box(ax, xm + 10.0, y1, 3.3, h, f"per 16-deep step, one warp\n({per['warp_tile'][0]} x {per['warp_tile'][1]}"
              f" of C): {per['step_ld']} LD.E\n+ {per['step_movm']} MOVM for {per['step_hmma']} HMMA = "
              f"{(per['step_ld'] + per['step_movm']) / per['step_hmma']:g} loads\nand transposes per HMMA",
              fc="#fff4e0", fontsize=8)
    ax.text(-0.1, y2 + h + 0.12, "what chapter 03 writes by hand instead (PTX, documented lane maps):",
            fontsize=9.5, weight="bold", ha="left", va="bottom")
    _ch02_box(ax, xm, y2, 3.1, h, "ldmatrix.x4: one instruction,\nfour 8 x 8 b16 tiles = 512 B\n"
              "from shared; .trans transposes B\non the way in", fc="#e5f5e0", fontsize=8)
    _ch02_box(ax, xm + 3.4, y2, 3.0, h, "mma.sync.m16n8k16 x 2\nthe same HMMA, with the lane\nof every element "
              "in the ISA", fc="#e5f5e0", fontsize=8)
    _ch02_box(ax, xm + 6.7, y2, 3.0, h, "the epilogue stores registers\nwhose row and column the\nkernel can name",
              fc="#e5f5e0", fontsize=8)
    _ch02_box(ax, xm + 10.0, y2, 3.3, h, f"the same warp tile by hand:\n{per['step_ldsm']} ldmatrix.x4 for "
              f"{per['step_hmma']} HMMA\n= {per['step_ldsm'] / per['step_hmma']:g} per HMMA; and the kernel owns\n"
              "the layout (swizzle, ch. 04)", fc="#e5f5e0", fontsize=8)
    ax.set_xlim(-0.2, 13.5)
    ax.set_ylim(-0.75, 6.05)
    ax.axis("off")
    ax.set_title("What WMMA hides: fragments are opaque boxes of 32 lanes x registers; the SASS shows what fills them",
                 fontsize=10.5)
    return ax


# ---- chapter 03: mma.sync -----------------------------------------------------------------------------------

# ---- chapter 03: mma.sync and ldmatrix ------------------------------------------------------------------------

CH03_RUNG = "03_mma_sync"
CH03_MMA_M, CH03_MMA_N, CH03_MMA_K = 16, 8, 16   # mma.sync.m16n8k16: M x N x K
CH03_LDSM_BYTES = 4 * 8 * 8 * 2                  # one ldmatrix.x4: four 8 x 8 matrices of b16 = 512 bytes
CH03_BANKS, CH03_BANK_BYTES = 32, 4              # shared memory: 32 banks of 4 bytes
CH03_ROW_BYTES = 16                              # one ldmatrix row address names 8 b16 = 16 bytes
CH03_BF16 = 2
CH03_QUADRANT_COLOURS = ("#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb")   # matrices 0-3 of one ldmatrix.x4


def _ch03_consts() -> dict:
    return build(CH03_RUNG).consts


def _ch03_address_rows(lane_cols: int = 16) -> list[tuple[int, int]]:
    """(row, first column) each lane's row address names in a 16 x 16 fragment, the way rung 03 issues ldmatrix:
    recovered from the explorer's byte offsets into a row-major 16 x 16 bf16 tile."""
    offs = ldmatrix_addresses("A", "row-major", (16, lane_cols))
    return [(o // (lane_cols * CH03_BF16), o % (lane_cols * CH03_BF16) // CH03_BF16) for o in offs]


# ---- 1. ldmatrix.x4: who gives the addresses, who receives the elements ----------------------------------------

def fig_ldmatrix_lane_map(ax=None):
    """One ldmatrix.x4 of A (left) and one ldmatrix.x4.trans of B (right), exactly as rung 03 issues them, over the
    16 x 16 bf16 block each one loads. The label beside each 8-element row segment is the lane that supplies its
    16-byte row address; the number in a cell is the lane that receives that element, and the colour says which of
    the four matrices (hence which of the lane's four registers) it travels in. The receivers are computed by the
    explorer's ldmatrix model and asserted equal to mma.sync's own fragment layout."""
    from matplotlib.patches import Rectangle

    ax = _axes(ax, (13.5, 7.6))
    rows_of = _ch03_address_rows()                      # lane -> (row, column) of its row address
    frag_a = mma_fragment("A")[0]                       # [16 m, 16 k] owner lanes
    frag_b = mma_fragment("B")[0]                       # [16 k, 8 n] owner lanes
    panels = [
        (False, 0.0, "A block of one mma.sync: 16 rows (m) x 16 k, row-major in shared memory",
         "ldmatrix.x4", "rows: m 0-15", "columns: k 0-7 | k 8-15", ["a[i][0]", "a[i][1]", "a[i][2]", "a[i][3]"],
         "the A fragment a[i][0..3] of one m16 tile"),
        (True, 25.0, "B block of two mma.sync: 16 k x 16 columns (n), row-major in shared memory",
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
            ax.add_patch(Rectangle((x0 + c, r), 1, 1, facecolor=CH03_QUADRANT_COLOURS[matrix_of[r, c]],
                                   edgecolor="white", lw=0.8))
            ax.text(x0 + c + 0.5, r + 0.5, str(ln), ha="center", va="center", fontsize=7)
        # row segments (16 bytes each) and the lane that addresses them
        for lane, (r, c) in enumerate(rows_of):
            ax.add_patch(Rectangle((x0 + c, r), 8, 1, fill=False, edgecolor="0.25", lw=0.9))
            left = c == 0
            ax.text(x0 + (-0.25 if left else 16.25), r + 0.5, f"lane {lane}", ha="right" if left else "left",
                    va="center", fontsize=7, color="tab:red")
        ax.plot([x0 + 8, x0 + 8], [0, 16], color="black", lw=1.8)
        ax.plot([x0, x0 + 16], [8, 8], color="black", lw=1.8)
        ax.add_patch(Rectangle((x0, 0), 16, 16, fill=False, edgecolor="black", lw=1.8))
        # which matrix (register) each quadrant is
        for m in range(4):
            r0, c0 = rows_of[8 * m]
            y = -0.45 if r0 == 0 else 16.45
            ax.text(x0 + c0 + 4, y, f"matrix {m} (lanes {8 * m}-{8 * m + 7})\nr[{m}] -> {regs[m]}",
                    ha="center", va="bottom" if r0 == 0 else "top", fontsize=7.5)
        ax.text(x0 + 8, -2.6, f"{instr}: {title.split(':')[0]}", ha="center", va="bottom", fontsize=9.5,
                fontweight="bold")
        ax.text(x0 + 8, 19.2, f"{ylab};  {xlab}\nthe four registers become {dest}", ha="center", va="top",
                fontsize=8)
    ax.set_xlim(-3.2, 25 + 16 + 3.2)
    ax.set_ylim(20.6, -3.6)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    _clean(ax, ("top", "right", "bottom", "left"))
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

    c = _ch03_consts()
    bm, bn, bk, wm, wn = c["BM"], c["BN"], c["BK"], c["WM"], c["WN"]
    mma_m, mma_n = wm // CH03_MMA_M, wn // CH03_MMA_N
    assert (mma_m, mma_n) == (c["MMA_M"], c["MMA_N"])
    warps_m, warps_n = bm // wm, bn // wn
    ldsm_a, ldsm_b = mma_m, mma_n // 2
    mmas = mma_m * mma_n
    ax = _axes(ax, (12.8, 7.4))

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
    ka = CH03_MMA_K
    ax.add_patch(Rectangle((x0 - ka - 2, y0), ka, wm, facecolor="white", edgecolor="black", lw=1.0))
    for i in range(ldsm_a):
        y = y0 + i * CH03_MMA_M
        ax.add_patch(Rectangle((x0 - ka - 2, y), ka, CH03_MMA_M, facecolor="#c6dbef", edgecolor="black", lw=1.0))
        ax.text(x0 - ka / 2 - 2, y + CH03_MMA_M / 2, f"ldmatrix\n.x4\n-> a[{i}]", ha="center", va="center",
                fontsize=7.5)
    for jj in range(ldsm_b):
        x = x0 + jj * 2 * CH03_MMA_N
        ax.add_patch(Rectangle((x, y0 - ka - 2), 2 * CH03_MMA_N, ka, facecolor="#c7e9c0", edgecolor="black",
                               lw=1.0))
        ax.plot([x + CH03_MMA_N] * 2, [y0 - ka - 2, y0 - 2], color="0.4", lw=0.8, ls="--")
        ax.text(x + CH03_MMA_N, y0 - ka / 2 - 2, f"ldmatrix\n.x4.trans\n-> b[{2 * jj}], b[{2 * jj + 1}]",
                ha="center", va="center", fontsize=7.5)
    for i in range(mma_m):
        for j in range(mma_n):
            x, y = x0 + j * CH03_MMA_N, y0 + i * CH03_MMA_M
            ax.add_patch(Rectangle((x, y), CH03_MMA_N, CH03_MMA_M, facecolor="#fdd0a2", edgecolor="black", lw=1.0))
            ax.text(x + CH03_MMA_N / 2, y + CH03_MMA_M / 2, f"mma\n({i},{j})\n#{i * mma_n + j}", ha="center",
                    va="center", fontsize=7)
    ax.text(x0 - ka / 2 - 2, y0 - 2.5, f"A strip\n{wm} x {ka}", ha="center", va="bottom", fontsize=8)
    ax.text(x0 + wn + 1.0, y0 - ka / 2 - 2, f"B strip\n{ka} x {wn}", ha="left", va="center", fontsize=8)
    ax.text(x0 + wn + 1.0, y0 + wm / 2, f"warp 0's C tile\n{wm} x {wn} fp32\n= {mma_m} x {mma_n} tiles\n"
            f"of m16n8", ha="left", va="center", fontsize=8)

    flop = mmas * 2 * CH03_MMA_M * CH03_MMA_N * CH03_MMA_K
    smem = (ldsm_a + ldsm_b) * CH03_LDSM_BYTES
    ax.text(x0 + wn / 2 - 8, y0 + wm + 3, f"per 16-deep k step, one warp: {ldsm_a} + {ldsm_b} = {ldsm_a + ldsm_b} "
            f"ldmatrix.x4 and {mma_m} x {mma_n} = {mmas} mma.sync\n"
            f"{ldsm_a + ldsm_b} x {CH03_LDSM_BYTES} B = {smem:,} B read from shared memory for {flop:,} FLOP "
            f"({flop / smem:.1f} FLOP per byte)\n"
            f"per k tile (BK = {bk}): {bk // ka} k steps; per block: {(ldsm_a + ldsm_b) * bk // ka * warps_m * warps_n}"
            f" ldmatrix.x4 and {mmas * bk // ka * warps_m * warps_n} mma.sync",
            ha="center", va="top", fontsize=8.5)
    ax.set_xlim(-1, x0 + wn + 17)
    ax.set_ylim(y0 + wm + 14, y0 - CH03_MMA_K - 5)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    _clean(ax, ("top", "right", "bottom", "left"))
    ax.set_title(f"Rung 03's tiling, from its constants: block {bm} x {bn} x {bk}, warp {wm} x {wn}, "
                 f"one k step of m16n8k16", fontsize=10.5)
    return ax


# ---- 3. every phase of one ldmatrix.x4 on the 32 banks ----------------------------------------------------------

def _ch03_bank_rows(operand: str, tile) -> tuple[np.ndarray, list[int]]:
    """[4 phases, 32 banks]: how many different 16-byte rows of each phase of one ldmatrix.x4 fall on each bank
    (0 = idle), and the wavefronts each phase needs (the explorer's slot rule)."""
    addrs = ldmatrix_addresses(operand, "row-major", tile)
    load = np.zeros((4, CH03_BANKS), int)
    fronts = []
    for p in range(4):
        phase = addrs[8 * p: 8 * p + 8]
        for a in set(phase):
            bank = a // CH03_BANK_BYTES % CH03_BANKS
            load[p, bank: bank + CH03_ROW_BYTES // CH03_BANK_BYTES] += 1
        fronts.append(wavefronts(phase))
        assert load[p].max() == fronts[-1]
    return load, fronts


def fig_ldmatrix_bank_heat(ax=None):
    """Heat map, one row per phase of one ldmatrix.x4 (A) and one ldmatrix.x4.trans (B) of rung 03, one column per
    bank: how many different 16-byte rows that bank must deliver in that phase. The hottest bank of a phase is its
    wavefront count; on the right, the whole k tile of one block, from the kernel's constants."""
    import matplotlib.pyplot as plt

    c = _ch03_consts()
    tiles = {"A": (c["BM"], c["BK"]), "B": (c["BK"], c["BN"])}
    ax = _axes(ax, (13.0, 5.4))
    grid, labels, fronts_all = [], [], []
    per_x4 = {}
    for operand in ("A", "B"):
        load, fronts = _ch03_bank_rows(operand, tiles[operand])
        # the chapter's averages over every ldmatrix the warp issues must agree with this one instruction
        assert abs(conflict_degree(operand, "row-major", tiles[operand]) - np.mean(fronts)) < 1e-9
        per_x4[operand] = sum(fronts)
        if grid:
            grid.append(np.full(CH03_BANKS, np.nan))
            labels.append("")
            fronts_all.append(None)
        cols = tiles[operand][1]
        addrs = ldmatrix_addresses(operand, "row-major", tiles[operand])
        for p in range(4):
            grid.append(load[p])
            r0, c0 = addrs[8 * p] // (cols * CH03_BF16), addrs[8 * p] % (cols * CH03_BF16) // CH03_BF16
            what = f"rows {r0}-{r0 + 7}, k {c0}-{c0 + 7}" if operand == "A" else f"k {r0}-{r0 + 7}, n {c0}-{c0 + 7}"
            labels.append(f"{operand} phase {p}: lanes {8 * p}-{8 * p + 7}, {what}")
            fronts_all.append(fronts[p])
    grid = np.array(grid, float)
    cmap = plt.get_cmap("YlOrRd").copy()
    cmap.set_bad("0.94")                                   # an idle bank
    im = ax.imshow(np.ma.masked_invalid(np.where(grid == 0, np.nan, grid)), cmap=cmap, vmin=0, vmax=8,
                   aspect="auto")
    gap = labels.index("")
    ax.axhspan(gap - 0.5, gap + 0.5, color="white", zorder=2)
    for (r, b), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(b, r, f"{int(v)}" if v else "", ha="center", va="center", fontsize=7.5,
                    color="white" if v >= 6 else "black")
    for r, f in enumerate(fronts_all):
        if f is not None:
            ax.text(CH03_BANKS - 0.2, r, f"  {f} wavefronts, {CH03_BANKS - int((grid[r] > 0).sum())} banks idle",
                    ha="left", va="center", fontsize=8.5)
    ax.set_yticks(range(len(labels)), labels, fontsize=8.5)
    ax.set_xticks(range(0, CH03_BANKS, 4), [f"{b}" for b in range(0, CH03_BANKS, 4)], fontsize=8)
    ax.set_xlabel("bank (4 bytes each; a 16-byte row address covers 4 consecutive banks; grey = idle)", fontsize=9)
    ax.tick_params(length=0)
    for b in range(0, CH03_BANKS + 1, 4):
        ax.axvline(b - 0.5, color="0.6", lw=0.6)
    cb = plt.colorbar(im, ax=ax, fraction=0.02, pad=0.2)
    cb.set_label("different rows on this bank", fontsize=8.5)

    warps = c["THREADS"] // 32
    steps = c["BK"] // CH03_MMA_K
    n_a, n_b = c["MMA_M"] * steps * warps, c["MMA_N"] // 2 * steps * warps
    total = n_a * per_x4["A"] + n_b * per_x4["B"]
    ideal = (n_a + n_b) * 4
    ra, rb = c["BK"] * CH03_BF16, c["BN"] * CH03_BF16
    ax.set_title(f"Rung 03, unswizzled: every phase of one ldmatrix.x4 on the 32 banks. A rows are {ra} B apart, "
                 f"B rows {rb} B\nper k tile the block issues {n_a} x4 of A and {n_b} x4.trans of B: "
                 f"{n_a} x {per_x4['A']} + {n_b} x {per_x4['B']} = {total:,} wavefronts where {ideal} would do "
                 f"({total / ideal:.2f}x)", fontsize=10)
    return ax


# ---- chapter 04: swizzle ------------------------------------------------------------------------------------

BANKS = 32            # shared-memory banks
BANK_BYTES = 4        # bytes one bank serves per wavefront
WAVEFRONT = BANKS * BANK_BYTES   # 128 bytes per wavefront
SLOTS = WAVEFRONT // CHUNK       # 8 slots of 4 banks
BF16 = 2
PAD = 8               # the padded layout's spare bf16 per row (explore.offset): 16 bytes


def _tiles(rung: str = "04_swizzle") -> dict:
    """The two shared tiles of a mma.sync rung: A [BM, BK] and B [BK, BN], bf16, row-major."""
    c = build(rung).consts
    return {"A": (c["BM"], c["BK"]), "B": (c["BK"], c["BN"])}


# ---- 1. one ldmatrix phase on the 32 banks ---------------------------------------------------------------------

def fig_phase_on_banks(ax=None, phase: int = 0):
    """The 32 banks drawn as one row of 4-byte cells, grouped in 8 slots of 16 bytes. Each of the 8 row addresses of
    one ldmatrix phase is a 16-byte block stacked above the slot it falls in: the height of the tallest stack is the
    number of wavefronts the phase needs. B and A tiles of rung 04, row-major (rung 03) and swizzled (rung 04)."""
    from matplotlib.patches import Rectangle
    import matplotlib.pyplot as plt

    tiles = _tiles()
    # drawn bottom-up, so they read top-down: B row-major, B swizzled, A row-major, A swizzled
    cases = [("A", "swizzled"), ("A", "row-major"), ("B", "swizzled"), ("B", "row-major")]
    colours = plt.get_cmap("tab10").colors
    ax = _axes(ax, (11.0, 9.6))
    y = 0.0
    gap = 2.6
    for operand, layout in cases:
        rows, cols = tiles[operand]
        addrs = ldmatrix_addresses(operand, layout, tiles[operand])[8 * phase: 8 * phase + 8]
        fronts = wavefronts(addrs)
        # the bank row
        for b in range(BANKS):
            ax.add_patch(Rectangle((b, y), 1, 0.8, facecolor="0.93", edgecolor="0.6", lw=0.6))
        for s in range(SLOTS + 1):
            ax.plot([s * 4, s * 4], [y - 0.15, y + 0.95], color="black", lw=1.4)
        for s in range(SLOTS):
            ax.text(s * 4 + 2, y + 0.4, f"slot {s}", ha="center", va="center", fontsize=8, color="0.35")
        # the 8 requests, stacked over their slot
        height = {}
        for i, a in enumerate(addrs):
            bank = a // BANK_BYTES % BANKS
            level = height.get(bank, 0)
            height[bank] = level + 1
            r = phase % 2 * 8 + i     # the row this lane names (lanes 8p..8p+7 -> rows; see ldmatrix_addresses)
            yy = y + 1.0 + level * 0.78
            ax.add_patch(Rectangle((bank + 0.06, yy), 3.88, 0.7, facecolor=colours[i], alpha=0.8,
                                   edgecolor="white"))
            lum = 0.299 * colours[i][0] + 0.587 * colours[i][1] + 0.114 * colours[i][2]
            ax.text(bank + 2, yy + 0.35, f"row {r}: byte {a}", ha="center", va="center", fontsize=7.5,
                    color="black" if lum > 0.5 else "white")
        top = y + 1.0 + max(height.values()) * 0.78
        row_bytes = cols * BF16
        what = {"row-major": f"row-major, rows {row_bytes} B apart", "swizzled": "XOR-swizzled (rung 04)"}[layout]
        ax.text(-0.5, top + 0.35, f"{operand} tile {rows} x {cols} bf16, {what}:  {fronts} wavefront"
                f"{'s' if fronts > 1 else ''}, {fronts} clock{'s' if fronts > 1 else ''} of the banks for "
                f"{8 * CHUNK} bytes",
                fontsize=9.5, ha="left", va="center", fontweight="bold")
        y = top + gap
    ax.set_xlim(-0.6, BANKS + 0.6)
    ax.set_ylim(-1.4, y - gap + 1.2)
    ax.set_xticks(np.arange(0, BANKS, 4) + 0.5, [f"bank {b}" for b in range(0, BANKS, 4)], fontsize=8)
    ax.set_yticks([])
    ax.set_xlabel(f"the {BANKS} banks of shared memory, {BANK_BYTES} bytes each: one wavefront serves one 4-byte word "
                  f"per bank ({WAVEFRONT} B)", fontsize=9)
    _clean(ax, ("top", "right", "left"))
    ax.set_title(f"One ldmatrix phase (phase {phase}: 8 lanes, 8 row addresses of 16 bytes) landing on the banks\n"
                 "blocks stacked over one slot must go in different wavefronts", fontsize=10.5)
    return ax


# ---- 2. the XOR swizzle as a permutation table -----------------------------------------------------------------

def _swizzle_table(operand: str, tile) -> np.ndarray:
    """[8 rows, chunks] physical 16-byte chunk index (inside the row) of each logical chunk, rows 0..7."""
    rows, cols = tile
    chunks = cols // 8
    t = np.zeros((8, chunks), int)
    for r in range(8):
        for c in range(chunks):
            t[r, c] = (offset("swizzled", r, c * 8, cols) - r * cols * BF16) // CHUNK
    return t


def fig_swizzle_permutation(ax=None):
    """kernels/common/swizzle.cuh as two lookup tables, rows 0-7 of each tile (the pattern repeats every 8 rows).
    Cell (row, logical chunk) holds the physical chunk the swizzle stores it in; its colour is the 16-byte slot of
    the 128-byte line that chunk occupies. Every row is a permutation of its own chunks (nothing lost, no byte
    added); every column shows 8 different slots (one ldmatrix phase reads a column: conflict-free)."""
    from matplotlib.patches import Rectangle
    import matplotlib.pyplot as plt

    tiles = _tiles()
    from matplotlib.patches import Patch

    colours = plt.get_cmap("Set2").colors                  # 8 colours, one per slot
    ax = _axes(ax, (12.4, 6.6))
    x0 = 0.0
    for operand in ("A", "B"):
        rows, cols = tiles[operand]
        t = _swizzle_table(operand, tiles[operand])
        chunks = t.shape[1]
        row_bytes = cols * BF16
        per_line = max(1, WAVEFRONT // row_bytes)          # rows sharing one 128-byte line
        for r in range(8):
            assert sorted(t[r]) == list(range(chunks)), "each row must be a permutation of its chunks"
            for c in range(chunks):
                slot = ((r % per_line) * row_bytes // CHUNK + t[r, c]) % SLOTS
                ax.add_patch(Rectangle((x0 + c, r), 1, 1, facecolor=colours[slot], edgecolor="white", lw=1.5))
                ax.text(x0 + c + 0.5, r + 0.5, f"{t[r, c]}", ha="center", va="center", fontsize=9)
            ax.text(x0 + chunks + 0.15, r + 0.5, "\u2713 perm.", va="center", fontsize=8, color="tab:green")
        for c in range(chunks):
            slots = {((r % per_line) * row_bytes // CHUNK + t[r, c]) % SLOTS for r in range(8)}
            assert len(slots) == SLOTS, "a phase (one column, 8 rows) must cover all 8 slots"
            ax.text(x0 + c + 0.5, 8.35, "\u2713", ha="center", va="center", fontsize=9, color="tab:green")
        if per_line > 1:                                    # A: two 64-byte rows share a 128-byte line
            for r in range(0, 8, per_line):
                ax.plot([x0 - 0.05, x0 + chunks + 0.05], [r, r], color="black", lw=1.6)
            ax.plot([x0 - 0.05, x0 + chunks + 0.05], [8, 8], color="black", lw=1.6)
        else:                                               # B: a 256-byte row is two 128-byte lines
            ax.plot([x0 + 8, x0 + 8], [0, 8], color="black", lw=1.6)
        ax.set_xticks([])
        mask = "(row / 2) & 3" if per_line == 2 else "row & 7"
        ax.text(x0 + chunks / 2, -1.55, f"{operand} tile {rows} x {cols} bf16: rows of {row_bytes} B, "
                f"{chunks} chunks\nphysical chunk = logical chunk XOR ({mask})", ha="center", va="center",
                fontsize=9.5, fontweight="bold")
        for c in range(chunks):
            ax.text(x0 + c + 0.5, -0.3, f"{c}", ha="center", va="center", fontsize=8.5)
        ax.text(x0 - 0.2, -0.3, "logical:", ha="right", va="center", fontsize=8.5)
        x0 += chunks + 3.2
    ax.set_xlim(-2.2, x0 - 2.0)
    ax.set_ylim(9.0, -2.3)
    ax.set_yticks(np.arange(8) + 0.5, [f"row {r}" for r in range(8)], fontsize=8.5)
    ax.tick_params(length=0)
    _clean(ax, ("top", "right", "bottom", "left"))
    ax.set_xlabel("cell = the physical chunk a logical chunk is stored in; colour = its 16-byte slot of the 128-byte "
                  "line; thick lines = 128-byte lines\nevery row: a permutation of its own chunks (no byte lost, none "
                  "added);  every column: 8 colours = 8 slots = one wavefront per phase", fontsize=9)
    ax.legend(handles=[Patch(facecolor=colours[s], label=f"slot {s}: bytes {s * CHUNK}-{s * CHUNK + CHUNK - 1}")
                       for s in range(SLOTS)], ncol=4, fontsize=8, frameon=False, loc="upper center",
              bbox_to_anchor=(0.5, -0.13), title="16-byte slot of the 128-byte line (= 4 banks)", title_fontsize=8.5)
    ax.set_title("The XOR swizzle of rung 04 as a lookup table (rows 0-7; the pattern repeats every 8 rows)",
                 fontsize=10.5)
    return ax


# ---- 3. padding versus XOR: bytes --------------------------------------------------------------------------------

def fig_padding_bytes(ax=None):
    """Shared memory one block needs for its tiles with the swizzle (as dense as row-major) and with the padded
    layout (16 spare bytes at the end of every row), for rung 04's two tiles and for rung 05's ring of stages."""
    ax = _axes(ax, (10.6, 3.9))
    t4 = _tiles("04_swizzle")
    c5 = build("05_cp_async").consts
    t5 = _tiles("05_cp_async")

    def dense(tile):
        return tile[0] * tile[1] * BF16

    def padded(tile):
        return tile[0] * (tile[1] + PAD) * BF16

    s5 = c5["STAGES"]
    assert s5 * (dense(t5["A"]) + dense(t5["B"])) == c5["SMEM_BYTES"], "rung 05's ring is STAGES x (A + B)"
    bars = [
        (f"rung 04: A tile {t4['A'][0]} x {t4['A'][1]}\n(rows of {t4['A'][1] * BF16} B)", dense(t4["A"]),
         padded(t4["A"])),
        (f"rung 04: B tile {t4['B'][0]} x {t4['B'][1]}\n(rows of {t4['B'][1] * BF16} B)", dense(t4["B"]),
         padded(t4["B"])),
        ("rung 04: one block\n(A + B)", dense(t4["A"]) + dense(t4["B"]), padded(t4["A"]) + padded(t4["B"])),
        (f"rung 05: ring of {s5} stages\n(A + B per stage)", s5 * (dense(t5["A"]) + dense(t5["B"])),
         s5 * (padded(t5["A"]) + padded(t5["B"]))),
    ]
    for i, (label, d, p) in enumerate(bars):
        y = len(bars) - 1 - i
        ax.barh(y, d, height=0.55, color="tab:blue")
        ax.barh(y, p - d, left=d, height=0.55, color="tab:red", alpha=0.75, hatch="//", edgecolor="white")
        ax.text(d / 2, y, f"{d:,} B", ha="center", va="center", color="white", fontsize=9)
        ax.text(p + 800, y, f"padded: {p:,} B  (+{p - d:,} B, +{(p - d) / d:.1%})", va="center", fontsize=9)
    ax.set_yticks(range(len(bars))[::-1], [b[0] for b in bars], fontsize=9)
    ax.set_xlim(0, max(b[2] for b in bars) * 1.42)
    ax.set_xlabel("bytes of shared memory (blue: row-major or swizzled, the same; red: what 16 B of padding per "
                  "row adds)", fontsize=9)
    _clean(ax)
    ax.set_title("Padding versus XOR: the swizzle costs no byte; padding costs 16 B per row, most on narrow rows",
                 fontsize=10.5)
    return ax


# ---- 4. the napkin: shared-memory cycles per k tile ---------------------------------------------------------------

def ktile_wavefronts(rung: str, layout: str) -> dict:
    """Shared-memory wavefronts one block spends per k tile of a mma.sync rung: the ldmatrix reads of A and B
    (phases x wavefronts per phase, from the explorer) and the 16-byte stores that fill the tiles (dense, so one
    wavefront per 128 bytes), plus the k tile's FLOP."""
    c = build(rung).consts
    tiles = _tiles(rung)
    warps = c["THREADS"] // 32
    steps = c["BK"] // 16                                  # k16 steps per k tile
    ld_a = warps * steps * (c["WM"] // 16)                 # ldmatrix.x4 for A, whole block
    ld_b = warps * steps * (c["WN"] // 16)                 # ldmatrix.x4.trans for B (two n8 tiles each)
    fa = ld_a * 4 * conflict_degree("A", layout, tiles["A"])
    fb = ld_b * 4 * conflict_degree("B", layout, tiles["B"])
    stores = (tiles["A"][0] * tiles["A"][1] + tiles["B"][0] * tiles["B"][1]) * BF16 // WAVEFRONT
    flop = 2 * c["BM"] * c["BN"] * c["BK"]
    return {"ldmatrix_a": ld_a, "ldmatrix_b": ld_b, "fronts_a": int(fa), "fronts_b": int(fb), "stores": stores,
            "flop": flop, "total": int(fa + fb) + stores}


def fig_ktile_wavefronts(ax=None):
    """Napkin from constants: cycles of the shared-memory pipe (one wavefront per clock per SM) that one block needs
    per k tile, rung 03 (row-major) against rung 04 (swizzled), next to the tensor cores' time for the same k tile at
    the datasheet's dense BF16 rate (a floor: mma.sync's own ceiling is lower). One block per SM in both rungs."""
    ax = _axes(ax, (10.8, 3.8))
    r3, r4 = ktile_wavefronts("03_mma_sync", "row-major"), ktile_wavefronts("04_swizzle", "swizzled")
    math = r4["flop"] / TENSOR_FLOP_PER_CLK
    rows = [("03_mma_sync\nrow-major", r3), ("04_swizzle\nswizzled", r4)]
    for i, (label, r) in enumerate(rows):
        y = 2 - i
        left = 0
        for key, colour, name in (("fronts_a", "tab:blue", "ldmatrix A"), ("fronts_b", "tab:cyan", "ldmatrix B"),
                                  ("stores", "tab:gray", "stores")):
            ax.barh(y, r[key], left=left, height=0.55, color=colour)
            if r[key] >= 500:
                ax.text(left + r[key] / 2, y, f"{name}\n{r[key]:,}", ha="center", va="center", fontsize=8.5,
                        color="white" if colour != "tab:cyan" else "black")
            left += r[key]
        ax.text(left + 25, y, f"{r['total']:,} clk" + ("" if i else f"   ({r['ldmatrix_a']} + {r['ldmatrix_b']} "
                f"ldmatrix.x4 = {4 * (r['ldmatrix_a'] + r['ldmatrix_b'])} phases)"), va="center", fontsize=9)
    ax.text(r4["total"] + 25, 0.62, f"ldmatrix A {r4['fronts_a']}, B {r4['fronts_b']}, stores {r4['stores']}",
            va="center", fontsize=8.5, color="0.3")
    ax.barh(0, math, height=0.55, color="tab:pink")
    ax.text(math + 25, 0, f"{math:.0f} clk: {r4['flop']:,} FLOP at {TENSOR_FLOP_PER_CLK:,} FLOP/clk "
            "(datasheet BF16 rate; mma.sync's ceiling is lower, so its time is longer)", va="center", fontsize=9)
    saved = r3["total"] - r4["total"]
    ax.annotate("", xy=(r4["total"], 1.38), xytext=(r3["total"], 1.38),
                arrowprops=dict(arrowstyle="<->", color="black", lw=1))
    ax.text((r3["total"] + r4["total"]) / 2, 1.43, f"the swizzle saves {saved:,} clk per k tile", ha="center",
            va="bottom", fontsize=9.5)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color="tab:blue", label="ldmatrix.x4 of A"), Patch(color="tab:cyan",
              label="ldmatrix.x4.trans of B"), Patch(color="tab:gray", label="16-byte stores filling the tiles"),
              Patch(color="tab:pink", label="tensor-core math")], loc="lower right", bbox_to_anchor=(1.0, 0.24),
              fontsize=8.5, frameon=False)
    ax.set_yticks([2, 1, 0], [rows[0][0], rows[1][0], "tensor cores\n(floor)"], fontsize=9)
    ax.set_ylim(-0.5, 2.75)
    ax.set_xlim(0, r3["total"] * 1.5)
    ax.set_xlabel(f"SM clocks per k tile of one block (napkin: 1 wavefront of {WAVEFRONT} B per clock; counts from the "
                  "kernels' constants and the explorer; nothing measured)", fontsize=9)
    _clean(ax)
    ax.set_title("Napkin: shared-memory work per k tile, before and after the swizzle", fontsize=10.5)
    return ax


# ---- chapter 05: cp.async -----------------------------------------------------------------------------------

# Hardware numbers the chapter 05 napkins use (H100 SXM datasheet and the SM's structure, not measured here).
CH05_PEAK_FLOP_PER_CLK = 4096     # dense BF16 per SM per clock: 989.4 TFLOP/s / (132 SMs x 1,830 MHz)
CH05_SMS, CH05_BOOST_HZ = 132, 1.83e9
CH05_SMEM_PER_SM = 228 * 1024     # shared memory per SM; each resident block also costs 1 KiB the system reserves
CH05_SMEM_RESERVED = 1024
CH05_SCHEDULERS = 4               # warp schedulers (SM sub-partitions) per SM
CH05_MAX_WARPS = 64               # resident warps per SM
CH05_KIB = 1024

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
    smem = stages * c["STAGE_ELEMS"] * 2 + CH05_SMEM_RESERVED
    return blocks_per_sm(registers, c["THREADS"], smem, CH05_SMEM_PER_SM)["blocks"]


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
    ax = _axes(ax, (12.0, 0.42 * rows + 1.6))
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
            ax.text(xmax + 0.1, level(p), str(p), ha="left", va="center", fontsize=7,
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
            ax.text((s + e) / 2, yw, str(t), ha="center", va="center", fontsize=7.5, color="white")
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
                ax.text((i0 + i1) / 2, ys_, f"copy {t}", ha="center", va="center", fontsize=7, color="white")
                if m0 - i1 > 1e-9:
                    ax.barh(ys_, m0 - i1, left=i1, height=h, color=LANDED, edgecolor="white")
                ax.barh(ys_, m1 - m0, left=m0, height=h, color=READ, edgecolor="white")
            ticks.append(ys_)
            labels.append(f"slot {slot}")
        y = yw + S + 2.7
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.set_xlim(0, xmax)
    ax.set_ylim(y - 1.4, -1.7)
    ax.set_xlabel(f"time, in units of one tile's math (a model: each copy takes {copy_time:g} units to land; "
                  "dashed: wait_group returns and the barrier lets the warps start tile t)", fontsize=9)
    ax.legend(handles=[Patch(color=FILL, label="cp.async in flight"), Patch(color=LANDED, label="landed, not yet read"),
                       Patch(color=READ, label="read by ldmatrix + mma.sync"),
                       Patch(facecolor=STALL, alpha=0.35, hatch="//", edgecolor=STALL,
                             label="warps stalled in wait_group"),
                       Line2D([], [], color="black", label="groups pending (step)")],
              fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.09), frameon=False)
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
    rate = CH05_PEAK_FLOP_PER_CLK / st["intensity"]                  # bytes per clock per SM at the peak
    ax = _axes(ax, (11.0, 5.2))
    xs = [0, max_latency]
    ax.plot(xs, [rate * x / CH05_KIB for x in xs], color="black", lw=2)
    stages_max = _deepest_ring(c, regs)
    ymax = (stages_max + 0.6) * 2 * st["bytes"] / CH05_KIB
    ax.axvspan(300, 1000, color="0.92", zorder=0)
    ax.text(650, ymax * 0.97, "a few hundred to ~1,000 clk:\nL2 hit to HBM trip\n(order of magnitude,\n"
            "not measured here)", ha="center", va="top", fontsize=7.5, color="dimgray")
    for S in range(2, stages_max + 1):
        blocks = _ring_blocks(c, regs, S)
        tile_clk = blocks * st["flop"] / CH05_PEAK_FLOP_PER_CLK       # the blocks share the SM's tensor cores
        flight = blocks * (S - 1) * st["bytes"] / CH05_KIB
        cover = (S - 1) * tile_clk
        rung = {2: "05_double_buffer", c["STAGES"]: "05_cp_async"}.get(S)
        colour = {2: "tab:blue", c["STAGES"]: "tab:orange"}.get(S, "0.6")
        ax.plot([0, cover], [flight, flight], color=colour, lw=2.4 if rung else 1.2, ls="-" if rung else "--")
        ax.plot([cover], [flight], "o", color=colour, ms=7 if rung else 5)
        label = f"STAGES = {S}: {blocks} x {S - 1} x {st['bytes'] // CH05_KIB} KiB = {flight:.0f} KiB"
        label += f" -> covers {cover:,.0f} clk" + (f"  ({rung})" if rung else "")
        ax.text(cover + 60, flight, label, va="center", fontsize=8.5 if rung else 7.5,
                weight="bold" if rung else "normal", color="black" if rung else "dimgray")
    ax.set(xlim=(0, max_latency), ylim=(0, ymax),
           ylabel="KiB in flight per SM")
    tile_clk = st["flop"] / CH05_PEAK_FLOP_PER_CLK
    blocks = _ring_blocks(c, regs)
    ax.set_title(f"Little's law per SM: block tile {c['BM']} x {c['BN']} x {c['BK']} = {st['intensity']:.0f} FLOP "
                 f"per byte; one tile = {st['flop']:,} FLOP = {tile_clk:.0f} clk of the SM's tensor peak "
                 f"({CH05_PEAK_FLOP_PER_CLK} FLOP/clk),\n{blocks} blocks share the SM: "
                 f"{blocks * tile_clk:.0f} clk per tile per block", fontsize=10)
    whole = rate * CH05_SMS * CH05_BOOST_HZ / 1e12
    ax.set_xlabel(f"latency a copy must be hidden behind (SM clocks)\n"
                  f"black line: KiB that must be in flight at the tensor peak, {rate:.0f} B/clk x latency; "
                  f"on every SM at once that is {rate:.0f} B/clk x {CH05_SMS} SMs x {CH05_BOOST_HZ / 1e9:.2f} GHz "
                  f"= {whole:.1f} TB/s from L2\nSTAGES = {stages_max + 1} would leave room for only "
                  f"{_ring_blocks(c, regs, stages_max + 1)} block in {CH05_SMEM_PER_SM // CH05_KIB} KiB of shared memory",
                  fontsize=8.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


# ---- figure 3: the register file of one SM ------------------------------------------------------------------------

def fig_cp_async_register_file(ax=None, exercise=(168, 256)):
    """The SM's 65,536 registers as a bar, filled block by block and warp by warp (allocation rounded up to 8 per
    thread, as blocks_per_sm does): rung 04, rung 05, the exercise's 168 x 256, and the 16 warps a 64 x 64 warp tile
    would need. Hatched: the FP32 accumulators of each thread's warp tile."""
    from matplotlib.patches import Patch

    c4, r4 = _ring_rung("04_swizzle")
    c5, r5 = _ring_rung("05_cp_async")
    acc4, acc5 = c4["WM"] * c4["WN"] // 32, c5["WM"] * c5["WN"] // 32
    quarter = REGISTER_FILE // (4 * c5["THREADS"])                     # per thread, for 4 blocks of rung 05
    rows = [(f"04_swizzle\nwarp tile {c4['WM']} x {c4['WN']}", r4, c4["THREADS"], acc4, None),
            (f"05_cp_async\nwarp tile {c5['WM']} x {c5['WN']}", r5, c5["THREADS"], acc5, None),
            (f"exercise 2\n{exercise[0]} registers x {exercise[1]} threads", exercise[0], exercise[1], 0, None),
            (f"what 4 warps per scheduler\nwould allow ({c5['THREADS']}-thread blocks)", quarter, c5["THREADS"],
             acc5, 4)]
    ax = _axes(ax, (12.0, 4.6))
    colours = ["tab:blue", "tab:green", "tab:purple", "tab:olive"]
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
                f"block{'s' if blocks > 1 else ''} of {warps} warps = {total} warps, {total / CH05_SCHEDULERS:g} per "
                f"scheduler (limited by {fit['limited_by']})")
        if force:
            text = (f"{REGISTER_FILE:,} / ({blocks} x {threads}) = {regs} per thread,\nall of them taken by the {acc} "
                    f"accumulators of a {c5['WM']} x {c5['WN']} warp tile")
        ax.text(REGISTER_FILE + 800, y, text, va="center", fontsize=8)
    ax.axvline(REGISTER_FILE, color="black", lw=1.2)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8.5)
    ax.set_xticks(range(0, REGISTER_FILE + 1, 8192), [f"{v:,}" for v in range(0, REGISTER_FILE + 1, 8192)],
                  fontsize=8)
    ax.set(xlim=(0, REGISTER_FILE * 1.75), ylim=(len(rows) - 0.5, -0.6))
    ax.set_xlabel(f"32-bit registers of one SM ({REGISTER_FILE:,}); one segment = one warp's allocation "
                  f"(rounded up to 8 per thread); {CH05_MAX_WARPS} warps at most, {CH05_SCHEDULERS} schedulers",
                  fontsize=9)
    ax.legend(handles=[Patch(facecolor="white", edgecolor="black", hatch="////", label="FP32 accumulators"),
                       Patch(color="0.88", label="unused: too few for another block")],
              fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False)
    ax.spines["bottom"].set_bounds(0, REGISTER_FILE)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


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
    label(0.7, 5.55, "1. wait empty[s]\nparity (lap & 1) ^ 1", EMPTY)
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
        ax.text(x + w / 2, 4.75, f"full parity {(t // S) & 1}", ha="center", fontsize=7.5, color="dimgray")
    nxt = kt - 1 + S
    xs = x0 + ((kt - 1) % S) * (w + gap) + w / 2
    arrow((xs, 6.1), (xs, 5.05), EMPTY, dashed=True)
    ax.text(xs - 0.4, 6.35, f"the producer waits on empty[{(kt - 1) % S}] (parity {((nxt // S) & 1) ^ 1}) to load "
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
    (from helpers.explore.ring_parities). The consumers wait on full[s] for the phase of their lap; the producer waits
    on empty[s] for the phase before it, which a fresh barrier counts as complete, so lap 0 never waits and no
    initial arrivals are needed (rungs 08 to 10)."""
    c = _consts("08_warp_specialized")
    S = c["STAGES"]
    steps = ring_parities(S, laps * S)
    ax = _axes(ax, (12.0, 3.9))
    kts = [r["it"] for r in steps] + [laps * S]
    lanes = [("consumers wait on full[s]\nparity lap & 1", [r["consumer_waits_full"] for r in steps], FULL),
             ("producer waits on empty[s]\nparity (lap & 1) ^ 1", [r["producer_waits_empty"] for r in steps], EMPTY)]
    for i, (label, parity, colour) in enumerate(lanes):
        base = 2.0 * (len(lanes) - 1 - i)
        ax.step(kts, [base + 1.1 * p for p in parity] + [base + 1.1 * parity[-1]], where="post", color=colour, lw=2)
        ax.text(-0.6, base + 0.55, label, ha="right", va="center", fontsize=9, color=colour)
        ax.text(laps * S + 0.3, base, "0", va="center", fontsize=8, color="dimgray")
        ax.text(laps * S + 0.3, base + 1.1, "1", va="center", fontsize=8, color="dimgray")
    ax.axvspan(0, S, ymin=0, ymax=1.5 / 5.2, color=EMPTY, alpha=0.08, lw=0)
    ax.text(S / 2, 0.5, "passes at once: a fresh empty[s] is in phase 0,\nso the odd phase before it counts as complete",
            ha="center", va="center", fontsize=7.5, color=EMPTY)
    for lap in range(laps):
        lo = lap * S
        if lap % 2:
            ax.axvspan(lo, lo + S, color="0.93", zorder=0)
        wanted = ("empty phase -1: nothing to wait for" if lap == 0
                  else f"empty phase {lap - 1}: tile kt - {S} released")
        ax.text(lo + S / 2, 4.65, f"lap {lap}: tiles {lo}-{lo + S - 1}", ha="center", fontsize=9, weight="bold")
        ax.text(lo + S / 2, 4.2, f"full phase {lap}: tile kt landed", ha="center", fontsize=7.5, color=FULL)
        ax.text(lo + S / 2, 3.8, wanted, ha="center", fontsize=7.5, color=EMPTY)
    ax.set_xticks([k + 0.5 for k in range(laps * S)])
    ax.set_xticklabels([f"{r['it']}\ns{r['slot']}" for r in steps], fontsize=7)
    ax.set_xlabel(f"k tile kt and its slot kt % {S}   (lap = kt / {S}; the producer names the phase before the "
                  f"consumers' one)", fontsize=9)
    ax.set(xlim=(0, laps * S + 0.9), ylim=(-0.4, 4.8), yticks=[])
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


# ---- chapter 09: setmaxnreg ---------------------------------------------------------------------------------

WARPGROUP = 128
MAX_REGS = 255                 # registers one thread can address (R0-R254; R255 is RZ)

# One colour per warpgroup role, shared by every figure of the chapter (chapter 08 used the same two).
CONSUMER_2, C_COLOUR = "tab:orange", "tab:pink"  # with chapter 08's PRODUCER, CONSUMER, A_COLOUR, B_COLOUR


# ---- the tile: FLOP per byte loaded ----------------------------------------------------------------------------

def _pair_tile(c: dict) -> dict:
    """One k tile of one block: FLOP, bytes the TMA brings, and accumulator registers per consumer thread."""
    flop = 2 * c["BM"] * c["BN"] * c["BK"]
    loaded = (c["BM"] + c["BN"]) * c["BK"] * 2
    acc = c["N_MMAS"] * c["WGMMA_N"] // 2          # m64nNk16 fp32: 64 x N values over 128 threads
    return {"flop": flop, "loaded": loaded, "intensity": flop / loaded, "acc": acc,
            "math_clk": flop / TENSOR_FLOP_PER_CLK, "bytes_per_clk": loaded / (flop / TENSOR_FLOP_PER_CLK)}


def fig_tile_intensity(ax=None):
    """Rung 08's 128 x 128 block tile and rung 09's 128 x 256, drawn to one scale with the A and B slabs one k tile
    loads (BK wide): the FLOP that k tile does, the bytes it brings, their ratio BM x BN / (BM + BN), the bytes per
    clock an SM would need to run the tensor cores at peak, and the accumulators each consumer thread holds."""
    from matplotlib.patches import Rectangle

    rows = [("08_warp_specialized", build("08_warp_specialized").consts),
            ("09_setmaxnreg", build("09_setmaxnreg").consts)]
    ax = _axes(ax, (11.0, 5.4))
    x = 0.0
    gap = 120
    for name, c in rows:
        bm, bn, bk = c["BM"], c["BN"], c["BK"]
        t = _pair_tile(c)
        # B slab on top (BK rows of BN), A slab on the left (BM rows of BK), C block tile below-right.
        ax.add_patch(Rectangle((x + bk, 0), bn, bk, fc=B_COLOUR, ec="black", lw=1, alpha=0.75))
        ax.add_patch(Rectangle((x, bk), bk, bm, fc=A_COLOUR, ec="black", lw=1, alpha=0.75))
        ax.add_patch(Rectangle((x + bk, bk), bn, bm, fc=C_COLOUR, ec="black", lw=1, alpha=0.35))
        for half in range(1, bm // 64):            # each consumer warpgroup owns 64 rows of C
            ax.plot([x + bk, x + bk + bn], [bk + 64 * half] * 2, color="black", lw=0.8, ls="--")
        for wg in range(bm // 64):
            ax.text(x + bk + bn / 2, bk + 64 * wg + 32, f"consumer {wg}: 64 x {bn} of C\n{t['acc']} fp32 "
                    f"accumulators\nper thread", ha="center", va="center", fontsize=8)
        ax.text(x + bk + bn / 2, bk / 2, f"B: {bn} x {bk} bf16 = {bn * bk * 2 // KIB} KiB", ha="center",
                va="center", fontsize=8)
        ax.text(x + bk / 2, bk + bm / 2, f"A: {bm} x {bk}\n= {bm * bk * 2 // KIB} KiB", ha="center", va="center",
                fontsize=7.5, rotation=90)
        ax.text(x + (bk + bn) / 2, -14, f"{name}: block tile {bm} x {bn}", ha="center", va="bottom", fontsize=10,
                weight="bold")
        ax.text(x, bk + bm + 14,
                f"per k tile: 2 x {bm} x {bn} x {bk} = {t['flop'] / 1e6:.1f} MFLOP\n"
                f"loaded: ({bm} + {bn}) x {bk} x 2 B = {t['loaded'] // KIB} KiB\n"
                f"{t['flop'] / 1e6:.1f} MFLOP / {t['loaded'] // KIB} KiB = {t['intensity']:.1f} FLOP per byte\n"
                f"tensor peak needs {t['bytes_per_clk']:.0f} B per clock per SM\n"
                f"({t['math_clk']:,.0f} clk of math per {t['loaded'] // KIB} KiB)",
                ha="left", va="top", fontsize=8.5, linespacing=1.35)
        x += bk + bn + gap
    ax.set_xlim(-10, x - gap + 10)
    ax.set_ylim(rows[0][1]["BK"] + rows[0][1]["BM"] + 100, -40)
    ax.set_aspect("equal")
    ax.axis("off")
    t8, t9 = (_pair_tile(c) for _, c in rows)
    ax.set_title(f"Same A slab, twice the B: {t9['intensity'] / t8['intensity']:.2f}x the FLOP per byte loaded, "
                 f"for {t9['acc'] - t8['acc']} more accumulators per consumer thread", fontsize=10)
    return ax


# ---- the register pool -----------------------------------------------------------------------------------------

def _split_columns(c: dict) -> list[tuple[str, list[int], dict]]:
    """(label, registers per warpgroup, register_budget) for the launch split, the kernel's split, and the split
    that would fit the SM's file but not the CTA's pool."""
    cons = c["CONSUMERS"]
    start = launch_registers(c["THREADS"])
    over = (REGISTER_FILE - WARPGROUP * cons * c["CONSUMER_REGS"]) // WARPGROUP  # producer value that fills the SM
    cols = [(f"at launch\n{start} per thread, every warpgroup", [start] * (1 + cons), None),
            (f"after setmaxnreg\n{c['PRODUCER_REGS']} / {c['CONSUMER_REGS']} / {c['CONSUMER_REGS']}",
             [c["PRODUCER_REGS"]] + [c["CONSUMER_REGS"]] * cons, None),
            (f"a split past the pool\n{over} / {c['CONSUMER_REGS']} / {c['CONSUMER_REGS']}",
             [over] + [c["CONSUMER_REGS"]] * cons, None)]
    return [(label, regs, register_budget(regs[0], regs[1], cons)) for label, regs, _ in cols]


def fig_register_pool(ax=None):
    """The CTA's registers per warpgroup (128 threads x registers per thread), stacked: at launch, after the
    kernel's setmaxnreg split, and for a split that sums to the SM's 65,536 but not to the CTA's pool. The two
    horizontal lines are the pool the CTA got at launch and the SM's register file."""
    c = build("09_setmaxnreg").consts
    cols = _split_columns(c)
    pool, start = cols[0][2]["pool"], launch_registers(c["THREADS"])
    assert cols[0][2]["registers"] == pool and cols[1][2]["fits"] and not cols[2][2]["fits"]
    names = ["producer"] + [f"consumer {i}" for i in range(c["CONSUMERS"])]
    colours = [PRODUCER, CONSUMER, CONSUMER_2]
    ax = _axes(ax, (11.0, 5.6))
    width = 0.5
    for i, (label, regs, b) in enumerate(cols):
        bottom = 0
        for name, r, colour in zip(names, regs, colours):
            h = WARPGROUP * r
            over = max(0, bottom + h - pool)
            ax.bar(i, h - over, width, bottom=bottom, color=colour, alpha=0.8, edgecolor="white")
            if over:
                ax.bar(i, over, width, bottom=pool, facecolor="white", edgecolor=colour, hatch="////", lw=1)
            if h > 6000:
                ax.text(i, bottom + h / 2, f"{name}\n128 x {r}\n= {h:,}", ha="center", va="center", fontsize=8,
                        color="white")
            else:                                   # too thin to hold its label: write it beside the bar
                ax.text(i + width / 2 + 0.03, bottom + h / 2, f"{name}\n128 x {r} = {h:,}", ha="left",
                        va="center", fontsize=8)
            bottom += h
        verdict = "fits the pool exactly" if b["registers"] == pool else (
            "fits" if b["fits"] else f"{b['registers'] - pool:,} more than the pool")
        ax.text(i, REGISTER_FILE + 2600, f"{b['registers']:,}: {verdict}", ha="center", fontsize=8,
                color="black" if b["fits"] else "tab:red", weight="bold")
    ax.axhline(pool, color="black", lw=1.2)
    ax.axhline(REGISTER_FILE, color="0.45", lw=1, ls="--")
    ax.text(2.55, pool - 900, f"the CTA's pool:\n{start} x {c['THREADS']} = {pool:,}", va="top", ha="left",
            fontsize=8.5)
    ax.text(2.55, REGISTER_FILE + 600, f"the SM's file: {REGISTER_FILE:,}", va="bottom", ha="left", fontsize=8.5,
            color="0.35")
    ax.annotate(f"{REGISTER_FILE - pool:,} registers the pool does not\nhave: some consumer warp's\n"
                f"setmaxnreg.inc waits forever", xy=(2 + width / 2, (pool + REGISTER_FILE) / 2),
                xytext=(2.55, 47000), fontsize=8.5, color="tab:red", va="center",
                arrowprops=dict(arrowstyle="->", color="tab:red"))
    released = WARPGROUP * (start - c["PRODUCER_REGS"])
    taken = WARPGROUP * (c["CONSUMER_REGS"] - start)
    assert released == c["CONSUMERS"] * taken
    ax.text(2.55, 22000, f"from launch to setmaxnreg:\nsetmaxnreg.dec: the producer\ngives back 128 x ({start} - "
            f"{c['PRODUCER_REGS']}) = {released:,}\nsetmaxnreg.inc: each consumer\ntakes 128 x "
            f"({c['CONSUMER_REGS']} - {start}) = {taken:,}\n{c['CONSUMERS']} x {taken:,} = {released:,}: "
            f"the total\nnever changes", ha="left", va="center", fontsize=8, bbox=dict(fc="white", ec="0.7", pad=4))
    ax.set_xticks(range(len(cols)), [label for label, _, _ in cols], fontsize=9)
    ax.set_xlim(-0.45, 3.45)
    ax.set_ylim(0, REGISTER_FILE + 7000)
    ax.set_yticks(range(0, REGISTER_FILE + 1, 8192), [f"{v:,}" for v in range(0, REGISTER_FILE + 1, 8192)],
                  fontsize=8.5)
    ax.set_ylabel("32-bit registers held by the block", fontsize=9)
    _clean(ax)
    ax.set_title(f"One block of {c['THREADS']} threads under __launch_bounds__({c['THREADS']}, 1): setmaxnreg moves "
                 f"registers inside the pool, never past it", fontsize=10)
    return ax


def _pool_ledger(producer: int, consumer: int, consumers: int, threads: int) -> list[dict]:
    """Free registers in the CTA's pool, one event per warp: the producer's warps release first (each gives back
    32 x (launch - producer)), then each consumer warp asks for 32 x (consumer - launch). A warp whose request
    exceeds what is free keeps retrying (SASS: USETMAXREG.TRY_ALLOC in a loop) and, with nothing left to release,
    never gets past it. The order is one possible interleaving; the final balance does not depend on it."""
    start = launch_registers(threads)
    free, events = 0, [{"who": "launch", "free": 0, "granted": True}]
    for w in range(WARPGROUP // WARP):
        free += WARP * (start - producer)
        events.append({"who": f"P w{w}", "free": free, "granted": True})
    for c in range(consumers):
        for w in range(WARPGROUP // WARP):
            need = WARP * (consumer - start)
            ok = need <= free
            free -= need if ok else 0
            events.append({"who": f"C{c} w{4 * (c + 1) + w}", "free": free, "granted": ok, "need": need})
    return events


def fig_pool_ledger(ax=None):
    """The free registers in the CTA's pool, warp by warp, for the kernel's split and for a split past the pool:
    setmaxnreg.dec adds a warp's surplus to the pool, setmaxnreg.inc takes a warp's shortfall out of it, and a
    request larger than what is free blocks."""
    c = build("09_setmaxnreg").consts
    cons, threads = c["CONSUMERS"], c["THREADS"]
    over = (REGISTER_FILE - WARPGROUP * cons * c["CONSUMER_REGS"]) // WARPGROUP
    cases = [(c["PRODUCER_REGS"], "tab:green", "-"), (over, "tab:red", "--")]
    ax = _axes(ax, (11.0, 4.6))
    for producer, colour, ls in cases:
        ev = _pool_ledger(producer, c["CONSUMER_REGS"], cons, threads)
        assert register_budget(producer, c["CONSUMER_REGS"], cons)["fits"] == all(e["granted"] for e in ev)
        xs = list(range(len(ev)))
        ax.step(xs + [len(ev)], [e["free"] for e in ev] + [ev[-1]["free"]], where="post", color=colour, ls=ls, lw=2,
                label=f"producer {producer} / consumers {c['CONSUMER_REGS']}")
        for x, e in zip(xs, ev):
            if not e["granted"]:
                ax.plot([x], [e["free"]], marker="X", ms=11, color=colour, zorder=5)
                ax.annotate(f"{e['who']} needs {e['need']:,}, {e['free']:,} free:\nits TRY_ALLOC retries forever "
                            f"and the block\ncan never finish (nothing faults here: it stalls)", xy=(x, e["free"]),
                            xytext=(5.0, 2600), fontsize=8.5, color=colour, va="center",
                            arrowprops=dict(arrowstyle="->", color=colour))
    ev = _pool_ledger(c["PRODUCER_REGS"], c["CONSUMER_REGS"], cons, threads)
    start = launch_registers(threads)
    ax.set_xticks(range(len(ev)), [e["who"] for e in ev], fontsize=8)
    ax.axvspan(0.5, 4.5, color=PRODUCER, alpha=0.07, zorder=0)
    ax.axvspan(4.5, len(ev) + 0.2, color=CONSUMER, alpha=0.05, zorder=0)
    ax.text(2.5, 21500, f"setmaxnreg.dec, one warp at a time:\n+32 x ({start} - producer value) each", ha="center",
            fontsize=8.5, color=PRODUCER)
    ax.text(8.5, 21500, f"setmaxnreg.inc: -32 x ({c['CONSUMER_REGS']} - {start}) = "
            f"-{WARP * (c['CONSUMER_REGS'] - start):,} each", ha="center", fontsize=8.5, color=CONSUMER)
    ax.set_ylim(-1000, 24500)
    ax.set_yticks(range(0, 20001, 5000), [f"{v:,}" for v in range(0, 20001, 5000)], fontsize=8.5)
    ax.set_xlim(-0.3, len(ev) + 0.2)
    ax.set_ylabel("free registers in the CTA's pool", fontsize=9)
    ax.set_xlabel("warp events in one possible order (P = producer warps 0-3, C0 / C1 = the consumer warpgroups); "
                  "every warp starts with its launch share, so the pool starts empty", fontsize=8.5)
    ax.legend(loc="upper right", fontsize=8.5, frameon=False, bbox_to_anchor=(1.0, 0.80))
    _clean(ax)
    ax.set_title("The pool as a ledger: consumers can only take what the producer gave back", fontsize=10)
    return ax


# ---- what a consumer thread holds ------------------------------------------------------------------------------

_REG = re.compile(r"\bR(\d+)\b")


def _top(lines) -> int:
    """Registers a stretch of SASS touches, R0 up to the highest named; a 64-bit operand (R150 of an STG.E.64)
    also uses the next register."""
    top = -1
    for line in lines:
        for m in _REG.finditer(line):
            top = max(top, int(m.group(1)) + (1 if ".64" in line else 0))
    return top + 1


def _register_map(rung_id: str) -> dict:
    """From the SASS: where the HGMMA accumulators start, how many there are, and how many registers the consumer
    and the producer branches touch (the producer's branch runs from its setmaxnreg.dec to EXIT)."""
    b = build(rung_id)
    c = b.consts
    lines = b.sass().splitlines()
    bases = sorted({int(m.group(1)) for l in lines if (m := re.search(r"HGMMA\.64x\d+x16\.F32\.BF16 R(\d+)", l))})
    acc = c["N_MMAS"] * c["WGMMA_N"] // 2
    dealloc = next((i for i, l in enumerate(lines) if "USETMAXREG.DEALLOC" in l), None)
    exit_ = next((i for i, l in enumerate(lines) if i > (dealloc or 0) and re.search(r"\bEXIT\b", l)), len(lines))
    producer = _top(lines[dealloc:exit_]) if dealloc is not None else None
    everything = _top(lines)
    assert bases and bases[0] + acc <= everything, (bases, acc, everything)
    return {"acc_base": bases[0], "acc": acc, "consumer": everything, "producer": producer,
            "ptxas": b.resources[next(iter(b.resources))].registers}


def _without_setmaxnreg(rung_id: str):
    """What ptxas reports for the same kernel with both setmaxnreg calls deleted (registers, spills)."""
    from .registry import rung
    r = rung(rung_id)
    src = r.path.read_text()
    bare = re.sub(r"setmaxnreg_(inc|dec)<\w+>\(\);", "", src)
    assert bare != src, f"{rung_id} has no setmaxnreg calls to remove"
    res = build(r, source=bare).resources[r.entry]
    return res.registers, res.spill_stores + res.spill_loads


def fig_consumer_registers(ax=None):
    """Per thread, register index 0-255: what rung 09's consumer and producer threads touch in the SASS (the
    accumulators of m64n256k16 and everything else), against the launch cap and the caps setmaxnreg sets; rung
    08's consumer for comparison; and what ptxas needs for rung 09 with both setmaxnreg calls removed."""
    c9, c8 = build("09_setmaxnreg").consts, build("08_warp_specialized").consts
    m9, m8 = _register_map("09_setmaxnreg"), _register_map("08_warp_specialized")
    bare_regs, bare_spills = _without_setmaxnreg("09_setmaxnreg")
    start = launch_registers(c9["THREADS"])
    assert m9["consumer"] <= c9["CONSUMER_REGS"] and m9["producer"] <= c9["PRODUCER_REGS"]
    ax = _axes(ax, (11.0, 4.6))
    h = 0.55
    rows = [
        (f"rung 09 consumer thread\n(cap {c9['CONSUMER_REGS']} after setmaxnreg.inc)", c9["CONSUMER_REGS"],
         [(0, m9["acc_base"], "0.55", f"R0-R{m9['acc_base'] - 1}: {m9['acc_base']} for addresses, descriptors, loop state, barrier "
                                               f"addresses"),
          (m9["acc_base"], m9["acc"], CONSUMER,
           f"R{m9['acc_base']}-R{m9['acc_base'] + m9['acc'] - 1}: {m9['acc']} fp32 accumulators (64 x "
           f"{c9['WGMMA_N']} / 128 threads)")]),
        (f"rung 09 producer thread\n(cap {c9['PRODUCER_REGS']} after setmaxnreg.dec)", c9["PRODUCER_REGS"],
         [(0, m9["producer"], PRODUCER, f"R0-R{m9['producer'] - 1}: one thread's copy loop")]),
        ("rung 09 without setmaxnreg\n(ptxas, whole kernel)", start,
         [(0, bare_regs, "0.35", f"{bare_regs} registers, {bare_spills} bytes spilled: it fits the launch cap too")]),
        (f"rung 08 consumer thread\n(no setmaxnreg, cap {launch_registers(c8['THREADS'])})",
         launch_registers(c8["THREADS"]),
         [(0, m8["acc_base"], "0.55", ""),
          (m8["acc_base"], m8["acc"], CONSUMER, f"{m8['acc']} accumulators (64 x {c8['WGMMA_N']} / 128)")]),
    ]
    for y, (label, cap, segs) in enumerate(rows):
        for left, width, colour, text in segs:
            ax.barh(y, width, left=left, height=h, color=colour, alpha=0.85, edgecolor="white")
            if not text:
                continue
            if width > 60:
                ax.text(left + width / 2, y, text, va="center", ha="center", fontsize=7.5, color="white")
            elif left == 0 and len(segs) > 1:           # the non-accumulator registers: labelled under the bar
                ax.text(0.5, y + h / 2 + 0.04, text, va="top", ha="left", fontsize=7.5, color="0.25")
            else:                                       # a short bar: labelled past its cap
                ax.text(cap + 3, y, text, va="center", ha="left", fontsize=8)
        used = sum(w for _, w, _, _ in segs)
        ax.barh(y, cap - used, left=used, height=h, facecolor="none", edgecolor="0.6", hatch="..", lw=0.6)
        ax.plot([cap, cap], [y - h / 2 - 0.08, y + h / 2 + 0.08], color="black", lw=2)
        ax.text(cap + 2, y - h / 2 - 0.02, f"{cap - used} spare", fontsize=7.5, va="bottom", color="0.3")
    for x, text, colour in ((c9["PRODUCER_REGS"], "24: the smallest setmaxnreg value", PRODUCER),
                            (start, f"{start}: the launch cap (65,536 / {c9['THREADS']}, down to 8)", "black"),
                            (c9["CONSUMER_REGS"], f"{c9['CONSUMER_REGS']}", CONSUMER)):
        ax.axvline(x, color=colour, lw=0.8, ls=":", zorder=0)
    ax.text(start + 1, -0.62, f"launch cap {start}", fontsize=8, ha="center", va="bottom")
    ax.text(c9["CONSUMER_REGS"], -0.62, f"{c9['CONSUMER_REGS']}", fontsize=8, ha="center", va="bottom",
            color=CONSUMER)
    ax.text(c9["PRODUCER_REGS"], -0.62, f"{c9['PRODUCER_REGS']}", fontsize=8, ha="center", va="bottom",
            color=PRODUCER)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8.5)
    ax.set_ylim(len(rows) - 0.45, -0.85)
    ax.set_xlim(0, MAX_REGS + 1)
    ax.set_xticks([0, 32, 64, 96, 128, 160, 192, 224, 255])
    ax.set_xlabel("registers per thread: R0 up to the highest one the SASS names (row 3: as ptxas reports it); "
                  "hatched: allowed but unused; thick tick: the cap", fontsize=8.5)
    _clean(ax)
    ax.set_title("What a thread actually holds: 128 accumulators plus about two dozen others", fontsize=10)
    return ax


# ---- chapter 10: the chip as the unit --------------------------------------------------------------------------

CH10_RUNG = "10_beyond_cublas"
CH10_CLUSTERS = 66            # the recorded grid on the H100 (results "grids"); used only if nothing is recorded
CH10_KIB = 1024
CH10_RANK_COLOURS = ("#1f77b4", "#2ca02c")    # what CTA rank 0 / rank 1 asks L2 for
CH10_WAVE_CMAP = "YlGnBu_r"


def _ch10_consts() -> dict:
    return build(CH10_RUNG).consts


def _ch10_clusters() -> int:
    """Clusters the persistent grid launches: the recorded driver count if there is one, else the H100's 66."""
    from .ladder import NotRecorded, recorded_entry
    try:
        return int(recorded_entry("grids", CH10_RUNG)["clusters"])
    except (NotRecorded, KeyError):
        return CH10_CLUSTERS


def _ch10_tile_origin(t: int, tiles_m: int, tiles_n: int, schedule: int, group_m: int) -> tuple[int, int]:
    """The kernel's tile_origin(), in Python: schedule index t -> (tile row tm, tile column tn) of cluster tiles."""
    if schedule == 0:
        return t // tiles_n, t % tiles_n
    per_group = group_m * tiles_n
    group = t // per_group
    first = group * group_m
    rows = min(tiles_m - first, group_m)
    i = t - group * per_group
    return first + i % rows, i // rows


def _ch10_schedule(n: int, schedule: int, clusters: int, c: dict) -> dict:
    """Every cluster tile of an N x N C: the schedule index t that lands on it, the cluster that computes it
    (cluster j takes t = j, j + clusters, ...: first_tile = blockIdx.x / CLUSTER, tile_step = gridDim.x / CLUSTER)
    and the wave t // clusters it is computed in."""
    tiles_m, tiles_n = n // c["CLUSTER_BM"], n // c["BN"]
    order = np.full((tiles_m, tiles_n), -1)
    for t in range(tiles_m * tiles_n):
        tm, tn = _ch10_tile_origin(t, tiles_m, tiles_n, schedule, c["GROUP_M"])
        assert order[tm, tn] == -1, "the schedule must visit every tile once"
        order[tm, tn] = t
    assert (order >= 0).all()
    return {"order": order, "cluster": order % clusters, "wave": order // clusters, "tiles_m": tiles_m,
            "tiles_n": tiles_n}


def fig_persistent_schedule(ax=None, sizes=(4096, 3072)):
    """One panel per (N, order): each cell is a 256 x 256 cluster tile of C (rank 0 computes its top 128 rows, rank 1
    the bottom 128), labelled with the cluster that computes it and coloured by the wave it is computed in; the
    first wave is outlined. Row by row (SCHEDULE 0) against grouped (SCHEDULE 1, GROUP_M tile rows per group)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    c = _ch10_consts()
    clusters = _ch10_clusters()
    gm = c["GROUP_M"]
    most = max(waves(n, n, c["CLUSTER_BM"], c["BN"], clusters)["busiest"] for n in sizes)
    cmap = plt.get_cmap(CH10_WAVE_CMAP)
    colours = [cmap(0.08 + 0.84 * w / max(most - 1, 1)) for w in range(most)]
    big = max(n // c["BN"] for n in sizes)
    gap_x, gap_y = 3.0, 5.2
    ax = _axes(ax, (12.5, 6.9 * len(sizes)))
    y0 = 0.0
    for n in sizes:
        w = waves(n, n, c["CLUSTER_BM"], c["BN"], clusters)
        for col, (schedule, name) in enumerate(((0, "row by row (SCHEDULE 0)"),
                                                (1, f"grouped (SCHEDULE 1, GROUP_M {gm})"))):
            s = _ch10_schedule(n, schedule, clusters, c)
            assert s["wave"].max() + 1 == w["busiest"]
            x0 = col * (big + gap_x)
            tm_n, tn_n = s["tiles_m"], s["tiles_n"]
            for tm in range(tm_n):
                for tn in range(tn_n):
                    wave = s["wave"][tm, tn]
                    fc = colours[wave]
                    ax.add_patch(Rectangle((x0 + tn, y0 + tm), 1, 1, fc=fc, ec="white", lw=0.6))
                    lum = 0.299 * fc[0] + 0.587 * fc[1] + 0.114 * fc[2]
                    ax.text(x0 + tn + 0.5, y0 + tm + 0.53, str(s["cluster"][tm, tn]), ha="center", va="center",
                            fontsize=6.3, color="black" if lum > 0.55 else "white")
            # outline the first wave: every cell edge whose neighbour is not in wave 0
            first = s["wave"] == 0
            for tm in range(tm_n):
                for tn in range(tn_n):
                    if not first[tm, tn]:
                        continue
                    x, y = x0 + tn, y0 + tm
                    if tm == 0 or not first[tm - 1, tn]:
                        ax.plot([x, x + 1], [y, y], color="crimson", lw=2.2)
                    if tm == tm_n - 1 or not first[tm + 1, tn]:
                        ax.plot([x, x + 1], [y + 1, y + 1], color="crimson", lw=2.2)
                    if tn == 0 or not first[tm, tn - 1]:
                        ax.plot([x, x], [y, y + 1], color="crimson", lw=2.2)
                    if tn == tn_n - 1 or not first[tm, tn + 1]:
                        ax.plot([x + 1, x + 1], [y, y + 1], color="crimson", lw=2.2)
            rows = np.unique(np.nonzero(first)[0]).size
            cols = np.unique(np.nonzero(first)[1]).size
            ax.text(x0, y0 - 1.75, f"N = {n}, {name}", fontsize=10, weight="bold", ha="left", va="center")
            ax.text(x0, y0 - 0.75, f"wave 0 spans {rows} tile rows of A and {cols} tile columns of B",
                    fontsize=8.5, ha="left", va="center", color="crimson")
            for tn in range(0, tn_n, 4 if tn_n > 12 else 3):
                ax.text(x0 + tn + 0.5, y0 + tm_n + 0.45, str(tn), ha="center", va="center", fontsize=7,
                        color="dimgray")
            for tm in range(0, tm_n, 4 if tm_n > 12 else 3):
                ax.text(x0 - 0.35, y0 + tm + 0.5, str(tm), ha="right", va="center", fontsize=7, color="dimgray")
        last = w["tiles"] - (w["busiest"] - 1) * clusters
        ax.text(2 * big + gap_x, y0 + s["tiles_m"] + 1.25,
                f"{w['tiles']} cluster tiles on {clusters} clusters: {w['busiest']} waves, the last with {last} tiles "
                f"({clusters - last} clusters idle), busy {w['efficiency']:.0%} of the time",
                fontsize=8.5, ha="right", va="center")
        y0 += s["tiles_m"] + gap_y
    top = max(waves(n, n, c["CLUSTER_BM"], c["BN"], clusters)["tiles"] for n in sizes)
    handles = [Patch(color=colours[k], label=f"wave {k}: schedule indices {k * clusters}-"
                     f"{min((k + 1) * clusters, top) - 1}") for k in range(most)]
    handles.append(Patch(fc="none", ec="crimson", lw=2, label="the first wave"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8.5,
              frameon=False)
    ax.set_xlim(-1.2, 2 * big + gap_x + 0.3)
    ax.set_ylim(y0 - gap_y + 2.0, -2.4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"Which of the {clusters} clusters computes which {c['CLUSTER_BM']} x {c['BN']} tile of C "
                 f"(the number in the cell), and in which wave\n"
                 f"cluster j takes schedule indices j, j + {clusters}, j + {2 * clusters}, ...; tile rows down, "
                 f"tile columns across", fontsize=10.5)
    return ax


def fig_cluster_multicast(ax=None):
    """One k tile of a cluster of two: each CTA asks L2 for its own A rows and half of the shared B slice; the
    multicast writes each half of B into both CTAs' shared memory, at the same offset, and completes its bytes on
    both CTAs' full barriers. Bottom: bytes per CTA per k tile, asked of L2 against landed in shared memory."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

    c = _ch10_consts()
    bm, bn, bk, cl = c["BM"], c["BN"], c["BK"], c["CLUSTER"]
    half = c["B_BOX_ROWS"]
    a_kib, h_kib = bm * bk * 2 // CH10_KIB, half * bk * 2 // CH10_KIB
    ax = _axes(ax, (13.0, 11.0))
    blue, green = CH10_RANK_COLOURS
    box_kw = dict(boxstyle="round,pad=0.02,rounding_size=0.25")

    def block(x, y, w, h, colour, text, fs=8.5, alpha=0.28):
        ax.add_patch(Rectangle((x, y), w, h, fc=colour, ec=colour, alpha=alpha, lw=0))
        ax.add_patch(Rectangle((x, y), w, h, fc="none", ec=colour, lw=1.5))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs)

    def arrow(p, q, colour, rad=0.0, lw=1.8, ls="-"):
        ax.add_patch(FancyArrowPatch(p, q, arrowstyle="-|>", mutation_scale=15, color=colour, lw=lw, ls=ls,
                                     connectionstyle=f"arc3,rad={rad}", shrinkA=1, shrinkB=1))

    # --- L2 on the left: each CTA's A rows and the shared B slice, each piece coloured by the CTA that asks for it
    ax.add_patch(FancyBboxPatch((0.0, -0.2), 8.0, 17.0, fc="0.96", ec="0.6", lw=1.0, **box_kw))
    ax.text(4.0, 16.2, "L2 (global memory behind it)", ha="center", fontsize=10, weight="bold")
    block(0.7, 13.2, 6.6, 1.8, blue, f"A rows row0 + 0-{bm - 1}\n[{bm}, {bk}] bf16, {a_kib} KiB, rank 0 asks")
    block(0.7, 8.2, 6.6, 1.8, blue, f"Bt rows col0 + 0-{half - 1}: {h_kib} KiB\nrank 0 asks, multicast mask 0b11")
    block(0.7, 6.4, 6.6, 1.8, green, f"Bt rows col0 + {half}-{bn - 1}: {h_kib} KiB\nrank 1 asks, multicast mask 0b11")
    ax.text(4.0, 10.25, f"the shared slice Bt [{bn}, {bk}] bf16", ha="center", va="bottom", fontsize=8,
            color="dimgray")
    block(0.7, 0.5, 6.6, 1.8, green, f"A rows row0 + {bm}-{2 * bm - 1}\n[{bm}, {bk}] bf16, {a_kib} KiB, "
          f"rank 1 asks")

    # --- the two CTAs on the right, one ring slot each; B sits on the side facing the other CTA
    ledger = (f"full[s] expects\n{c['TX_BYTES']:,} B:\n{a_kib} KiB of A\n+ 2 x {h_kib} KiB of B\n\n"
              f"empty[s] waits for\n{c['CONSUMERS'] * cl} arrivals:\n{c['CONSUMERS']} consumers x {cl} CTAs\n"
              f"(the partner\nwrites here too)")
    for rank, (y0, a_y, b_y) in enumerate(((8.6, 13.2, 9.0), (-0.2, 0.5, 3.3))):
        colour = CH10_RANK_COLOURS[rank]
        ax.add_patch(FancyBboxPatch((13.0, y0), 12.6, 8.2, fc="white", ec=colour, lw=2.0, **box_kw))
        ax.text(19.3, y0 + 7.7, f"CTA rank {rank} (its own SM): shared memory, ring slot s", ha="center",
                fontsize=9.5, weight="bold", color=colour)
        block(14.0, a_y, 6.2, 1.8, colour, f"A [{bm}, {bk}], {a_kib} KiB: its own rows")
        block(14.0, b_y + 1.8, 6.2, 1.8, blue, f"B rows 0-{half - 1}, {h_kib} KiB\nwritten by rank 0's copy")
        block(14.0, b_y, 6.2, 1.8, green, f"B rows {half}-{bn - 1}, {h_kib} KiB\nwritten by rank 1's copy")
        ax.text(20.7, y0 + 3.7, ledger, ha="left", va="center", fontsize=8)
    # A: unicast, each CTA its own rows
    arrow((7.3, 14.1), (14.0, 14.1), blue, lw=2.2)
    arrow((7.3, 1.4), (14.0, 1.4), green, lw=2.2)
    ax.text(10.6, 14.35, "its own A: one CTA", ha="center", va="bottom", fontsize=8, color=blue)
    ax.text(10.6, 1.65, "its own A: one CTA", ha="center", va="bottom", fontsize=8, color=green)
    # B halves: one read from L2, two writes (one per CTA, at the same offset in each)
    arrow((7.3, 9.5), (14.0, 11.7), blue)
    arrow((7.3, 8.7), (14.0, 6.0), blue)
    arrow((7.3, 7.7), (14.0, 9.9), green)
    arrow((7.3, 6.9), (14.0, 4.2), green)
    ax.text(10.5, 3.6, "multicast: each half of B is\nread from L2 once and written\ninto both CTAs, "
            "at the same\noffset, counted on both full[s]", ha="center", va="center", fontsize=8.2)

    # --- bytes per CTA per k tile, from the explorer
    scale = 16.0 / l2_bytes_per_k_tile(bm, bn, bk, 1)["landed"]
    ax.text(0.0, -1.2, "bytes per CTA per k tile (helpers.explore.l2_bytes_per_k_tile)", fontsize=9.5,
            weight="bold", va="center")
    y = -2.1
    for size in (1, cl):
        t = l2_bytes_per_k_tile(bm, bn, bk, size)
        for what, value, colour in (("asked of L2", t["requested"], "0.35"),
                                    ("landed in shared memory", t["landed"], "0.75")):
            ax.add_patch(Rectangle((7.0, y - 0.32), value * scale, 0.64, fc=colour, ec="none"))
            note = f"   ({t['saved']:.0%} fewer)" if what == "asked of L2" and t["saved"] > 0 else ""
            ax.text(7.0 + value * scale + 0.2, y, f"{value:,} B{note}", va="center", fontsize=8.5,
                    weight="bold" if note else "normal")
            ax.text(6.8, y, f"cluster of {size}: {what}", ha="right", va="center", fontsize=8.5)
            y -= 0.85
        y -= 0.25
    ax.set(xlim=(-0.5, 26.0), ylim=(y, 17.0))
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _ch10_epilogue_events(chunks: int, write: float = 3.0, fence: float = 0.5, bar: float = 0.35,
                          issue: float = 0.45, read: float = 5.8, drain: float = 2.4) -> dict:
    """Schematic times (made-up units) of one consumer warpgroup's epilogue in the kernel's order, per chunk q:
    thread 0 waits with wait_group.read 1 (store q - 2 has read its buffer), named barrier (the other 127 threads
    wait there), all 128 threads write chunk q to buffer q % 2, each fences, named barrier, thread 0 issues the TMA
    store and commits its bulk group. The read is drawn longer than the writes so that one wait shows."""
    ev = {"wait": [], "bar": [], "bar_t0": [], "write": [], "fence": [], "issue": [], "read": [], "drain": []}
    now = 0.0          # thread 0 is ready for the next chunk
    arrive = 0.0       # the other threads reach the first named barrier of the next chunk
    for q in range(chunks):
        free = ev["read"][q - 2][1] if q >= 2 else now
        done_wait = max(now, free)
        ev["wait"].append((q, now, done_wait))
        ev["bar"].append((q, arrive, done_wait + bar))
        ev["bar_t0"].append((q, done_wait, done_wait + bar))
        t = done_wait + bar
        ev["write"].append((q, t, t + write))
        t += write
        ev["fence"].append((q, t, t + fence))
        t += fence
        ev["bar"].append((q, t, t + bar))
        ev["bar_t0"].append((q, t, t + bar))
        t += bar
        arrive = t
        ev["issue"].append((q, t, t + issue))
        t += issue
        ev["read"].append((t, t + read))
        ev["drain"].append((t + 0.4 * read, t + read + drain))
        now = t
    ev["end"] = arrive
    return ev


def fig_tma_store_epilogue(rung_id: str = "10_tma_store", ax=None):
    """A schematic timeline (durations made up, order exact) of one consumer warpgroup writing its 64 x BN slice
    of C: BN / C_CHUNK chunks through two shared buffers, with the kernel's fence, named barriers, TMA store,
    commit and bulk-group waits. Arrows mark the waits that protect a buffer from being rewritten too early.
    Step 4 (10_tma_store) writes with st.shared; later steps with stmatrix."""
    from matplotlib.patches import FancyArrowPatch, Patch, Rectangle

    c = build(rung(rung_id)).consts
    chunks = c["BN"] // c["C_CHUNK"]
    if c["EPILOGUE"] == 2:  # stmatrix.x4: 4 registers (8 bf16) per lane, 16 columns of a warp's 16 rows
        store, per_thread = "stmatrix", f"{c['C_CHUNK'] // 16} stmatrix.x4"
    else:                   # st.shared: one bf16x2 per instruction
        store, per_thread = "st.shared", f"{64 * c['C_CHUNK'] // 128 // 2} bf16x2"
    ev = _ch10_epilogue_events(chunks)
    lanes = {"threads": 4.0, "t0": 3.0, "buf0": 2.0, "buf1": 1.0, "global": 0.0}
    colours = {"write": "#4c72b0", "fence": "#dd8452", "bar": "0.55", "wait": "#c44e52", "issue": "black",
               "read": "#8172b3", "drain": "#8172b3", "next": "0.85"}
    h = 0.56
    ax = _axes(ax, (14.0, 5.6))

    def seg(lane, t0, t1, kind, text="", hatch=None, fc=None, tc="white"):
        y = lanes[lane]
        ax.add_patch(Rectangle((t0, y - h / 2), max(t1 - t0, 0.04), h, fc=fc or colours[kind], ec="white",
                               lw=0.5, hatch=hatch, alpha=0.55 if hatch else 1.0))
        if text:
            ax.text((t0 + t1) / 2, y, text, ha="center", va="center", fontsize=7.6, color=tc)

    for q, t0, t1 in ev["write"]:
        seg("threads", t0, t1, "write", f"write chunk {q}\n-> buffer {q % 2}")
        seg(f"buf{q % 2}", t0, t1, "write", f"chunk {q}: {store}")
    for q, t0, t1 in ev["fence"]:
        seg("threads", t0, t1, "fence")
    for q, t0, t1 in ev["bar"]:
        seg("threads", t0, t1, "bar")
    for q, t0, t1 in ev["bar_t0"]:
        seg("t0", t0, t1, "bar")
    for q, t0, t1 in ev["wait"]:
        if t1 - t0 > 0.05:
            seg("t0", t0, t1, "wait", "wait")
        else:
            ax.plot([t0, t0], [lanes["t0"] - h / 2, lanes["t0"] + h / 2], color=colours["wait"], lw=2.2)
    for q, t0, t1 in ev["issue"]:
        seg("t0", t0, t1, "issue")
        ax.text((t0 + t1) / 2, lanes["t0"] + h / 2 + 0.08, f"store {q}\n+ commit", ha="center", va="bottom",
                fontsize=7)
    for q, (t0, t1) in enumerate(ev["read"]):
        seg(f"buf{q % 2}", t0, t1, "read", f"TMA reads chunk {q}")
    for q, (t0, t1) in enumerate(ev["drain"]):
        y = lanes["global"] + (0.12 if q % 2 else -0.12)
        ax.add_patch(Rectangle((t0, y - h / 4), t1 - t0, h / 2, fc=colours["drain"], alpha=0.45, ec="white",
                               hatch="///"))
        ax.text(t1 + 0.1, y, f"{q}", va="center", fontsize=7, color="dimgray")
    # the reuse rule: store q - 2 must have read its buffer before chunk q is written there
    for q, t0, t1 in ev["wait"]:
        if q >= 2:
            r_end = ev["read"][q - 2][1]
            ax.add_patch(FancyArrowPatch((r_end, lanes[f"buf{q % 2}"] + h / 2), (t1, lanes["t0"] - h / 2),
                                         arrowstyle="-|>", mutation_scale=12, color=colours["wait"], lw=1.3,
                                         connectionstyle="arc3,rad=0.0"))
    # after the last chunk: the next tile's k loop, or, after the block's last tile, wait_group 0
    end, tail = ev["end"], max(t1 for _, t1 in ev["drain"])
    t0_end = ev["issue"][-1][2]
    seg("threads", end, end + 7.0, "next", "next tile: k loop (wgmma)", fc=colours["next"], tc="black")
    seg("t0", t0_end, tail, "wait", hatch="xx", fc=colours["wait"])
    ax.text((t0_end + tail) / 2, lanes["t0"], "last tile only: wait_group 0\n(reads and writes done), then exit",
            ha="center", va="center", fontsize=7.5, color="black",
            bbox=dict(fc="white", ec="none", alpha=0.8, pad=0.6))
    names = {"threads": "all 128 threads\nof consumer c", "t0": "thread 0: writes too,\nand issues the stores",
             "buf0": f"buffer 0\n({c['C_BUFFER_BYTES'] // CH10_KIB} KiB)",
             "buf1": f"buffer 1\n({c['C_BUFFER_BYTES'] // CH10_KIB} KiB)",
             "global": "copy engine:\nwrites to C in global"}
    for lane, y in lanes.items():
        ax.text(-0.4, y, names[lane], ha="right", va="center", fontsize=8.5)
    handles = [Patch(color=colours["write"], label=f"{store}: {per_thread} per thread per chunk"),
               Patch(color=colours["fence"], label="fence.proxy.async.shared::cta (every writer)"),
               Patch(color=colours["bar"], label="bar.sync on the warpgroup's named barrier"),
               Patch(color=colours["issue"], label="cp.async.bulk.tensor store + commit_group"),
               Patch(color=colours["wait"], label="cp.async.bulk.wait_group.read 1 (red tick: returns at once)"),
               Patch(color=colours["read"], label="the store reads its buffer"),
               Patch(fc=colours["drain"], alpha=0.45, hatch="///", label="its writes reach C later")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=3, fontsize=8,
              frameon=False)
    ax.set(xlim=(-0.2, max(end + 7.0, tail) + 0.6), ylim=(-0.55, 5.05), yticks=[], xticks=[])
    for side in ("left", "right", "top", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"Schematic, not to scale: one consumer's epilogue, {c['BN']} / {c['C_CHUNK']} = {chunks} chunks of "
                 f"[64, {c['C_CHUNK']}] bf16 through 2 buffers\nthe order is the kernel's; red arrows: "
                 f"a buffer is rewritten only after the store two chunks back has read it", fontsize=10)
    return ax


def fig_tile_waves(ax=None, sizes=(1024, 2048, 3072, 4096, 6144, 8192)):
    """The tile-per-shape napkin rung 10 launches with (helpers.launch.choose_tile): for each square N and each
    tile the rung may use, the predicted time (busiest cluster's tiles x tile area / the tile's steady rate)
    relative to the 128 x 256 tile, with how busy the chip is over the waves; the picked tile is outlined."""
    from matplotlib.patches import Patch

    from .tiles import choose_tile, tile_candidates
    r = rung(CH10_RUNG)
    clusters = _ch10_clusters()
    shapes = [(cols, rate) for _, _, cols, rate in tile_candidates(r)]
    colours = {cols: col for (cols, _), col in zip(shapes, ("#4c72b0", "#dd8452", "#55a868"))}
    ax = _axes(ax, (12.5, 4.8))
    width = 0.8 / len(shapes)
    top = 0.0
    for i, n in enumerate(sizes):
        rows = {row["tile"][1]: row for row in choose_tile(r, n, n, n, clusters)}
        wide = rows[shapes[0][0]]["cost"]
        for j, (cols, rate) in enumerate(shapes):
            x = i + (j - (len(shapes) - 1) / 2) * width
            row = rows.get(cols)
            if row is None:
                ax.text(x, 0.03, f"N % {cols}\n!= 0", ha="center", va="bottom", fontsize=7, color="0.45")
                continue
            rel = row["cost"] / wide
            top = max(top, rel)
            ax.bar(x, rel, width * 0.92, color=colours[cols], ec="black" if row["picked"] else "none",
                   lw=2.2 if row["picked"] else 0)
            ax.text(x, rel + 0.02, f"{row['busiest']} x\n{row['efficiency']:.0%}", ha="center", va="bottom",
                    fontsize=7)
    ax.axhline(1.0, color="0.3", lw=0.8, ls=":")
    ax.set_xticks(range(len(sizes)), [f"N = {n}" for n in sizes])
    ax.set_ylim(0, top * 1.28)
    ax.set_ylabel("predicted time, relative to\nthe 128 x 256 tile (lower is faster)")
    handles = [Patch(color=colours[cols], label=f"128 x {cols} tile, steady rate {rate:.2f}") for cols, rate in shapes]
    handles.append(Patch(fc="white", ec="black", lw=2.2, label="the tile the launch picks"))
    ax.legend(handles=handles, loc="upper left", ncol=4, fontsize=8, frameon=False)
    _clean(ax)
    ax.set_title(f"Wave quantization per tile on {clusters} clusters of 2 CTAs: above each bar, the tiles the busiest "
                 f"cluster computes x how busy the chip is over those waves", fontsize=10)
    return ax
