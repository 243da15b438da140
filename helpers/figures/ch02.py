"""Chapter 02 (WMMA): fig_wmma_warp_tiles, fig_wmma_intensity, fig_wmma_opaque."""
from __future__ import annotations

import re
from pathlib import Path

from ..compiler import build, intensity
from ..hardware import FFMA_FLOP_PER_CLK, KIB, TENSOR_FLOP_PER_CLK, WARP
from ..registry import rung
from .common import A_COLOUR, B_COLOUR, BF16, FP32, axes

SIMT = "01_warptiled"        # chapter 01's best SIMT rung
RUNGS = ("02_wmma_naive", "02_wmma_smem")


def _fragment_elements() -> dict:
    """Elements per lane of the three m16n16k16 fragments the kernels declare, as this machine's crt/mma.h
    declares them (`__frag_base<T, num_elements>`); 16 x 16 / 32 where the header cannot be read."""
    default = {"a": 16 * 16 // WARP, "b": 16 * 16 // WARP, "acc": 16 * 16 // WARP}
    try:
        from ..compiler import _include_dirs
        header = next(Path(d, "crt", "mma.h") for d in _include_dirs() if Path(d, "crt", "mma.h").exists())
        text = header.read_text()
    except Exception:   # no CUDA headers here: the arithmetic is the same
        return default
    bf16 = r"16, 16, 16, __nv_bfloat16, row_major>\s*:\s*public __frag_base<__nv_bfloat16, (\d+)"
    pats = {"a": r"fragment<matrix_a, " + bf16, "b": r"fragment<matrix_b, " + bf16,
            "acc": r"fragment<accumulator, 16, 16, 16, float>\s*:\s*public __frag_base<float, (\d+)"}
    got = {k: re.search(p, text) for k, p in pats.items()}
    return {k: int(m.group(1)) if m else default[k] for k, m in got.items()}


def _sass_per_call() -> dict:
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

def _rect(ax, x, y, w, h, **kw):
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
    ax = axes(ax, (11.7, 6.8))   # the drawing is about 9.3 in wide: the column, so no text is scaled down
    gap = 3                       # between an operand and C
    lw = 2.4

    # -- rung 02_wmma_naive ----------------------------------------------------------------------------------------
    wm, wn, wk = n["WM"], n["WN"], n["WK"]
    bm, bn = n["BM"], n["BN"]
    warps = n["THREADS"] // WARP
    x0 = 0.0
    cx, cy = x0 + wk + gap, wk + gap        # C's corner
    _rect(ax, cx, 0, bn, wk, fc=B_COLOUR, ec="black", lw=0.8, alpha=0.35)       # B: [WK, BN] of this k step
    _rect(ax, x0, cy, wk, bm, fc=A_COLOUR, ec="black", lw=0.8, alpha=0.35)      # A: [BM, WK]
    for w in range(warps):
        r, c = w // n["WARPS_N"], w % n["WARPS_N"]
        col = warp_colours[w % len(warp_colours)]
        _rect(ax, cx + c * wn, cy + r * wm, wn, wm, fc=col, ec="white", lw=1.5, alpha=0.75)
        ax.text(cx + c * wn + wn / 2, cy + r * wm + wm / 2, f"warp {w}\n{wm} x {wn}", ha="center", va="center",
                fontsize=8, color="white", weight="bold")
    for r in range(bm // wm):
        readers = [w for w in range(warps) if w // n["WARPS_N"] == r]
        ax.text(x0 + wk / 2, cy + r * wm + wm / 2, f"A {wm}x{wk}\nwarps\n{', '.join(map(str, readers))}",
                ha="center", va="center", fontsize=8)
    for c in range(bn // wn):
        readers = [w for w in range(warps) if w % n["WARPS_N"] == c]
        ax.text(cx + c * wn + wn / 2, wk / 2, f"B {wk}x{wn}\nwarps\n{', '.join(map(str, readers))}", ha="center",
                va="center", fontsize=8)
    # warp 0's two pieces, outlined
    _rect(ax, x0, cy, wk, wm, fc="none", ec=warp_colours[0], lw=lw)
    _rect(ax, cx, 0, wn, wk, fc="none", ec=warp_colours[0], lw=lw)
    flop = 2 * wm * wn * wk
    per_warp = (wm * wk + wk * wn) * BF16
    distinct = (bm * wk + wk * bn) * BF16
    ax.text(x0, -4, f"02_wmma_naive: block {bm} x {bn},\n{warps} warps, k step {wk},\nevery operand from global",
            ha="left", va="bottom", fontsize=10, weight="bold")
    ax.text(x0, cy + bm + 4,
            f"per k step, each warp:\n  A {wm}x{wk} + B {wk}x{wn} = {per_warp // KIB} KiB\n"
            f"  for 2 x {wm} x {wn} x {wk}\n  = {flop:,} FLOP\n  = {flop / per_warp:.0f} FLOP per byte\n"
            f"the block asks for {warps * per_warp // KIB} KiB,\n"
            f"{distinct // KIB} KiB of it distinct: each\npiece is read by {bm // wm} warps,\n"
            f"and no warp keeps it",
            ha="left", va="top", fontsize=8.5, linespacing=1.35)

    # -- rung 02_wmma_smem -----------------------------------------------------------------------------------------
    bm, bn, bk, pad = s["BM"], s["BN"], s["BK"], s["PAD"]
    wm, wn, wk = s["WM"], s["WN"], s["WK"]
    fm, fn = s["FRAG_M"], s["FRAG_N"]
    warps = s["THREADS"] // WARP
    x0 = cx + n["BN"] + 18        # room for the naive rung's heading; its text below is wrapped to fit
    cx, cy = x0 + bk + pad + gap, bk + gap
    _rect(ax, cx, 0, bn, bk, fc=B_COLOUR, ec="black", lw=0.8, alpha=0.35)                  # sB [BK, BN]
    _rect(ax, cx + bn, 0, pad, bk, fc="0.8", ec="0.5", lw=0.6, hatch="////")           # its padding
    _rect(ax, x0, cy, bk, bm, fc=A_COLOUR, ec="black", lw=0.8, alpha=0.35)                 # sA [BM, BK]
    _rect(ax, x0 + bk, cy, pad, bm, fc="0.8", ec="0.5", lw=0.6, hatch="////")          # its padding
    for kk in range(wk, bk, wk):                                                              # the kk steps
        ax.plot([x0 + kk] * 2, [cy, cy + bm], color="black", lw=0.6, ls="--")
        ax.plot([cx, cx + bn], [kk] * 2, color="black", lw=0.6, ls="--")
    for w in range(warps):
        r, c = w // s["WARPS_N"], w % s["WARPS_N"]
        col = warp_colours[w % len(warp_colours)]
        top, left = cy + r * fm * wm, cx + c * fn * wn
        _rect(ax, left, top, fn * wn, fm * wm, fc=col, ec="white", lw=1.5, alpha=0.75)
        for i in range(1, fm):
            ax.plot([left, left + fn * wn], [top + i * wm] * 2, color="white", lw=0.8)
        for j in range(1, fn):
            ax.plot([left + j * wn] * 2, [top, top + fm * wm], color="white", lw=0.8)
        ax.text(left + fn * wn / 2, top + fm * wm / 2, f"warp {w}: {fm * wm} x {fn * wn}\n= {fm} x {fn}\n"
                f"fragments", ha="center", va="center", fontsize=8, color="white", weight="bold",
                bbox=dict(fc=col, ec="none", alpha=0.95, pad=1.5))
    # warp 0 in its first kk step: FRAG_M A fragments and FRAG_N B fragments
    _rect(ax, x0, cy, wk, fm * wm, fc="none", ec=warp_colours[0], lw=lw)
    _rect(ax, cx, 0, fn * wn, wk, fc="none", ec=warp_colours[0], lw=lw)
    ax.text(x0 + wk + (bk - wk) / 2, cy + bm / 2 + 14, f"sA\n{bm} x {bk}\n+ {pad}\npad", ha="center", va="center",
            fontsize=8)
    ax.text(cx + bn / 2 + 10, bk / 2 + 5, f"sB {bk} x {bn} + {pad} pad", ha="center", va="center", fontsize=8)
    smem = (bm * (bk + pad) + bk * (bn + pad)) * BF16
    tile_bytes = (bm * bk + bk * bn) * BF16
    tile_flop = 2 * bm * bn * bk
    step_bytes = (fm * wm * wk + wk * fn * wn) * BF16
    step_flop = 2 * fm * wm * fn * wn * wk
    ax.text(x0, -4, f"02_wmma_smem: block {bm} x {bn}, {warps} warps, k tile {bk}\n(two 16-deep steps, dashed), "
            f"operands staged in shared memory", ha="left", va="bottom", fontsize=10, weight="bold")
    ax.text(cx + bn + pad + 3, cy,
            f"per k tile, the block copies\n  A {bm}x{bk} + B {bk}x{bn}\n  = {tile_bytes // KIB} KiB from global\n"
            f"  for 2 x {bm} x {bn} x {bk}\n  = {tile_flop:,} FLOP\n  = {tile_flop / tile_bytes:.0f} FLOP per byte\n\n"
            f"per 16-deep step, warp 0 (outlined)\nreads {fm} A + {fn} B fragments\n"
            f"  = {step_bytes // KIB} KiB from shared memory\n  for {fm * fn} mma_sync = {step_flop:,} FLOP\n\n"
            f"shared tiles with padding:\n  {smem:,} B per block",
            ha="left", va="top", fontsize=8.5, linespacing=1.35)
    ax.set_xlim(-2, cx + bn + pad + 58)
    ax.set_ylim(cy + bm + 6, -22)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("Who computes what: each warp owns 16 x 16 tiles of C and fetches its own A and B pieces\n"
                 "(drawn to one scale from the kernels' constants; outlined: what warp 0 reads in one 16-deep step)",
                 fontsize=10.5)
    return ax


# ---- figure 2: FLOP per byte loaded, against what each pipe needs ---------------------------------------------------

def fig_wmma_intensity(ax=None):
    """FLOP per byte of global loads of chapter 01's best SIMT rung and of both WMMA rungs (helpers.compiler.intensity,
    from each kernel's tile constants), with the machine balance of each pipe: the recorded peak of the pipe divided
    by the recorded HBM and L2 bandwidth. A rung left of its pipe's balance line cannot keep that pipe busy from that
    memory. Beside each bar: the bytes per clock one SM would need to run its pipe at the datasheet peak."""
    from ..ceilings import recorded_ceilings

    ceil = recorded_ceilings()
    rows = [(SIMT, "FP32 FFMA (CUDA cores)", FFMA_FLOP_PER_CLK, "tab:orange")] + \
           [(r, "BF16 HMMA (tensor cores)", TENSOR_FLOP_PER_CLK, "tab:green") for r in RUNGS]
    import matplotlib.pyplot as plt
    # constrained: the long tick labels stay inside the 9.2 in, so the image fits the column and nothing shrinks
    ax = ax if ax is not None else plt.subplots(figsize=(9.2, 5.6), layout="constrained")[1]
    ys = [2.4, 1.0, 0.0]                  # the SIMT rung apart from the two tensor-core rungs
    labels = []
    for y, (rid, pipe, flop_clk, colour) in zip(ys, rows):
        r = rung(rid)
        c = build(r).consts
        ai = intensity(r)
        ax.barh(y, ai, height=0.5, color=colour, alpha=0.8)
        ax.text(ai * 1.06, y, f"{ai:.0f} FLOP/B", va="center", fontsize=9.5, weight="bold")
        labels.append(f"{rid}\n{c[r.reuse[0]]} x {c[r.reuse[1]]} {r.dtype} tile\n{pipe}:\nat the datasheet peak\n"
                      f"({flop_clk:,} FLOP/clk per SM) it needs\n{flop_clk / ai:.0f} B per clock per SM")
    # each pipe's balance lines span only the rows that use that pipe
    lines = [("ffma_peak", "l2_read", "tab:orange", ":", (1.95, 3.4)),
             ("ffma_peak", "hbm_copy", "tab:orange", "-", (1.95, 3.4)),
             ("hmma_peak", "l2_read", "tab:green", ":", (-0.45, 1.55)),
             ("hmma_peak", "hbm_copy", "tab:green", "-", (-0.45, 1.55))]
    names = {"ffma_peak": "FFMA probe", "hmma_peak": "mma.sync\nprobe",   # wrapped: its two lines stand close
             "hbm_copy": "HBM copy", "l2_read": "L2 read"}
    for peak, bw, colour, ls, (lo, hi) in lines:
        if peak not in ceil or bw not in ceil:
            continue
        bal = ceil[peak].value / ceil[bw].value           # TFLOP/s / (TB/s) = FLOP per byte
        ax.vlines(bal, lo, hi, color=colour, ls=ls, lw=1.5)
        ax.text(bal * 1.04, hi, f"{names[peak]} /\n{names[bw]}\n= {bal:.0f} FLOP/B", fontsize=8, color=colour,
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

def _lanes(ax, x, y, regs, colour, w=3.2, h=1.0, label=""):
    """A fragment as 32 lane columns x `regs` 32-bit registers, every cell a '?': the API does not say which lane
    holds which element."""
    from matplotlib.patches import Rectangle
    cw, rh = w / WARP, h / regs
    for lane in range(WARP):
        for reg in range(regs):
            ax.add_patch(Rectangle((x + lane * cw, y + reg * rh), cw, rh, fc=colour, ec="white", lw=0.4,
                                   alpha=0.55))
    ax.text(x + w / 2, y + h / 2, "?", ha="center", va="center", fontsize=20, color="0.25", weight="bold")
    ax.text(x + w / 2, y + h + 0.08, label, ha="center", va="bottom", fontsize=8)
    ax.text(x, y - 0.06, "lane 0", ha="left", va="top", fontsize=8, color="0.35")
    ax.text(x + w, y - 0.06, "lane 31", ha="right", va="top", fontsize=8, color="0.35")


def _box(ax, x, y, w, h, text, fc="white", ec="0.3", fontsize=8.5, weight="normal"):
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.03", fc=fc, ec=ec, lw=1.0))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize, weight=weight,
            linespacing=1.3)


def _arrow(ax, x0, y0, x1, y1, text="", colour="black"):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.3))
    if text:
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.08, text, ha="center", va="bottom", fontsize=8.5,
                family="monospace", weight="bold")


def fig_wmma_opaque(ax=None):
    """The WMMA pipeline of one 16 x 16 x 16 step: load_matrix_sync -> mma_sync -> store_matrix_sync, with the
    fragments drawn as opaque boxes of 32 lanes x registers (per-lane element counts from crt/mma.h). Below each call,
    what it became in rung 02_wmma_smem's SASS (counted from the inventory), and what chapter 03 writes instead."""
    el = _fragment_elements()
    per = _sass_per_call()
    regs = {"a": el["a"] * BF16 // 4, "b": el["b"] * BF16 // 4, "acc": el["acc"] * FP32 // 4}
    import matplotlib.pyplot as plt
    # constrained: the drawing takes the whole 9.2 in, so the image fits the column and nothing shrinks
    ax = ax if ax is not None else plt.subplots(figsize=(9.2, 7.8), layout="constrained")[1]
    # columns: memory | fragments a, b | accumulator | memory
    xm, xf, xc, xo = 0.0, 3.65, 7.9, 11.8   # xf: the load_matrix_sync arrows as long as their labels
    ya, yb = 4.3, 2.6
    _box(ax, xm, ya + 0.1, 1.7, 0.9, "A tile\n16 x 16 bf16\n512 B, row-major", fc="#d9f2f7")
    _box(ax, xm, yb + 0.1, 1.7, 0.9, "B tile\n16 x 16 bf16\n512 B, row-major", fc="#fde3c8")
    _lanes(ax, xf, ya, regs["a"], A_COLOUR,
                label=f"fragment a: {el['a']} bf16 per lane = {regs['a']} registers")
    _lanes(ax, xf, yb, regs["b"], B_COLOUR,
                label=f"fragment b: {el['b']} bf16 per lane = {regs['b']} registers")
    _lanes(ax, xc, (ya + yb) / 2 - 0.35, regs["acc"], "0.6", w=3.0, h=1.6,
                label=f"accumulator c: {el['acc']} fp32 per lane = {regs['acc']} registers")
    _box(ax, xo, (ya + yb) / 2 + 0.05, 1.5, 0.9, "C tile\n16 x 16 fp32\n1 KiB", fc="0.92")
    _arrow(ax, xm + 1.75, ya + 0.55, xf - 0.05, ya + 0.55, "load_matrix_sync")
    _arrow(ax, xm + 1.75, yb + 0.55, xf - 0.05, yb + 0.55, "load_matrix_sync")
    _arrow(ax, xf + 3.25, ya + 0.5, xc - 0.05, (ya + yb) / 2 + 0.75, "")
    _arrow(ax, xf + 3.25, yb + 0.5, xc - 0.05, (ya + yb) / 2 + 0.15, "")
    ax.text((xf + 3.2 + xc) / 2, (ya + yb) / 2 + 0.45, "mma_sync", ha="center", va="center", fontsize=8.5,
            family="monospace", weight="bold")
    _arrow(ax, xc + 3.05, (ya + yb) / 2 + 0.5, xo - 0.05, (ya + yb) / 2 + 0.5, "")
    ax.text(xo + 0.75, (ya + yb) / 2 + 1.12, "store_matrix_sync", ha="center", va="bottom", fontsize=8.5,
            family="monospace", weight="bold")
    ax.text(xf + 1.6, ya + 1.55, "which lane holds which element: unspecified, per the CUDA guide",
            ha="center", va="bottom", fontsize=9, style="italic")

    # the two lower rows: what this build does, what chapter 03 writes
    y1, y2, h = 0.9, -0.55, 1.0
    ax.text(-0.1, y1 + h + 0.12, "what rung 02_wmma_smem's SASS does per call (counted on this build):",
            fontsize=9.5, weight="bold", ha="left", va="bottom")
    _box(ax, xm, y1, 3.1, h, f"load_matrix_sync(a): {per['ld']} x LD.E\n32-bit generic loads,\n128 B per "
              f"warp instr.\nload_matrix_sync(b):\n+ {per['movm']} x MOVM.16.MT88\n(8 x 8 transposes in registers)",
              fc="#fff4e0", fontsize=8)
    _box(ax, xm + 3.4, y1, 3.0, h, f"mma_sync:\n{per['hmma']} x HMMA.16816.F32.BF16\n"
              f"the hardware's m16n8k16,\none per 8 columns of C", fc="#fff4e0", fontsize=8)
    _box(ax, xm + 6.7, y1, 3.0, h, f"store_matrix_sync: {per['stg']} x STG.E.64\n"
              f"({el['acc']} fp32 per lane, 2 per store)", fc="#fff4e0", fontsize=8)
    _box(ax, xm + 10.0, y1, 3.3, h, f"per 16-deep step, one warp\n({per['warp_tile'][0]} x {per['warp_tile'][1]}"
              f" of C): {per['step_ld']} LD.E\n+ {per['step_movm']} MOVM for {per['step_hmma']} HMMA = "
              f"{(per['step_ld'] + per['step_movm']) / per['step_hmma']:g} loads\nand transposes per HMMA",
              fc="#fff4e0", fontsize=8)
    ax.text(-0.1, y2 + h + 0.12, "what chapter 03 writes by hand instead (PTX, documented lane maps):",
            fontsize=9.5, weight="bold", ha="left", va="bottom")
    _box(ax, xm, y2, 3.1, h, "ldmatrix.x4: one instruction,\nfour 8 x 8 b16 tiles = 512 B\n"
              "from shared; .trans transposes B\non the way in", fc="#e5f5e0", fontsize=8)
    _box(ax, xm + 3.4, y2, 3.0, h, "mma.sync.m16n8k16 x 2\nthe same HMMA, with the lane\nof every element "
              "in the ISA", fc="#e5f5e0", fontsize=8)
    _box(ax, xm + 6.7, y2, 3.0, h, "the epilogue stores registers\nwhose row and column the\nkernel can name",
              fc="#e5f5e0", fontsize=8)
    _box(ax, xm + 10.0, y2, 3.3, h, f"the same warp tile by hand:\n{per['step_ldsm']} ldmatrix.x4 for "
              f"{per['step_hmma']} HMMA\n= {per['step_ldsm'] / per['step_hmma']:g} per HMMA; and the kernel owns\n"
              "the layout (swizzle, ch. 04)", fc="#e5f5e0", fontsize=8)
    ax.set_xlim(-0.2, 13.5)
    ax.set_ylim(-0.75, 6.05)
    ax.axis("off")
    ax.set_title("What WMMA hides: fragments are opaque boxes of 32 lanes x registers; the SASS shows what fills them",
                 fontsize=10.5)
    return ax
