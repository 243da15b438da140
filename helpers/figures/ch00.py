"""Chapter 00 (the machine): fig_read_paths, fig_memory_roofs. Both draw the ceilings recorded in the results file
(recorded_ceilings(); the TMA working-set curve from tma_l2_gemm's recorded detail), never a live measurement, so
the chapter's pictures say what its tables print."""
from __future__ import annotations

from ..hardware import MEMORY
from ..store import NotRecorded
from .common import clean

# The load paths of the alike sweep (helpers.probes.READ_PATHS): name shown, colour, marker.
PATHS = {"ldg": ("LDG (.cg) into registers", "tab:blue", "o"),
         "cp_async": ("cp.async.cg (16 B) into shared memory", "tab:orange", "s"),
         "tma": ("TMA into shared memory", "tab:green", "^")}
OLD_SHARE = {"l2_read": 0.40, "tma_l2_read": 0.40, "tma_l2_gemm": 0.05}  # the old probes' working sets, share of L2


def _ceilings(needed) -> dict:
    """The recorded ceilings, or one sentence naming what the results file lacks."""
    from ..ceilings import recorded_ceilings
    ceil = recorded_ceilings()
    missing = [cid for cid in needed if cid not in ceil]
    if missing:
        raise NotRecorded(f"The results file records no {', '.join(missing)}, so it cannot be drawn; run chapter 00's "
                          f"probes on a Hopper GPU.")
    return ceil


def _alike(ceil) -> dict[str, dict[float, float]]:
    """{path: {working set in MB: TB/s}} of the alike sweep, each CTA its own slice (read_<path>@<set>)."""
    got: dict[str, dict[float, float]] = {p: {} for p in PATHS}
    for cid, c in ceil.items():
        path, _, name = cid.removeprefix("read_").partition("@")
        if cid.startswith("read_") and path in PATHS and name:
            got[path][float(name.removesuffix("MB"))] = c.value
    return {p: dict(sorted(v.items())) for p, v in got.items()}


def _tma_curve() -> dict[float, float]:
    """tma_l2_gemm's recorded curve, {working set in MB: TB/s}: TMA in probe_tma_l2's walk, CTAs sharing boxes."""
    from ..ladder import recorded_entry
    detail = recorded_entry("ceilings", "tma_l2_gemm").get("detail") or {}
    return dict(sorted((float(k.removesuffix(" MB")), v) for k, v in detail.items()))


def fig_read_paths(ax=None):
    """TB/s from L2 against the working set: LDG, cp.async and TMA measured alike (each CTA its own slice, each at
    the best of its schedules), beside TMA in probe_tma_l2's walk, where CTAs share boxes (tma_l2_gemm's curve and
    read_tma_shared@2.7MB), and the chapter's old ceilings drawn at the working sets they measured."""
    import matplotlib.pyplot as plt
    ceil = _ceilings(("l2_read", "tma_l2_read", "tma_l2_gemm", "read_tma_shared@2.7MB"))
    alike, curve = _alike(ceil), _tma_curve()
    l2_mb = MEMORY[ceil["l2_read"].gpu]["l2_bytes"] / 1e6
    ax = ax if ax is not None else plt.subplots(figsize=(9.2, 5.6), layout="constrained")[1]
    for path, (name, colour, marker) in PATHS.items():
        xs = list(alike[path])
        ax.plot(xs, [alike[path][s] for s in xs], marker=marker, color=colour, lw=1.8, ms=7,
                label=f"{name}, each CTA its own slice")
    if curve:
        ax.plot(list(curve), list(curve.values()), ls="--", color="tab:green", marker="^", mfc="white", lw=1.2,
                ms=7, label="TMA in probe_tma_l2's walk: CTAs outnumbering the boxes share them")
    shared = ceil["read_tma_shared@2.7MB"].value
    ax.plot([2.7], [shared], marker="*", color="tab:green", ms=15, ls="none")
    ax.annotate(f"read_tma_shared@2.7MB: {shared:.2f}\nthe same walk, x{shared / alike['tma'][2.7]:.2f} TMA "
                f"with own slices", xy=(2.7, shared), xytext=(3.4, 11.6), fontsize=8.5, color="tab:green",
                ha="left", va="center", arrowprops=dict(arrowstyle="->", color="tab:green", lw=1))
    # The old ceilings, each where it measured: l2_read and tma_l2_read at 40% of L2, tma_l2_gemm at 5%.
    old = {"l2_read": ("LDG, one load in flight a thread", "tab:blue", (9.0, 7.5)),
           "tma_l2_read": ("TMA, six boxes in flight a CTA, none shared", "tab:green", (10.0, 10.0)),
           "tma_l2_gemm": ("TMA at 5% of L2, boxes shared", "tab:green", (3.4, 10.3))}
    for cid, (text, colour, at) in old.items():
        x, y = OLD_SHARE[cid] * l2_mb, ceil[cid].value
        ax.plot([x], [y], marker="X", color=colour, ms=10, mec="black", mew=0.8, ls="none")
        ax.annotate(f"{cid}: {y:.2f}\n{text}", xy=(x, y), xytext=at, fontsize=8.5, color=colour, ha="left",
                    va="center", arrowprops=dict(arrowstyle="->", color=colour, lw=1))
    ax.plot([], [], marker="X", color="0.5", mec="black", mew=0.8, ls="none", ms=9,
            label="the chapter's first ceilings, where they measured")
    ax.set_xscale("log")
    xticks = sorted({*(s for v in alike.values() for s in v), *curve, round(OLD_SHARE["l2_read"] * l2_mb, 1)})
    ax.set_xticks(xticks, [f"{s:g}" for s in xticks], fontsize=8.5)
    ax.minorticks_off()
    top = max([shared, *curve.values(), *(c.value for c in ceil.values() if c.id in OLD_SHARE)])
    ax.set(xlim=(1.0, 45), ylim=(7.0, max(14.6, top + 1.3)))
    ax.set_xlabel(f"working set (MB, log scale; the L2 of the {ceil['l2_read'].gpu} holds {l2_mb:.1f} MB)", fontsize=9)
    ax.set_ylabel("TB/s read from L2", fontsize=9)
    ax.tick_params(axis="y", labelsize=8.5)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8.5, loc="upper right", frameon=False)
    spread = max(max(alike[p][s] for p in PATHS) / min(alike[p][s] for p in PATHS) for s in alike["ldg"]) - 1
    lifts = "sharing, not TMA, lifts a small set" if shared > max(alike[p][2.7] for p in PATHS) else \
        "sharing does not lift the small set"
    ax.set_title(f"Measured alike, the three load paths read L2 within {spread:.0%} of each other; {lifts}\n"
                 f"(recorded on {ceil['l2_read'].gpu}, {ceil['read_tma_shared@2.7MB'].date[:10]})", fontsize=10.5)
    clean(ax)
    return ax


def fig_memory_roofs(ax=None):
    """The roofs of the memory hierarchy on one axis, TB/s: HBM copied and read alone, L2 read by each load path
    over the alike sweep's largest set, TMA over its smallest set with CTAs sharing boxes, and TMA multicast (bytes
    landed in both CTAs of a pair, L2 serving each byte once per pair)."""
    import matplotlib.pyplot as plt
    ceil = _ceilings(("hbm_copy", "hbm_read", "read_tma_shared@2.7MB", "tma_multicast"))
    alike = _alike(ceil)
    big = max(alike["ldg"])
    bars = [("HBM copy (read + write): the chapters' HBM roof", ceil["hbm_copy"].value, "0.55", ""),
            ("HBM read alone", ceil["hbm_read"].value, "0.75", "")]
    bars += [(f"L2, {PATHS[p][0]}, {big:g} MB, own slices", alike[p][big], PATHS[p][1], "") for p in PATHS]
    bars += [("L2, TMA, 2.7 MB, CTAs sharing boxes", ceil["read_tma_shared@2.7MB"].value, "tab:green", "//"),
             ("L2, TMA multicast to CTA pairs: bytes landed", ceil["tma_multicast"].value, "tab:green", "xx")]
    ax = ax if ax is not None else plt.subplots(figsize=(9.2, 4.6), layout="constrained")[1]
    ys = range(len(bars))[::-1]
    for y, (name, value, colour, hatch) in zip(ys, bars):
        ax.barh(y, value, height=0.6, color=colour, alpha=0.45 if hatch else 0.8, hatch=hatch, edgecolor=colour)
        ax.text(value + 0.2, y, f"{value:.2f}", va="center", fontsize=9, weight="bold")
    ax.set_yticks(list(ys), [b[0] for b in bars], fontsize=8.5)
    ax.set_xlim(0, max(b[1] for b in bars) * 1.12)
    ax.set_xlabel("TB/s (multicast: bytes landed in shared memory, both CTAs; L2 serves half of them)", fontsize=9)
    ax.tick_params(axis="x", labelsize=8.5)
    ax.set_title(f"Where a byte comes from: the roofs chapter 00 measured ({ceil['hbm_copy'].gpu})", fontsize=10.5)
    clean(ax)
    return ax
