"""Chapter 08 (warp specialization): fig_stage_clocks, fig_ring, fig_parities, fig_ring_bytes."""
from __future__ import annotations

from ..compiler import build
from ..hardware import KIB, SMEM_BYTES_PER_CLK, TENSOR_FLOP_PER_CLK
from ..models import ring_parities
from .common import A_COLOUR, B_COLOUR, CONSUMER, PRODUCER, axes

FULL, EMPTY = "tab:green", "tab:purple"   # the two barriers of a ring slot, in every figure of the chapter


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
    ax = axes(ax, (12.0, 5.1))   # equal aspect: the height sets the drawing's width, about 9.3 in
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
    # Boxes sized for their 8-9 pt text at the width the book shows the figure (about 0.44 in per unit).
    box(1.4, 6.3, 5.2, 1.0, "producer warpgroup\n(one thread issues every copy)", PRODUCER, weight="bold")
    box(1.4, -0.2, 5.2, 1.0, f"{cons} consumer warpgroups\n({128 * cons} threads, wgmma only)", CONSUMER,
        weight="bold")
    box(3.0, 2.6, 2.0, 2.0, f"slot s\nA [{c['BM']}, {c['BK']}]\nB [{c['BN']}, {c['BK']}]\n{tx // KIB} KiB", "gray",
        fs=8)
    box(6.5, 3.05, 1.8, 1.1, f"full[s]\ninit count 1\n+ {tx:,} B", FULL, fs=8)
    box(-0.3, 3.05, 1.8, 1.1, f"empty[s]\ninit count {cons}", EMPTY, fs=8)
    arrow((2.4, 6.3), (0.6, 4.2), EMPTY, dashed=True, rad=0.2)
    label(0.45, 5.55, "1. wait empty[s]\nparity (lap & 1) ^ 1", EMPTY)
    arrow((5.6, 6.3), (7.4, 4.2), FULL, rad=-0.2)
    label(7.45, 5.55, f"2. arrive.expect_tx\n({tx:,} B): 1 arrival", FULL)
    arrow((4.0, 6.3), (4.0, 4.65), "gray")
    label(4.0, 5.45, f"3. two TMA boxes, {tx // 2 // KIB} KiB each", "dimgray")
    arrow((5.0, 3.6), (6.5, 3.6), FULL)
    label(5.75, 3.1, "bytes\nland", FULL)
    arrow((5.6, 0.8), (7.4, 3.0), FULL, dashed=True, rad=0.2)
    label(7.45, 1.65, "4. every consumer thread\nwaits full[s], parity lap & 1", FULL)
    arrow((4.0, 2.6), (4.0, 0.85), "gray")
    label(4.0, 1.7, "5. wgmma reads the slot", "dimgray")
    arrow((2.4, 0.8), (0.6, 3.0), EMPTY, rad=-0.2)
    label(0.45, 1.65, "6. after wait_group,\nthread 0 of each\nconsumer arrives", EMPTY)
    ax.text(4.0, -0.75, "solid: arrives or writes    dashed: waits", ha="center", fontsize=8, color="dimgray")

    # --- right: the ring just after the consumers issued tile kt ----------------------------------------------
    x0, w, gap = 9.6, 1.3, 0.15
    mid = x0 + S * (w + gap) / 2
    ax.text(mid, 7.5, f"the ring of {S} slots just after the consumers issued tile {kt}", ha="center",
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
            colour, state = PRODUCER, "copy in\nflight or\nlanded"
        x = x0 + s * (w + gap)
        box(x, 2.4, w, 2.1, f"slot {s}\n\ntile {t}\nlap {t // S}", colour, fs=8.5, alpha=0.22)
        ax.text(x + w / 2, 2.2, state, ha="center", va="top", fontsize=8)
        ax.text(x + w / 2, 4.75, f"full\nparity {(t // S) & 1}", ha="center", fontsize=8, color="dimgray")
    nxt = kt - 1 + S
    xs = x0 + ((kt - 1) % S) * (w + gap) + w / 2
    arrow((xs, 6.5), (xs, 5.45), EMPTY, dashed=True)
    ax.text(xs - 0.4, 6.75, f"the producer waits on empty[{(kt - 1) % S}] (parity {((nxt // S) & 1) ^ 1}) to load "
            f"tile {nxt} there", fontsize=8.5, color=EMPTY, ha="left")
    ax.text(mid, 1.1, f"once tile {kt - 1} is released the producer may run\n{_in_flight(c)} tiles ahead of the "
            f"running group:\n{_in_flight(c)} x {tx // KIB} KiB = {_in_flight(c) * tx // KIB} KiB in flight",
            ha="center", va="top", fontsize=9)
    ax.set(xlim=(-0.7, x0 + S * (w + gap) + 0.1), ylim=(-1.0, 7.9))
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def fig_parities(ax=None, laps: int = 3):
    """Which parity each side passes to mbarrier.try_wait.parity at every k tile, over `laps` laps of the ring
    (from helpers.models.ring_parities). The consumers wait on full[s] for the phase of their lap; the producer waits
    on empty[s] for the phase before it, which a fresh barrier counts as complete, so lap 0 never waits and no
    initial arrivals are needed (rungs 08 to 10)."""
    c = _consts("08_warp_specialized")
    S = c["STAGES"]
    steps = ring_parities(S, laps * S)
    ax = axes(ax, (9.3, 4.2))
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
    ax.text(S / 2, 0.5, "passes at once: a fresh empty[s]\nis in phase 0, so the odd phase\nbefore it counts as complete",
            ha="center", va="center", fontsize=8, color=EMPTY)
    for lap in range(laps):
        lo = lap * S
        if lap % 2:
            ax.axvspan(lo, lo + S, color="0.93", zorder=0)
        wanted = ("empty phase -1: nothing to wait for" if lap == 0
                  else f"empty phase {lap - 1}: tile kt - {S} released")
        ax.text(lo + S / 2, 4.65, f"lap {lap}: tiles {lo}-{lo + S - 1}", ha="center", fontsize=9, weight="bold")
        ax.text(lo + S / 2, 4.2, f"full phase {lap}: tile kt landed", ha="center", fontsize=8, color=FULL)
        ax.text(lo + S / 2, 3.8, wanted, ha="center", fontsize=8, color=EMPTY)
    ax.set_xticks([k + 0.5 for k in range(laps * S)])
    ax.set_xticklabels([f"{r['it']}\ns{r['slot']}" for r in steps], fontsize=8)
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
    ax = axes(ax, (9.6, 3.4))
    rows = [("07_tma", c7), ("08_warp_specialized", c8)]
    for y, (name, c) in enumerate(rows):
        a, b = c["A_TILE"] * 2 / KIB, c["B_TILE"] * 2 / KIB
        left = 0.0
        for s in range(c["STAGES"]):
            hatch = "//" if s == 0 else None
            ax.barh(y, a, left=left, color=A_COLOUR, edgecolor="white", hatch=hatch, height=0.55)
            ax.barh(y, b, left=left + a, color=B_COLOUR, edgecolor="white", hatch=hatch, height=0.55)
            ax.text(left + (a + b) / 2, y - 0.36, f"s{s}", ha="center", fontsize=8, color="dimgray")
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
              fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.22), ncol=4, frameon=False)
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)
    return ax


def fig_stage_clocks(ax=None):
    """The napkin per k tile of one block, in SM clocks: the tensor cores at their peak rate, the shared-memory
    banks carrying every wgmma operand read plus the TMA's writes, and the bytes per clock L2 would have to deliver
    to keep the tensor cores at peak."""
    ax = axes(ax, (9.4, 3.4))    # the shared-memory note wraps onto two lines to keep the figure in the column
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
                fontsize=8, color="white")
        ax.text(r_clk + w_clk / 2, y + 0.2, f"TMA {st['landed'] // KIB} KiB", ha="center", va="center",
                fontsize=8, color="white")
        cap = min(1.0, math / (r_clk + w_clk))
        ax.text(r_clk + w_clk + 15, y + 0.2, f"shared memory: {r_clk + w_clk:.0f} clk -> at most {cap:.0%} "
                f"of peak;\npeak needs {st['landed'] / math:.0f} B/clk from L2", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{n}\n{c['BM']} x {c['BN']} x {c['BK']}" for n, c in rows], fontsize=9)
    ax.set(xlim=(0, 2000), ylim=(len(rows) - 0.4, -0.6),
           xlabel=f"SM clocks per k tile ({TENSOR_FLOP_PER_CLK} FLOP/clk tensor peak, "
                  f"{SMEM_BYTES_PER_CLK} B/clk shared memory)")
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)
    return ax
