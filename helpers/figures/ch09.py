"""Chapter 09 (setmaxnreg): fig_tile_intensity, fig_register_pool, fig_pool_ledger, fig_consumer_registers,
fig_wide_registers."""
from __future__ import annotations

import re

from ..compiler import build
from ..hardware import KIB, MAX_REGS_PER_THREAD, REGISTER_FILE, TENSOR_FLOP_PER_CLK, WARP, WARPGROUP
from ..models import launch_registers, register_budget
from .common import A_COLOUR, B_COLOUR, CONSUMER, PRODUCER, axes, clean

# One colour per role in every figure of the chapter: these two beside common's PRODUCER, CONSUMER, A_COLOUR and
# B_COLOUR, which chapter 08 uses too.
CONSUMER_2, C_COLOUR = "tab:orange", "tab:pink"


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
    ax = axes(ax, (11.0, 5.4))
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
                fontsize=8, rotation=90)
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
    ax = axes(ax, (11.0, 5.6))
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
    clean(ax)
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
    ax = axes(ax, (10.8, 4.8))
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
    ax.set_xlabel("warp events in one possible order (P = producer warps 0-3, C0 / C1 = the consumer warpgroups);\n"
                  "every warp starts with its launch share, so the pool starts empty", fontsize=8.5)
    ax.legend(loc="upper right", fontsize=8.5, frameon=False, bbox_to_anchor=(1.0, 0.80))
    clean(ax)
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
    from ..registry import rung
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
    ax = axes(ax, (9.1, 5.0))    # two-line labels keep it inside the book's column
    h = 0.55
    rows = [
        (f"rung 09 consumer thread\n(cap {c9['CONSUMER_REGS']} after setmaxnreg.inc)", c9["CONSUMER_REGS"],
         [(0, m9["acc_base"], "0.55", f"R0-R{m9['acc_base'] - 1}: {m9['acc_base']} for addresses, descriptors, loop state, barrier "
                                               f"addresses"),
          (m9["acc_base"], m9["acc"], CONSUMER,
           f"R{m9['acc_base']}-R{m9['acc_base'] + m9['acc'] - 1}: {m9['acc']} fp32 accumulators\n(64 x "
           f"{c9['WGMMA_N']} / 128 threads)")]),
        (f"rung 09 producer thread\n(cap {c9['PRODUCER_REGS']} after setmaxnreg.dec)", c9["PRODUCER_REGS"],
         [(0, m9["producer"], PRODUCER, f"R0-R{m9['producer'] - 1}: one thread's copy loop")]),
        ("rung 09 without setmaxnreg\n(ptxas, whole kernel)", start,
         [(0, bare_regs, "0.35", f"{bare_regs} registers, {bare_spills} bytes spilled: it fits the launch cap too")]),
        (f"rung 08 consumer thread\n(no setmaxnreg, cap {launch_registers(c8['THREADS'])})",
         launch_registers(c8["THREADS"]),
         [(0, m8["acc_base"], "0.55", ""),
          (m8["acc_base"], m8["acc"], CONSUMER, f"{m8['acc']} accumulators\n(64 x {c8['WGMMA_N']} / 128)")]),
    ]
    for y, (label, cap, segs) in enumerate(rows):
        for left, width, colour, text in segs:
            ax.barh(y, width, left=left, height=h, color=colour, alpha=0.85, edgecolor="white")
            if not text:
                continue
            if width > 60:
                ax.text(left + width / 2, y, text, va="center", ha="center", fontsize=8, color="white")
            elif left == 0 and len(segs) > 1:           # the non-accumulator registers: labelled under the bar
                ax.text(0.5, y + h / 2 + 0.04, text, va="top", ha="left", fontsize=8, color="0.25")
            else:                                       # a short bar: labelled past its cap
                ax.text(cap + 3, y, text, va="center", ha="left", fontsize=8)
        used = sum(w for _, w, _, _ in segs)
        ax.barh(y, cap - used, left=used, height=h, facecolor="none", edgecolor="0.6", hatch="..", lw=0.6)
        ax.plot([cap, cap], [y - h / 2 - 0.08, y + h / 2 + 0.08], color="black", lw=2)
        ax.text(cap + 2, y - h / 2 - 0.02, f"{cap - used} spare", fontsize=8, va="bottom", color="0.3")
    for x, text, colour in ((c9["PRODUCER_REGS"], "24: the smallest setmaxnreg value", PRODUCER),
                            (start, f"{start}: the launch cap ({REGISTER_FILE:,} / {c9['THREADS']}, down to 8)",
                             "black"),
                            (c9["CONSUMER_REGS"], f"{c9['CONSUMER_REGS']}", CONSUMER)):
        ax.axvline(x, color=colour, lw=0.8, ls=":", zorder=0)
    ax.text(start + 1, -0.62, f"launch cap {start}", fontsize=8, ha="center", va="bottom")
    ax.text(c9["CONSUMER_REGS"], -0.62, f"{c9['CONSUMER_REGS']}", fontsize=8, ha="center", va="bottom",
            color=CONSUMER)
    ax.text(c9["PRODUCER_REGS"], -0.62, f"{c9['PRODUCER_REGS']}", fontsize=8, ha="center", va="bottom",
            color=PRODUCER)
    return _register_axis(ax, [r[0] for r in rows], len(rows) - 0.45,
                          "registers per thread: R0 up to the highest one the SASS names (row 3: as ptxas reports "
                          "it);\nhatched: allowed but unused; thick tick: the cap",
                          "What a thread actually holds: 128 accumulators plus about two dozen others")


def _register_axis(ax, labels: list, bottom: float, xlabel: str, title: str):
    """The register-index axis the chapter's two register figures share: one labelled row per thread, R0 to R255."""
    ax.set_yticks(range(len(labels)), labels, fontsize=8.5)
    ax.set_ylim(bottom, -0.85)
    ax.set_xlim(0, MAX_REGS_PER_THREAD + 1)
    ax.set_xticks([0, 32, 64, 96, 128, 160, 192, 224, 255])
    ax.set_xlabel(xlabel, fontsize=8.5)
    clean(ax)
    ax.set_title(title, fontsize=10)
    return ax


def fig_wide_registers(ax=None):
    """The 128 x 320 tile's consumer thread, per register index: with the 24 / 240 split (09_wide) what its SASS
    touches, accumulators and the rest, under its cap; without it (09_wide_spill) the same 160 accumulators against
    the launch cap, and what ptxas does about the shortfall (spill bytes and the local-memory instructions of one k
    tile, from the build). Rung 09's consumer above them for scale."""
    from ..registry import rung
    c9, cw = build("09_setmaxnreg").consts, build("09_wide").consts
    m9, mw = _register_map("09_setmaxnreg"), _register_map("09_wide")
    spill = build("09_wide_spill")
    res = spill.resources[rung("09_wide_spill").entry]
    sass = spill.sass().splitlines()
    mma = [i for i, line in enumerate(sass) if "HGMMA" in line]
    local = sum(("STL" in line or "LDL" in line) for line in sass[mma[0]:mma[-1] + 1])
    start = launch_registers(cw["THREADS"])
    need = mw["consumer"]
    assert mw["acc"] == 160 and start < need <= cw["CONSUMER_REGS"] and res.spill_stores > 0
    ax = axes(ax, (9.1, 3.8))
    h = 0.55
    rows = [
        (f"rung 09, 128 x 256\n(cap {c9['CONSUMER_REGS']})", c9["CONSUMER_REGS"], m9, None),
        (f"09_wide, 128 x 320\n(cap {cw['CONSUMER_REGS']} after setmaxnreg.inc)", cw["CONSUMER_REGS"], mw, None),
        (f"09_wide_spill, 128 x 320\n(no setmaxnreg: cap {start})", start, mw, res),
    ]
    for y, (label, cap, m, spilled) in enumerate(rows):
        ax.barh(y, m["acc_base"], height=h, color="0.55", alpha=0.85, edgecolor="white")
        ax.barh(y, m["acc"], left=m["acc_base"], height=h, color=CONSUMER, alpha=0.85, edgecolor="white")
        ax.text(m["acc_base"] + min(m["acc"], cap - m["acc_base"]) / 2, y, f"{m['acc']} accumulators", va="center",
                ha="center", fontsize=8, color="white")
        top = m["acc_base"] + m["acc"]
        if spilled is None:
            ax.barh(y, cap - top, left=top, height=h, facecolor="none", edgecolor="0.6", hatch="..", lw=0.6)
            ax.text(cap + 2, y, f"{cap - top} spare", fontsize=8, va="center", color="0.3")
        else:  # past the cap: what cannot live in registers, and what ptxas does instead (under the bar)
            ax.barh(y, top - cap, left=cap, height=h, facecolor="none", edgecolor="black", hatch="xx", lw=0.8)
            ax.text(0.5, y + h / 2 + 0.05, f"needs {top}, has {cap}: ptxas spills {spilled.spill_stores:,} B and "
                                           f"reloads {spilled.spill_loads:,} B per thread,\nand runs {local} local "
                                           f"loads and stores in each k tile", fontsize=8, va="top", ha="left",
                    color="0.15")
        ax.plot([cap, cap], [y - h / 2 - 0.08, y + h / 2 + 0.08], color="black", lw=2)
    ax.axvline(start, color="black", lw=0.8, ls=":", zorder=0)
    ax.text(start, -0.62, f"launch cap {start}", fontsize=8, ha="center", va="bottom")
    return _register_axis(ax, [r[0] for r in rows], len(rows) + 0.1,
                          "registers per consumer thread, R0 up to the highest its SASS names (grey: addresses, "
                          "descriptors, loop state);\ndotted: allowed but unused; crossed: past the cap; thick tick: "
                          "the cap", "160 accumulators fit under 240, not under 168")
