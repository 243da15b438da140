"""The two pictures of every chapter: the roofline and the TFLOP/s climb, plus a widget to explore them."""
from __future__ import annotations

import matplotlib

import numpy as np

from .compiler import intensity
from .registry import rung as _rung

# Each bandwidth roof is the measured probe of one data path, and a rung is drawn against the path it loads through:
# LDG and cp.async rungs against the LDG probe's L2 roof, TMA rungs against the TMA probe's (chapter 00 measures
# both; they differ, so one roof for all would put the TMA rungs above it).
ROOFS = {"hbm_copy": ("HBM", "tab:blue"), "l2_read": ("L2 -> SM by LDG/cp.async", "tab:cyan"),
         "tma_l2_gemm": ("L2 -> shared memory by TMA", "tab:olive"),
         "tma_multicast": ("L2 -> shared memory by TMA multicast, bytes landed", "tab:green")}
PATH_MARKER = {"l2_read": ("o", "loads by LDG/cp.async"), "tma_l2_gemm": ("s", "loads by TMA"),
               "tma_multicast": ("D", "loads by TMA multicast")}
# A peak's line style says what its probe fed the tensor cores: dashed on zero operands, dash-dot on random ones
# (power-limited), so the two lines of one instruction (the FP8 pair sits 4% apart) are told apart without colour.
PEAKS = {"ffma_peak": ("FFMA peak", "tab:orange", "--"), "hmma_peak": ("mma.sync peak", "tab:green", "--"),
         "hgmma_peak": ("wgmma peak, zero operands", "tab:pink", "--"),
         "hgmma_peak_random": ("wgmma peak, random operands (power-limited)", "tab:red", "-."),
         "qgmma_peak": ("FP8 wgmma peak, zero operands", "tab:purple", "--"),
         "qgmma_peak_random": ("FP8 wgmma peak, random operands (power-limited)", "tab:brown", "-.")}


def _numbers(rows) -> list:
    """The rows that carry a number: a NotMeasured line (a rung the recorded run predates) has no bar or dot."""
    return [r for r in rows if getattr(r, "has_number", True)]


def _source_note(items) -> str:
    """Where and when the plotted numbers were measured: the same words live and replayed (the banner says which),
    so a figure saved in the book stays true."""
    return "recorded on " + "; ".join(sorted({f"{x.gpu}, {x.date[:10]}" for x in items}))


def load_path(r) -> str:
    """The ceiling id of the L2 path a rung loads its operands through: TMA multicast to a 2-CTA cluster (bytes
    landed in both CTAs, as Nsight Compute counts them at the SMs), TMA, or LDG/cp.async."""
    if any(op.startswith("UTMALDG.2D.MULTICAST") for op in r.sass_has):
        return "tma_multicast"
    return "tma_l2_gemm" if r.operands.startswith("tensor_maps") else "l2_read"


def roofline(ceilings: dict, rows=(), ax=None, title: str = "Roofline"):
    """Bandwidth roofs (TB/s x FLOP/B) and compute peaks, with each row placed at its rung's intensity; a row's
    marker says which L2 path it loads through, so it is read against that path's roof. The axes span the rows and
    the roofs' bends near them (see _zoom), not every decade from a naive loop to the ridge."""
    import matplotlib.pyplot as plt
    ax = ax or plt.subplots(figsize=(9.2, 6.4))[1]  # the book's column: 9.4 in with padding
    rows = _numbers(rows)
    peak_max = max([c.value for cid, c in ceilings.items() if cid in PEAKS] or [1.0])
    (x0, x1), (y0, y1) = _zoom(ceilings, rows, peak_max)
    x = np.logspace(np.log10(x0), np.log10(x1), 200)
    for cid, (label, colour) in ROOFS.items():
        if cid in ceilings:
            bw = ceilings[cid].value
            ax.plot(x, np.minimum(bw * x, peak_max), color=colour, lw=1.5,
                    label=f"{label} {bw:.2f} TB/s x intensity")
    for cid, (label, colour, style) in PEAKS.items():
        if cid in ceilings:
            ax.axhline(ceilings[cid].value, color=colour, ls=style, lw=1.2,
                       label=f"{label} {ceilings[cid].value:.0f} TFLOP/s")
    paths, names = set(), []
    for row in rows:
        r = _rung(row.rung)
        ai, path = intensity(r), load_path(r)
        paths.add(path)
        ax.scatter([ai], [row.tflops], zorder=3, s=30, marker=PATH_MARKER[path][0])
        names.append(ax.annotate(row.rung, (ai, row.tflops), textcoords="offset points", xytext=(5, -3), fontsize=8,
                                 zorder=4))  # over the markers: a rung of the same intensity may sit on its name
    if len(paths) > 1 or paths - {"l2_read"}:  # a legend line per marker, so the reader knows which roof is whose
        for path in sorted(paths):
            ax.scatter([], [], marker=PATH_MARKER[path][0], color="grey", label=f"rung {PATH_MARKER[path][1]}")
    ax.set(xscale="log", yscale="log", xlim=(x0, x1), ylim=(y0, y1),
           xlabel="arithmetic intensity of global loads (FLOP/byte)",
           ylabel="TFLOP/s", title=f"{title}\n({_source_note([*ceilings.values(), *rows])})")
    ax.grid(True, which="both", alpha=0.25)
    from matplotlib.ticker import FuncFormatter
    plain = FuncFormatter(lambda v, _: f"{v:g}")  # 300, not 3 x 10^2: a zoomed axis shows few decades
    for axis, (lo, hi) in ((ax.xaxis, (x0, x1)), (ax.yaxis, (y0, y1))):
        axis.set_major_formatter(plain)
        few = np.log10(hi / lo) <= 2.5  # on a zoomed axis 2 and 5 of each decade are named too, or it shows one tick
        axis.set_minor_formatter(FuncFormatter(
            lambda v, _, few=few: f"{v:g}" if few and round(v / 10 ** np.floor(np.log10(v))) in (2, 5) else ""))
    _legend_below(ax)  # inside, it would cover the low rungs' points and names
    _spread(ax, names)
    above = above_hbm(ceilings, rows)
    if above:  # the reader's first question at such a point: how can a kernel beat the memory's roof?
        _note(ax, ABOVE_HBM_NOTE.format(n=len(above), s="" if len(above) == 1 else "s"), names)
    return ax


def _note(ax, text: str, names) -> None:
    """A boxed note in the first corner of the axes (lower right, upper left, lower left) where it covers no point
    and no rung's name."""
    renderer = ax.figure.canvas.get_renderer()
    points = [ax.transData.transform(xy) for c in ax.collections for xy in c.get_offsets()]
    taken = [n.get_window_extent(renderer) for n in names]
    note = ax.text(0, 0, text, transform=ax.transAxes, fontsize=8, zorder=5, multialignment="left",
                   bbox=dict(boxstyle="round,pad=0.4", fc="white", ec="0.7", lw=0.6))
    for x, y, ha, va in ((0.98, 0.03, "right", "bottom"), (0.02, 0.97, "left", "top"), (0.02, 0.03, "left", "bottom")):
        note.set(x=x, y=y, ha=ha, va=va)
        box = note.get_window_extent(renderer).padded(6)
        if not any(box.overlaps(t) for t in taken) and not any(box.contains(*p) for p in points):
            return


ABOVE_HBM_NOTE = ("{n} point{s} above the HBM roof: intensity here counts the bytes each CTA\n"
                  "loads from global memory; L2 serves the tiles that neighbouring CTAs\n"
                  "re-read, so HBM moves fewer bytes than that and its own intensity is higher.")


def above_hbm(ceilings: dict, rows) -> list[str]:
    """The rungs drawn above the HBM roof at their intensity (the note in the figure explains them)."""
    if "hbm_copy" not in ceilings:
        return []
    bw = ceilings["hbm_copy"].value
    return [row.rung for row in _numbers(rows) if row.tflops > bw * intensity(_rung(row.rung))]


def _zoom(ceilings: dict, rows, peak_max: float) -> tuple:
    """The roofline's limits: from a third of the lowest intensity to three times the highest (and past the ridge of
    every roof drawn, so each bend shows), from under the slowest point to above the highest peak. With no rows, the
    whole span from a naive loop (1/4 FLOP/B) to 1,000 FLOP/B. Twelve rungs of one tile at one intensity, drawn over
    4.5 decades, would sit in one corner with their names stacked into a column."""
    if not rows:
        return (10 ** -1.5, 1e3), (0.1, peak_max * 1.5)
    ai = [intensity(_rung(r.rung)) for r in rows]
    ridges = [peak_max / c.value for cid, c in ceilings.items() if cid in ROOFS]
    x0 = min(ai) / 3
    x1 = max([max(ai) * 3] + [r * 1.5 for r in ridges if r < max(ai) * 10])
    y0 = min([min(r.tflops for r in rows) / 2.5] + [c.value * x0 for cid, c in ceilings.items() if cid in ROOFS])
    return (x0, x1), (max(y0, 1e-3), peak_max * 1.25)


def _legend_below(ax, **kw) -> None:
    """The legend in two columns under the axes and their tick labels: beside them it would widen the figure past the
    book's column, inside them it would cover bars or points. Its offset is in inches below the axes, measured once:
    no layout engine may run on this figure (constrained layout would make room for the legend, move the axes, and
    with them the tick labels the offset was measured from, a little further at every draw). A figure of one Axes is
    fitted once (tight_layout) before the legend goes under it."""
    from matplotlib.transforms import ScaledTranslation
    fig = ax.figure
    if len(fig.axes) == 1:
        fig.tight_layout()
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    gap = (ax.get_window_extent(renderer).y0 - ax.get_tightbbox(renderer).y0) / fig.dpi + 0.05
    ax.legend(fontsize=8, ncols=2, loc="upper center", bbox_to_anchor=(0.5, 0), borderaxespad=0, frameon=False,
              bbox_transform=ax.transAxes + ScaledTranslation(0, -gap, fig.dpi_scale_trans), **kw)
    fig.draw_without_rendering()


def _spread(ax, labels) -> None:
    """Move point labels down, one under the other, until no two overlap: rungs of one tile share an intensity and
    differ by a few percent, so their names would otherwise print on top of each other. A stack that would leave the
    axes grows upwards instead, or in a further column to the left. A moved label keeps a thin line to its point."""
    if not labels:
        return
    renderer = ax.figure.canvas.get_renderer()
    to_points = 72 / ax.figure.dpi
    frame = ax.get_window_extent(renderer)
    placed = []
    for label in sorted(labels, key=lambda a: -a.get_window_extent(renderer).y0):  # top first, pushed down
        start = label.xyann
        width = label.get_window_extent(renderer).width * to_points + 6
        # down the column under the point; if the stack would leave the axes, up from the point; if that leaves them
        # too, the same in a column further left (a tall stack of rungs that share one intensity)
        for column in range(4):
            for step in (-1, 1):
                label.xyann = (start[0] - column * width, start[1])
                box = label.get_window_extent(renderer)
                while any(box.overlaps(other) for other in placed):
                    label.xyann = (label.xyann[0], label.xyann[1] + step * (box.height + 2) * to_points)
                    box = label.get_window_extent(renderer)
                if frame.y0 <= box.y0 and box.y1 <= frame.y1:
                    break
            else:
                continue
            break
        if label.xyann != start:
            ax.annotate("", label.xy, xytext=label.xyann, textcoords="offset points",
                        arrowprops=dict(arrowstyle="-", color="0.6", lw=0.6, shrinkA=0, shrinkB=3))
        placed.append(box)


def climb(rows, ceilings: dict | None = None, ax=None, title: str = "The climb"):
    """TFLOP/s per rung as bars (one per size) on a linear axis fitted to the bars, so a step from 54% to 99% of
    cuBLAS looks like one (a log axis, there for the FP32 rungs, flattened it). Each bar carries its own cuBLAS, a
    black tick at the rate of the strongest cuBLAS for that row's dtype, layout and size in the same run (not a
    median over rungs), and its ratio to it written level above the group, one line per size in the bar's colour.
    Peaks far above the bars are left out and named in a note (they would squash the bars into the floor)."""
    import matplotlib.pyplot as plt
    rows = _numbers(rows)
    names = list(dict.fromkeys(r.rung for r in rows))
    sizes = sorted({r.n for r in rows})
    bars = len(names) * max(1, len(sizes))
    # about 14 px a bar at 100 dpi, up to the book's column (9.4 in with padding)
    ax = ax or plt.subplots(figsize=(min(9.2, max(7.5, 0.2 * bars + 3.0)), 6))[1]
    width = 0.8 / len(sizes)
    colours = {}
    for j, n in enumerate(sizes):
        at = {r.rung: r for r in rows if r.n == n}
        xs = [i + (j - (len(sizes) - 1) / 2) * width for i, name in enumerate(names) if name in at]
        picked = [at[name] for name in names if name in at]
        colours[n] = ax.bar(xs, [r.tflops for r in picked], width=width, label=f"N={n}").patches[0].get_facecolor()
        ax.scatter(xs, [r.cublas_tflops for r in picked], marker="_", s=(72 * width * 0.9) ** 2 / 4, color="black",
                   zorder=3, linewidths=1.5, label="cuBLAS for that bar (same dtype, layout, size, run)" if j == 0
                   else None)
    top = max([r.tflops for r in rows] + [r.cublas_tflops for r in rows])
    peaks = [(cid, c.value) for cid, c in (ceilings or {}).items() if cid in PEAKS]
    shown = [(cid, v) for cid, v in peaks if v <= top * 1.6]
    for cid, value in shown:
        label, colour, style = PEAKS[cid]
        ax.axhline(value, color=colour, ls=style, lw=1.4, label=f"{label.replace(' (power-limited)', '')} (probe), "
                   f"{value:.0f} TFLOP/s")
    lines = len(sizes)
    annots = []
    for i, name in enumerate(names):  # the ratios of a rung, level, stacked over its group: first size lowest
        mine = sorted((r for r in rows if r.rung == name), key=lambda r: r.n)
        base = max(max(r.tflops, r.cublas_tflops) for r in mine)
        # a ratio just under 1 keeps a decimal: "100%" would claim parity that was not measured
        annots.append([ax.annotate(f"{r.ratio:.1%}" if 0.995 <= r.ratio < 1 else f"{r.ratio:.0%}", (i, base),
                                   textcoords="offset points", xytext=(0, 4 + 10 * k), ha="center", va="bottom",
                                   fontsize=8, color=_darker(colours[r.n]) if lines > 1 else "black")
                       for k, r in enumerate(mine)])
    ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(names) - 0.4)
    # room above the tallest group for its ratios (about 12 pt a line on an axis some 300 pt tall) and the peaks
    ax.set_ylim(0, max([top * (1.06 + 0.045 * lines)] + [v * 1.05 for _, v in shown]))
    off = [f"{PEAKS[cid][0]} {v:.0f}" for cid, v in peaks if (cid, v) not in shown]
    if off:
        ax.text(0.01, 0.99, "above this axis: " + "; ".join(off), transform=ax.transAxes, ha="left", va="top",
                fontsize=8, color="0.3")
    ax.set(ylabel="TFLOP/s; above each rung: % of its cuBLAS", title=f"{title}\n({_source_note(rows)})")
    ax.grid(True, axis="y", which="major", alpha=0.25)
    # the bars and their cuBLAS first, then the peaks in PEAKS order (FP32, mma.sync, then each wgmma pair together):
    # the default order puts the bars last, after lines a reader must skip
    handles, labels = ax.get_legend_handles_labels()
    first = [i for i, label in enumerate(labels) if label.startswith(("N=", "cuBLAS"))]
    order = sorted(first, key=lambda i: not labels[i].startswith("N=")) + \
        [i for i in range(len(labels)) if i not in first]
    _legend_below(ax, handles=[handles[i] for i in order], labels=[labels[i] for i in order],
                  handlelength=3.5)  # long enough for the cuBLAS tick, which is as wide as a bar
    _stagger(ax, annots, top * (1.06 + 0.045 * lines + 0.065 * lines), 14 * lines)
    return ax


def _stagger(ax, groups: list, room: float, block: float) -> None:
    """Where two neighbouring groups' labels print over each other once the figure is laid out (narrow groups, wide
    labels such as "99.8%"), every other group's go `block` points higher, and the axis rises to `room` to hold them."""
    renderer = ax.figure.canvas.get_renderer()
    boxes = [[a.get_window_extent(renderer) for a in group] for group in groups]
    if not any(a.overlaps(b) for left, right in zip(boxes, boxes[1:]) for a in left for b in right):
        return
    for group in groups[1::2]:
        for a in group:
            a.xyann = (a.xyann[0], a.xyann[1] + block)
    ax.set_ylim(0, max(ax.get_ylim()[1], room))
    ax.figure.draw_without_rendering()


def _darker(colour) -> tuple:
    """A bar's colour darkened for text: the pale default orange is hard to read at 8 pt."""
    from matplotlib.colors import to_rgb
    return tuple(0.7 * c for c in to_rgb(colour))


def reference_kind(row) -> str:
    """The cuBLAS a row is measured against, in words: its input dtype, output dtype and layout, as the row's
    `cublas_ref` names them ("bf16 in, fp32 out, TN"); a row recorded without that text, from its rung's registry."""
    import re
    found = re.search(r"\(([^(),;]+ in, [^(),;]+ out, [NT]{2})\b", row.cublas_ref or "")
    if found:
        return found.group(1)
    from .cublas import layout_name
    r = _rung(row.rung)
    return f"{r.dtype} in, {r.out_dtype} out, {layout_name(r.b_layout)}"


def sweep(rows, ax=None, title: str = "TFLOP/s against N"):
    """One line per rung over square sizes N, and cuBLAS as the rungs are measured against it: one dashed line per
    kind of reference (input dtype, output dtype, layout; see reference_kind), in the colour of the rung(s) measured
    against it. A median over every rung's cuBLAS would mix baselines (an fp32-C NN cuBLAS is not a bf16-C TN one),
    and a rung at 99% of its own cuBLAS could then be drawn above "cuBLAS"."""
    import matplotlib.pyplot as plt
    rows = [r for r in _numbers(rows) if r.m == r.n == r.k]
    # tall enough that the references, a few percent apart near the top, are told apart; within the book's column
    ax = ax or plt.subplots(figsize=(8.5, 5.4))[1]
    colour, groups = {}, {}
    for name in dict.fromkeys(r.rung for r in rows):
        mine = sorted((r.n, r.tflops) for r in rows if r.rung == name)
        colour[name] = ax.plot(*zip(*mine), marker="o", label=name)[0].get_color()
    for r in rows:
        groups.setdefault(reference_kind(r), []).append(r)
    for kind, members in groups.items():
        names = list(dict.fromkeys(r.rung for r in members))
        sizes = sorted({r.n for r in members})
        # the rows of one kind at one size share one baseline when they come from one run; rows of different runs
        # may not, and then the line takes the strongest of them (each rung's own ratio stays against its own)
        ref = [max(r.cublas_tflops for r in members if r.n == n) for n in sizes]
        whose = " and ".join(f"{name}'s" for name in names)
        ax.plot(sizes, ref, color=colour[names[0]], ls="--", lw=1.2, marker="s", ms=4, alpha=0.85,
                zorder=1.9, label=f"cuBLAS, {kind} ({whose} reference)")
    sizes = sorted({r.n for r in rows})
    ax.set(xscale="log", xlabel="N (square N x N x N)", ylabel="TFLOP/s", title=f"{title}\n({_source_note(rows)})")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_ylim(0, max([r.cublas_tflops for r in rows] + [r.tflops for r in rows]) * 1.1)
    ax.grid(True, alpha=0.25)
    # under the axes, rungs in the first column and their references in the second, row by row: inside, six long
    # labels would cover the lines
    _legend_below(ax)
    return ax


def save_climb(rows, ceilings, path) -> None:
    from pathlib import Path
    import matplotlib.pyplot as plt
    matplotlib.use("Agg", force=False)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    ax = climb(rows, ceilings)
    ax.figure.savefig(path, dpi=120, bbox_inches="tight")  # the legend sits outside the axes
    plt.close(ax.figure)


def explore_ladder(rows, ceilings: dict):
    """Widgets: pick N and the rungs; the climb and the roofline for them are drawn at once (the first state is what
    the built book and a notebook opened without a kernel show) and redrawn under the controls when they change."""
    import ipywidgets as w
    from .explore import explorer
    rows = list(rows)
    sizes = sorted({r.n for r in rows})
    names = list(dict.fromkeys(r.rung for r in rows))

    def draw(n, rungs):
        import matplotlib.pyplot as plt
        chosen = [r for r in rows if r.n == n and r.rung in rungs]
        missing = [name for name in rungs if name not in {r.rung for r in chosen}]
        if missing:  # say so rather than draw fewer bars than were asked for
            print(f"not measured at N={n}: {', '.join(missing)}")
        if not chosen:
            return "pick at least one rung"
        # one above the other: side by side, two legible panels are wider than the book's column
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(9.2, 12), gridspec_kw={"hspace": 0.75})
        climb(chosen, ceilings, ax=a1)
        roofline(ceilings, chosen, ax=a2)
        return fig

    return explorer(draw, n=w.Dropdown(options=sizes, value=sizes[0], description="N"),
                    rungs=w.SelectMultiple(options=names, value=tuple(names), description="rungs",
                                           rows=min(8, len(names))))
