"""Chapter 04 (swizzle): fig_ktile_wavefronts, fig_phase_on_banks, fig_swizzle_permutation, fig_padding_bytes."""
from __future__ import annotations

import numpy as np

from ..compiler import build
from ..hardware import BANK_BYTES, CHUNK, SLOTS, SMEM_BANKS, TENSOR_FLOP_PER_CLK, WAVEFRONT_BYTES
from ..models import conflict_degree, ldmatrix_addresses, offset, wavefronts
from .common import BF16, axes, clean

PAD = 8               # the padded layout's spare bf16 per row (models.offset): 16 bytes 


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
    ax = axes(ax, (11.7, 9.6))        # wider blocks for the 8 pt labels; tight width stays under 948 px
    y = 0.0
    gap = 2.6
    for operand, layout in cases:
        rows, cols = tiles[operand]
        addrs = ldmatrix_addresses(operand, layout, tiles[operand])[8 * phase: 8 * phase + 8]
        fronts = wavefronts(addrs)
        # the bank row
        for b in range(SMEM_BANKS):
            ax.add_patch(Rectangle((b, y), 1, 0.8, facecolor="0.93", edgecolor="0.6", lw=0.6))
        for s in range(SLOTS + 1):
            ax.plot([s * 4, s * 4], [y - 0.15, y + 0.95], color="black", lw=1.4)
        for s in range(SLOTS):
            ax.text(s * 4 + 2, y + 0.4, f"slot {s}", ha="center", va="center", fontsize=8, color="0.35")
        # the 8 requests, stacked over their slot
        height = {}
        for i, a in enumerate(addrs):
            bank = a // BANK_BYTES % SMEM_BANKS
            level = height.get(bank, 0)
            height[bank] = level + 1
            r = phase % 2 * 8 + i     # the row this lane names (lanes 8p..8p+7 -> rows; see ldmatrix_addresses)
            yy = y + 1.0 + level * 0.78
            ax.add_patch(Rectangle((bank + 0.06, yy), 3.88, 0.7, facecolor=colours[i], alpha=0.8,
                                   edgecolor="white"))
            lum = 0.299 * colours[i][0] + 0.587 * colours[i][1] + 0.114 * colours[i][2]
            ax.text(bank + 2, yy + 0.35, f"row {r}: byte {a}", ha="center", va="center", fontsize=8,
                    color="black" if lum > 0.5 else "white")
        top = y + 1.0 + max(height.values()) * 0.78
        row_bytes = cols * BF16
        what = {"row-major": f"row-major, rows {row_bytes} B apart", "swizzled": "XOR-swizzled (rung 04)"}[layout]
        ax.text(-0.5, top + 0.35, f"{operand} tile {rows} x {cols} bf16, {what}:  {fronts} wavefront"
                f"{'s' if fronts > 1 else ''}, {fronts} clock{'s' if fronts > 1 else ''} of the banks for "
                f"{8 * CHUNK} bytes",
                fontsize=9.5, ha="left", va="center", fontweight="bold")
        y = top + gap
    ax.set_xlim(-0.6, SMEM_BANKS + 0.6)
    ax.set_ylim(-1.4, y - gap + 1.2)
    ax.set_xticks(np.arange(0, SMEM_BANKS, 4) + 0.5, [f"bank {b}" for b in range(0, SMEM_BANKS, 4)], fontsize=8)
    ax.set_yticks([])
    ax.set_xlabel(f"the {SMEM_BANKS} banks of shared memory, {BANK_BYTES} bytes each: one wavefront serves one 4-byte "
                  f"word per bank ({WAVEFRONT_BYTES} B)", fontsize=9)
    clean(ax, ("top", "right", "left"))
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
    ax = axes(ax, (11.0, 6.6))       # tight width under the 948 px column
    x0 = 0.0
    for operand in ("A", "B"):
        rows, cols = tiles[operand]
        t = _swizzle_table(operand, tiles[operand])
        chunks = t.shape[1]
        row_bytes = cols * BF16
        per_line = max(1, WAVEFRONT_BYTES // row_bytes)          # rows sharing one 128-byte line
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
    clean(ax, ("top", "right", "bottom", "left"))
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
    ax = axes(ax, (10.6, 3.9))
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
    clean(ax)
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
    stores = (tiles["A"][0] * tiles["A"][1] + tiles["B"][0] * tiles["B"][1]) * BF16 // WAVEFRONT_BYTES
    flop = 2 * c["BM"] * c["BN"] * c["BK"]
    return {"ldmatrix_a": ld_a, "ldmatrix_b": ld_b, "fronts_a": int(fa), "fronts_b": int(fb), "stores": stores,
            "flop": flop, "total": int(fa + fb) + stores}


def fig_ktile_wavefronts(ax=None):
    """Napkin from constants: cycles of the shared-memory pipe (one wavefront per clock per SM) that one block needs
    per k tile, rung 03 (row-major) against rung 04 (swizzled), next to the tensor cores' time for the same k tile at
    the datasheet's dense BF16 rate (a floor: mma.sync's own ceiling is lower). One block per SM in both rungs."""
    ax = axes(ax, (10.8, 3.8))
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
    ax.set_xlabel(f"SM clocks per k tile of one block (napkin: 1 wavefront of {WAVEFRONT_BYTES} B per clock; counts "
                  "from the kernels' constants and the explorer; nothing measured)", fontsize=9)
    clean(ax)
    ax.set_title("Napkin: shared-memory work per k tile, before and after the swizzle", fontsize=10.5)
    return ax
