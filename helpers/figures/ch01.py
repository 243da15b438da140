"""Chapter 01 (FP32 SIMT): fig_simt_warp_sectors, fig_simt_thread_tiles, fig_simt_warp_tiles, fig_simt_lds_banks.

The models below do not restate the kernels' index arithmetic: they read each kernel's `const int name = ...;`
lines and its operand subscripts from the .cu file and evaluate them for the threads of block (0, 0). The tests
check the models (warp_sectors, thread_owner, lds128) the figures draw."""
from __future__ import annotations

import re

import numpy as np

from ..compiler import build
from ..csource import CExprError, evaluate
from ..hardware import CHUNK, FLOP_PER_FMA, KIB, SECTOR_BYTES, SLOTS, SMEM_BANKS, WARP
from ..models import wavefronts
from ..registry import rung
from .common import A_COLOUR, B_COLOUR, FP32, axes, clean

SIZE = 4096                   # the M = N = K the chapter times; any size of 8 or more gives the same counts
SECTOR_ROW = 16               # sectors drawn per row in fig_simt_warp_sectors


def _source(rung_id: str) -> str:
    """The rung's kernel without its comments (the headers quote subscripts such as A[row, k] in prose)."""
    return re.sub(r"//.*", "", rung(rung_id).path.read_text())


def _thread_index(rung_id: str) -> dict[str, np.ndarray]:
    """Every `const int name = expr;` of the kernel that depends only on threadIdx, blockIdx and its constexprs,
    evaluated for each thread of block (0, 0): name -> array over threadIdx.x. Lines that need a loop variable or
    a pointer are left out; a later line with the same name would replace an earlier one."""
    c = build(rung_id).consts
    env = {**c, "threadIdx.x": np.arange(c["THREADS"]), "blockIdx.x": 0, "blockIdx.y": 0}
    out: dict[str, np.ndarray] = {}
    for decl in re.findall(r"^\s*const int ([^;]+);", _source(rung_id), re.M):
        for part in decl.split(","):
            name, _, expr = (s.strip() for s in part.partition("="))
            try:
                value = evaluate(expr, env)
            except CExprError:
                continue
            out[name] = env[name] = np.broadcast_to(value, (c["THREADS"],))
    return out


def _expr(rung_id: str, name: str) -> str:
    """The right-hand side of `const int name = ...` in the kernel, as written there."""
    decl = re.search(rf"\bconst int (?:[^;]*,\s*)?{name}\s*=\s*([^,;]+)", _source(rung_id))
    return " ".join(decl.group(1).split())


def warp_sectors(rung_id: str, k: int = 0, size: int = SIZE) -> dict:
    """What warp 0 of block (0, 0) of 01_naive or 01_coalesced touches at one step k: for A and B (the loads) and C
    (the store), the kernel's subscript, the byte address each of its 32 lanes names, the 32-byte sectors those fall
    in, and the bytes moved (sectors x 32) against the bytes used (distinct addresses x 4). Matrices start at 0."""
    idx = _thread_index(rung_id)
    row, col = idx["row"][:WARP], idx["col"][:WARP]
    env = {"row": row, "col": col, "M": size, "N": size, "K": size, "k": k}
    src = _source(rung_id)
    out = {"row": row, "col": col}
    for op in "ABC":
        expr = " ".join(re.search(rf"\b{op}\[([^\]]+)\]", src).group(1).split())
        addr = FP32 * np.broadcast_to(evaluate(expr, env), (WARP,))
        sectors = sorted({int(a) // SECTOR_BYTES for a in addr})
        out[op] = {"expr": expr, "addresses": addr, "sectors": sectors, "moved": SECTOR_BYTES * len(sectors),
                   "used": FP32 * len(set(addr.tolist()))}
    return out


def thread_owner(rung_id: str) -> np.ndarray:
    """[BM, BN] array: the thread of block (0, 0) that computes each element of the block tile. 01_blocktile_2d and
    01_vectorized: thread (trow, tcol) owns the TM x TN patch at (trow * TM, tcol * TN). 01_warptiled: a lane owns
    2 x 2 patches of 4 x 4 whose top-left corners are (m0, n0) plus half a warp tile (WM / 2, WN / 2)."""
    c, idx = build(rung_id).consts, _thread_index(rung_id)
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


def lds128(rung_id: str, k: int = 0) -> list[dict]:
    """The 16-byte shared loads (`float4` reads of sA / sB in the inner loop) warp 0 issues at one step k of
    01_vectorized or 01_warptiled, in source order: operand, the kernel's column subscript, and the byte offset each
    lane reads inside that operand's [BK, BM] or [BK, BN] tile. A subscript with the loop variable i or j (stepping
    by 4) stands for one load per value."""
    c, idx = build(rung_id).consts, _thread_index(rung_id)
    env = {**c, **{n: v[:WARP] for n, v in idx.items()}, "k": k}
    pattern = r"reinterpret_cast<const float4\s*\*>\(&(s[AB])(?:\[buf\])?\[k\]\[([^\]]+)\]\)"
    loads = []
    for tile, expr in re.findall(pattern, _source(rung_id)):
        var = next((v for v in ("i", "j") if re.search(rf"\b{v}\b", expr)), None)
        width = c["BM"] if tile == "sA" else c["BN"]
        for step in range(0, c["TM"] if var == "i" else c["TN"], 4) if var else [None]:
            col = np.broadcast_to(evaluate(expr, {**env, **({var: step} if var else {})}), (WARP,))
            addr = FP32 * (k * width + col)
            chunks = len(set((addr // CHUNK).tolist()))
            loads.append({"operand": tile[1], "expr": " ".join(expr.split()) + (f"  ({var} = {step})" if var else ""),
                          "addresses": addr, "wavefronts": wavefronts(addr.tolist()),
                          "ideal": -(-chunks * CHUNK // (32 * 4))})
    return loads


# ---- figure 1: one warp, one step k, the sectors it moves --------------------------------------------------------

def _sector_strip(ax, x, y, sectors, addresses, colours, cell=1.0, height=2.2):
    """Sectors as boxes of 8 fp32 cells, SECTOR_ROW boxes per row; a used cell takes its first lane's colour.
    Returns the y below the strip."""
    from matplotlib.patches import Rectangle
    per = SECTOR_BYTES // FP32
    lane_at = {}
    for lane, a in enumerate(addresses.tolist()):
        lane_at.setdefault(a // FP32, lane)
    for p, s in enumerate(sectors):
        sx, sy = x + (p % SECTOR_ROW) * (per + 1) * cell, y + (p // SECTOR_ROW) * (height + 0.6)
        for e in range(per):
            lane = lane_at.get(s * per + e)
            ax.add_patch(Rectangle((sx + e * cell, sy), cell, height, ec="white", lw=0.3,
                                   fc="0.86" if lane is None else colours[lane]))
        ax.add_patch(Rectangle((sx, sy), per * cell, height, fc="none", ec="0.25", lw=0.7))
    rows = -(-len(sectors) // SECTOR_ROW)
    return y + rows * (height + 0.6)


def fig_simt_warp_sectors(ax=None, size: int = SIZE):
    """Rungs 01_naive and 01_coalesced, warp 0 of block (0, 0), one step k. Left: the block's C tile with the 32
    elements the warp computes, coloured by lane (the kernel's own row/col expressions, evaluated). Right: the
    32-byte sectors its load of A, its load of B and its store of C fall in, 8 fp32 cells each, the cells a lane
    asked for in that lane's colour and the rest grey: everything grey is moved and thrown away."""
    import matplotlib.pyplot as plt

    colours = plt.get_cmap("viridis")(np.linspace(0.05, 0.95, WARP))
    ax = axes(ax, (11.6, 8.6))   # the drawing is about 9.3 in wide: the column, so no text is scaled down
    strip_x = 44
    y0 = 0.0
    for rid in ("01_naive", "01_coalesced"):
        c = build(rid).consts
        s = warp_sectors(rid, size=size)
        ax.text(0, y0 - 3.5, f"{rid}:  row = {_expr(rid, 'row')},  col = {_expr(rid, 'col')}",
                fontsize=10.5, weight="bold", ha="left", va="bottom", family="monospace")
        # the block's C tile, warp 0 in lane colours
        grid = np.full((c["BM"], c["BN"], 4), 0.93)
        for lane in range(WARP):
            grid[s["row"][lane], s["col"][lane]] = colours[lane]
        ax.imshow(grid, extent=(0, c["BN"], y0 + c["BM"], y0), interpolation="nearest")
        ax.text(c["BN"] / 2, y0 + c["BM"] + 1.2, f"C block tile {c['BM']} x {c['BN']}:\nwarp 0 (threads 0-31)\n"
                f"coloured lane 0 (dark)\nto lane 31 (yellow)", ha="center", va="top", fontsize=8.5)
        y = y0
        for op, what in (("A", "load"), ("B", "load"), ("C", "store, once after the loop:")):
            d = s[op]
            n = len(d["sectors"])
            if d["used"] == FP32:
                use = f"one address for all {WARP} lanes (a broadcast) in {n} sector -> {d['moved']} B moved"
            else:
                use = (f"{d['used'] // FP32} addresses in {n} sectors -> {d['moved']:,} B moved, {d['used']} B "
                       f"used ({d['used'] / d['moved']:.1%})")
            ax.text(strip_x, y, f"{what} {op}[{d['expr']}]: {use}", fontsize=9, ha="left", va="top")
            y = _sector_strip(ax, strip_x, y + 3.4, d["sectors"], d["addresses"], colours) + 2.4
        moved = s["A"]["moved"] + s["B"]["moved"]
        flop = WARP * FLOP_PER_FMA
        ax.text(strip_x, y + 0.2, f"per step k: one warp-wide FFMA ({flop} FLOP) for {moved:,} B of loads moved "
                f"= {flop / moved:.2g} FLOP per byte", fontsize=9.5, weight="bold", ha="left", va="top")
        y0 = max(y0 + c["BM"] + 22, y + 12)   # room for the four-line caption under the C tile
    ax.set_xlim(-1, strip_x + SECTOR_ROW * 9 + 1)
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
    idx = _thread_index(rung_id)
    owner = thread_owner(rung_id)
    bm, bn, bk, tm, tn, threads = c["BM"], c["BN"], c["BK"], c["TM"], c["TN"], c["THREADS"]
    warps = threads // WARP
    pastel = plt.get_cmap("Pastel1").colors + plt.get_cmap("Pastel2").colors
    gap = 5
    cx, cy = bk + gap, bk + gap
    ax = axes(ax, (11.8, 8.2))   # the drawing is about 9.3 in wide: the column, so no text is scaled down
    # shared tiles, one cell per element
    for x0, y0, w, h, name in ((0, cy, bk, bm, "sA"), (cx, 0, bn, bk, "sB")):
        ax.add_patch(Rectangle((x0, y0), w, h, fc=A_COLOUR if name == "sA" else B_COLOUR, alpha=0.25, ec="black",
                               lw=0.8))
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
            ax.text(cx + c0 + tn / 2, cy + r0 + tm / 2, str(t), ha="center", va="center", fontsize=8,
                    color="0.15")
    # the chosen thread: its patch, and what it reads at step k
    r0, c0 = idx["trow"][thread] * tm, idx["tcol"][thread] * tn
    hi = "tab:red"
    ax.add_patch(Rectangle((cx + c0, cy + r0), tn, tm, fc="none", ec=hi, lw=2.4))
    ax.add_patch(Rectangle((k, cy + r0), 1, tm, fc=hi, alpha=0.7, ec=hi, lw=1.5))
    ax.add_patch(Rectangle((cx + c0, k), tn, 1, fc=hi, alpha=0.7, ec=hi, lw=1.5))
    ax.plot([k + 1, cx + c0], [cy + r0 + tm / 2] * 2, color=hi, lw=0.9, ls="--", zorder=0.5)  # under the patches
    ax.plot([cx + c0 + tn / 2] * 2, [k + 1, cy + r0], color=hi, lw=0.9, ls="--", zorder=0.5)
    ax.text(bk / 2, cy - 0.6, f"k: 0-{bk - 1}", ha="center", va="bottom", fontsize=8)
    ax.text(cx - 0.6, bk / 2, f"k: 0-{bk - 1}", ha="right", va="center", fontsize=8)
    # the numbers, from the constants
    loads, ffma = tm + tn, tm * tn
    tile_bytes = (bm * bk + bk * bn) * FP32
    tile_flop = 2 * bm * bn * bk
    tx = cx + bn + 6
    ax.text(tx, cy, f"thread {thread}:  trow = {_expr(rung_id, 'trow')} = {idx['trow'][thread]}\n"
            f"            tcol = {_expr(rung_id, 'tcol')} = {idx['tcol'][thread]}\n"
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
    ax.set_xlim(-1, tx + 80)   # the text column is about 80 units wide at this scale
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
    idx = _thread_index(rung_id)
    owner = thread_owner(rung_id)
    bm, bn, wm, wn = c["BM"], c["BN"], c["WM"], c["WN"]
    warps = c["THREADS"] // WARP
    pastel = plt.get_cmap("Pastel1").colors
    strong = ("tab:red", "tab:blue", "tab:green", "tab:purple")
    ax = axes(ax, (12.0, 6.1))   # the drawing is about 9.3 in wide: the column, so no text is scaled down
    for w in range(warps):
        r0, c0 = idx["wm"][w * WARP] * wm, idx["wn"][w * WARP] * wn
        ax.add_patch(Rectangle((c0, r0), wn, wm, fc=pastel[w % len(pastel)], ec="black", lw=1.0))
        ax.text(c0 + wn / 2, r0 + wm / 2, f"warp {w}\n{wm} x {wn}", ha="center", va="center", fontsize=9)
    ax.add_patch(Rectangle((0, 0), wn, wm, fc="none", ec="black", lw=2.4))
    ax.text(bn / 2, bm + 4, f"block tile {bm} x {bn}: {warps} warps as {bm // wm} x {bn // wn},\n"
            f"wm = {_expr(rung_id, 'wm')}, wn = {_expr(rung_id, 'wn')}", ha="center", va="top",
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
        ax.text(zx - 1, r * z + 1, f"row {r}", ha="right", va="top", fontsize=8, color="0.3")
    for col in range(0, wn, wn // 2):
        ax.text(zx + col * z + 1, wm * z + 1, f"column {col}", ha="left", va="top", fontsize=8, color="0.3")
    y = wm * z + 8
    for i, lane in enumerate(lanes):
        m0, n0 = int(idx["m0"][lane]), int(idx["n0"][lane])
        ax.text(zx, y, f"lane {lane}: m0 = {_expr(rung_id, 'm0')} = {m0}\n"
                f"        n0 = {_expr(rung_id, 'n0')} = {n0}\n"
                f"  patches at rows {m0}, {m0 + wm // 2} x columns {n0}, {n0 + wn // 2}",
                fontsize=8.5, ha="left", va="top", color=strong[i], family="monospace")
        y += 15.5   # three lines of 8.5 pt at this scale
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

def _lanes_text(lanes: list[int]) -> str:
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
    # constrained: the banks take the whole 9.3 in, so a 16-byte slot is wide enough for "lanes 6, 14, 22, 30" at 8 pt
    ax = ax if ax is not None else plt.subplots(figsize=(9.3, 11.0), layout="constrained")[1]
    y, box = 0.0, 1.35
    for rid in ("01_vectorized", "01_warptiled"):
        loads = lds128(rid, k)
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
            for b in range(SMEM_BANKS):
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
                ax.text(slot * 4 + 2, yy + box / 2, f"byte {chunk * CHUNK}\nlanes {_lanes_text(who)}",
                        ha="center", va="center", fontsize=8, linespacing=1.15)
            y += 1.0 + max(depth.values()) * (box + 0.1) + 1.2
        total, ideal = sum(ld["wavefronts"] for ld in loads), sum(ld["ideal"] for ld in loads)
        ax.text(-0.5, y, f"{rid}, all {len(loads)} LDS.128 of one step k: "
                f"{' + '.join(str(ld['wavefronts']) for ld in loads)} = {total} wavefronts (ideal {ideal})",
                fontsize=10, ha="left", va="top", color="tab:red" if total > ideal else "tab:green", weight="bold")
        y += 3.6
    ax.set_xlim(-0.6, SMEM_BANKS + 0.6)
    ax.set_ylim(y - 2.2, -0.8)
    ax.set_xticks(np.arange(0, SMEM_BANKS, 4) + 0.5, [f"bank {b}" for b in range(0, SMEM_BANKS, 4)], fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks([])
    clean(ax, ("bottom", "right", "left"))
    ax.set_title(f"Warp 0's 16-byte shared loads at step k = {k}: chunks under the same slot need separate "
                 f"wavefronts\nthe 32-byte stride of 01_vectorized puts four B chunks under each used slot;\n"
                 f"01_warptiled's lanes read consecutive chunks", fontsize=10.5, pad=12)
    return ax
