"""Every chapter: the rung it teaches beside the rung before it, from their recorded Nsight Compute profiles
(results/<gpu>/run.json, section "profiles", written by helpers/profile.py): fig_profile, and limit_of, the few numbers
the chapter's prose quotes about what binds.

Only recorded entries are read (never a live ncu run: a figure must not take minutes), so the figure and the prose
built on limit_of say the same thing on every machine.
"""
from __future__ import annotations

from ..ceilings import recorded_ceilings
from ..hardware import SMEM_BYTES_PER_CLK, SMS
from ..ladder import recorded_entry
from ..store import NotRecorded
from ..profile import SECTION, SITES, key
from ..registry import rung
from ..sites import phrase
from .common import clean

RUNG_COLOUR, BEFORE_COLOUR = "tab:blue", "0.62"   # the rung taught, the rung before it
TOP = 5                                           # stall reasons kept per rung; the rest are summed as "other"
ROOFS = {"l2_read": "LDG", "tma_l2_gemm": "TMA", "tma_multicast": "TMA multicast"}  # each load path's ceiling
FONT = 8.5
NEAR = 0.5  # a roof under half used is not what binds: the sentence says the rung is near none
GLOSSARY = "glossary"  # the book's page (glossary.md, beside intro.md) that explains every name the panel shows
# Each stall reason in plain words, Nsight Compute's name beside it on the panel (the book's glossary.md says what each
# one usually means in this book's kernels). A reason missing here is shown under its Nsight name alone.
PLAIN = {
    "long_scoreboard": "waiting on global/TMA data",
    "short_scoreboard": "waiting on shared memory",
    "barrier": "at a barrier or wgmma wait",
    "wait": "fixed-latency wait",
    "mio_throttle": "shared-memory queue full",
    "lg_throttle": "global-memory queue full",
    "tex_throttle": "texture queue full",
    "dispatch_stall": "dispatcher held back",
    "not_selected": "ready, another warp issued",
    "selected": "issuing",
    "math_pipe_throttle": "math pipe busy",
    "membar": "at a memory fence",
    "branch_resolving": "resolving a branch",
    "no_instructions": "no instruction fetched",
    "sleeping": "asleep",
    "drain": "draining stores at exit",
    "imc_miss": "constant-cache miss",
    "misc": "miscellaneous",
    "warpgroup_arrive": "at a warpgroup arrive",
}
OTHER = "all other reasons"  # the row that sums the reasons outside every rung's top TOP
GLOSSARY_LINE = ("Plain names, Nsight Compute's in brackets: each stall reason and bar is explained on the book's "
                 "Glossary page (sidebar, Tools).")


def stall_label(reason: str) -> str:
    """A stall row's label: the plain name with Nsight Compute's under it in brackets ("waiting on global/TMA data",
    then "(long_scoreboard)": on one line the labels squeeze the throughput panel); the Nsight name alone where there
    is no plain one; OTHER for "other"."""
    if reason == "other":
        return OTHER
    return f"{PLAIN[reason]}\n({reason})" if reason in PLAIN else reason


def recorded_profile(rung_id: str, n: int) -> dict:
    """The recorded profile of rung_id at N (what the panels and the prose read: never a live ncu run), or
    NotRecorded in one sentence."""
    rung(rung_id)  # an unknown id fails here, in the registry's words
    try:
        return recorded_entry(SECTION, key(rung_id, n))
    except NotRecorded:
        raise NotRecorded(f"The profile of {rung_id} at N={n} was never recorded, so it cannot be drawn; take it on a "
                          f"Hopper GPU with Nsight Compute (python -m helpers profile --rungs {rung_id} --n {n}).") from None


def _roof(rung_id: str, e: dict | None = None) -> str:
    """The ceiling of the path rung_id loads through (helpers.plot.load_path): TMA multicast, TMA, or LDG. Where the
    profiled launch (entry e) ran clusters of one, as rungs 10 and 12 do where no CTA gets a second tile, nothing is
    multicast: plain TMA. Entries record their launch's cluster; older ones did not, and the launch rule
    (helpers.tiles.solo) says what it was from the entry's own tile and N."""
    from ..plot import load_path
    from ..tiles import solo
    r = rung(rung_id)
    path = load_path(r)
    if e is not None and path == "tma_multicast" and r.solo_clusters:
        cluster = e.get("cluster") or (1 if solo(e["n"], e["n"], *e["tile"], SMS) else 2)
        if cluster == 1:
            return "tma_l2_gemm"
    return path


def _pipe(e: dict) -> tuple[str, float]:
    """(name, % busy) of the rung's math pipe: the FP32 FMA pipe for the SIMT rungs, the tensor pipe otherwise."""
    return ("FMA", e["fma_pipe_pct"]) if e.get("pipe") == "fma" else ("tensor", e["tensor_active_pct"])


def limit_of(rung_id: str, n: int) -> dict:
    """What the recorded profile says binds rung_id at N: its top stall reason and that reason's share of the stalled
    samples, its math pipe and how busy it is (% of peak), L2 -> SM bytes per second as a fraction of the roof of its
    own load path (`roof`, a ceiling id); `roofs`: the fraction of every roof it runs against (its math pipe, its L2
    load path, HBM: DRAM bytes read and written per second against the copy probe, the shared-memory read port: its
    LSU wavefronts, 128 B a clock), `nearest` the largest of them; and `sites`, where the warps wait (the recorded
    stall sites, helpers.sites; None where never recorded). Unrounded: the prose rounds."""
    e = recorded_profile(rung_id, n)
    top, share = max(e["stall_reasons"].items(), key=lambda kv: kv[1])
    pipe, pct = _pipe(e)
    roof = _roof(rung_id, e)
    ceilings = recorded_ceilings()
    l2 = e["l2_tbps"] / ceilings[roof].value
    roofs = {f"{pipe} pipe": pct / 100, f"{ROOFS[roof]} roof from L2": l2}
    if e.get("dram_bytes") is not None and e.get("duration_us") and "hbm_copy" in ceilings:
        roofs["HBM copy roof"] = e["dram_bytes"] / (e["duration_us"] * 1e-6) / 1e12 / ceilings["hbm_copy"].value
    # Shared memory's read side: one 128-B wavefront a clock (chapter 00's m64n64 wgmma probe reads 128 B per tensor
    # clock at 97% of the m64n256 rate). The TMA's fills are not on it: a probe of wgmmas beside fills (chapter 07)
    # moved more than 128 B a clock of reads plus fills through one SM, the fills costing a few points of their own.
    reads = port_of(rung_id, n).get("smem_read_pct")
    if reads is not None:
        roofs["shared-memory read port"] = reads / 100
    try:
        sites = recorded_entry(SITES, key(rung_id, n))
    except NotRecorded:
        sites = None
    return {"top_stall": top, "top_share": share, "pipe": pipe, "pipe_pct": pct, "l2_fraction_of_roof": l2,
            "roof": roof, "roofs": roofs, "nearest": max(roofs, key=roofs.get), "sites": sites}


def port_of(rung_id: str, n: int) -> dict:
    """The shared-memory port figures (helpers.profile.port) of the recorded profile, its raw metrics read from their
    own file; {} where they were not kept."""
    from .. import results
    from ..profile import port
    e = recorded_profile(rung_id, n)
    try:
        raw = results.metrics(SECTION, key(rung_id, n))
    except (OSError, KeyError, results.ResultsError):
        return {}
    return port({**e, **raw})


def _stall_rows(entries: list[dict]) -> list[str]:
    """The union of each entry's TOP reasons, the first entry's largest first, then "other"."""
    tops = [sorted(e["stall_reasons"], key=lambda r: -e["stall_reasons"][r])[:TOP] for e in entries]
    union = {r for t in tops for r in t}
    return sorted(union, key=lambda r: tuple(-e["stall_reasons"].get(r, 0.0) for e in entries)) + ["other"]


def _rates(e: dict, rid: str, ceilings: dict) -> list[tuple[float, str]]:
    """(% of roof, label on the bar) for each row of the throughput panel, in ROW order."""
    pipe, pct = _pipe(e)
    roof = ceilings[_roof(rid, e)].value
    # Shared memory's row is Nsight Compute's busy share of the LSU data pipe's shared-memory wavefronts, against
    # one 128-B wavefront a clock: it counts LDS/STS/LDSM/STSM, cp.async's writes and wgmma's operand reads, not the
    # TMA's fills. That read port is the roof (limit_of's); the fills land beside it, a load of their own
    # (experiments/smem_port moved more than 128 B a clock of the two), so the bar is the reads and its label adds
    # the fills per clock where TMA brought any.
    fill = port_of(rid, e["n"]).get("smem_fill_pct")
    fills = f" + fills {fill * SMEM_BYTES_PER_CLK / 100:.0f} B/clk" if fill else ""
    return [(pct, f"{_pct(pct)} {pipe}"), (100 * e["l2_tbps"] / roof, f"{e['l2_tbps']:.2f} TB/s"),
            (e["smem_pipe_pct"], _pct(e["smem_pipe_pct"]) + fills), (e["occupancy_pct"], _pct(e["occupancy_pct"]))]


def _dram(e: dict) -> str:
    """The DRAM traffic as what it counts: an entry's dram_bytes are bytes read plus bytes written, so the label says
    so, with the reads alone beside it where they were recorded (what "reads the same N GB" in the prose compares)."""
    total = f"DRAM read + written {e['dram_bytes'] / 1e9:.2f} GB"
    if e.get("dram_read_bytes") is not None:
        return total + f" ({e['dram_read_bytes'] / 1e9:.2f} GB read)"
    return total


def _pct(v: float) -> str:
    return f"{v:.1f}%" if v < 10 else f"{v:.0f}%"


def fig_profile(rung_id: str, before_id: str | None, n: int = 8192, axes=None):
    """rung_id beside before_id (None: alone) at N x N x N, from the recorded profiles. Left: the stall reasons, as
    shares of the sampled stalls (issuing samples excluded; the issuing share is in the legend). Right: the math pipe,
    L2 -> SM, the shared-memory pipe and achieved occupancy, each as % of its roof, the absolute value on the
    bar. `axes`: a pair of Axes to draw on, else a new 9.2 x 4.8 in figure. Returns the pair (stalls, throughput).
    NotRecorded, in one sentence, before anything is drawn if either profile is missing."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    ids = [rung_id] + ([before_id] if before_id else [])
    entries = [recorded_profile(rid, n) for rid in ids]
    ceilings = recorded_ceilings()
    if axes is None:
        fig = plt.figure(figsize=(9.2, 4.8), layout="constrained")  # the book's column: 9.4 in with its padding; the
        # height gives each stall row room for its two lines (a plain name, Nsight Compute's under it)
        axes = fig.subplots(1, 2, width_ratios=(1, 1.1))
    ax_s, ax_r = axes
    fig = ax_s.figure
    colours = (RUNG_COLOUR, BEFORE_COLOUR)
    h = 0.8 / len(ids)
    offsets = [h * (i - (len(ids) - 1) / 2) for i in range(len(ids))]

    # Left: stall reasons, one row per reason, the rung above its predecessor.
    rows = _stall_rows(entries)
    for rid, e, c, dy in zip(ids, entries, colours, offsets):
        shares = [e["stall_reasons"].get(r, 0.0) for r in rows[:-1]]
        shares.append(sum(v for r, v in e["stall_reasons"].items() if r not in rows))
        ax_s.barh([i + dy for i in range(len(rows))], shares, h, color=c, label=rid)
    ax_s.set_yticks(range(len(rows)), [stall_label(r) for r in rows], fontsize=FONT)
    ax_s.set_ylim(len(rows) - 0.5, -0.5)
    ax_s.set_xlim(0, 1.12 * max(max(b.get_width() for b in ax_s.patches), 0.05))
    ax_s.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax_s.tick_params(axis="x", labelsize=FONT)
    ax_s.set_xlabel("share of sampled stalls (issuing samples excluded)", fontsize=FONT)
    clean(ax_s)

    # Right: throughput as % of each metric's roof, the measured value written on the bar.
    roofs = {ROOFS[_roof(rid, e)]: ceilings[_roof(rid, e)].value for rid, e in zip(ids, entries)}
    pipes = {_pipe(e)[0] for e in entries}
    l2_label = (f"L2 -> SM, % of {next(iter(roofs))} roof\n{next(iter(roofs.values())):.2f} TB/s" if len(roofs) == 1
                else "L2 -> SM, % of its path's roof:\n" + ", ".join(f"{k} {v:.2f}" for k, v in roofs.items()) + " TB/s")
    labels = [f"{' or '.join(sorted(pipes))} pipe busy,\n% of peak", l2_label,
              "shared-memory reads, % of the\nread port's 128 B/clk (fills beside)",
              "achieved occupancy,\n% of warp slots"]
    rates = [_rates(e, rid, ceilings) for rid, e in zip(ids, entries)]
    right = 1.32 * max(100.0, *(v for r in rates for v, _ in r))
    for rid, rate, c, dy in zip(ids, rates, colours, offsets):
        bars = ax_r.barh([i + dy for i in range(len(labels))], [v for v, _ in rate], h, color=c, label=rid)
        for bar, (v, text) in zip(bars, rate):
            ax_r.text(v + right * 0.01, bar.get_y() + h / 2, text, va="center", ha="left", fontsize=8, zorder=3,
                      bbox=dict(facecolor="white", edgecolor="none", pad=0.5, alpha=0.85))
    ax_r.axvline(100, color="0.3", lw=0.8, ls="--", zorder=0.5)
    ax_r.set_yticks(range(len(labels)), labels, fontsize=FONT)
    ax_r.set_ylim(len(labels) - 0.5, -0.5)
    ax_r.set_xlim(0, right)
    ax_r.set_xticks([t for t in (0, 25, 50, 75, 100, 125, 150) if t <= right])
    ax_r.tick_params(axis="x", labelsize=FONT)
    ax_r.set_xlabel("% of roof (dashed: the roof)", fontsize=FONT)
    clean(ax_r)

    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours[:len(ids)]]
    names = [f"{rid}: issuing in {e['issuing_share']:.1%} of samples, {e['registers']} registers, "
             f"{e['spill_bytes']} B spilled, {_dram(e)}" for rid, e in zip(ids, entries)]
    # one rung a row: side by side the two lines would widen the figure past the book's column; the last row, with
    # no swatch, the footer that says where every name on the panel is explained
    handles.append(plt.Rectangle((0, 0), 1, 1, fill=False, edgecolor="none"))
    fig.legend(handles, names + [GLOSSARY_LINE], loc="outside lower center", ncols=1, fontsize=FONT, frameon=False)
    runs = {(e["run"], e["gpu"]) for e in entries}
    source = (f"run {entries[0]['run']} on {entries[0]['gpu']}" if len(runs) == 1 else
              ";\n".join(f"{rid}: run {e['run']} on {e['gpu']}" for rid, e in zip(ids, entries)))
    what = f"{rung_id} beside {before_id}" if before_id else rung_id
    fig.suptitle(f"{what} at N={n}: Nsight Compute,\n{source}", fontsize=10)  # a line per run: one would be too wide
    return ax_s, ax_r


def limit_sentence(rung_id: str, n: int) -> str:
    """The sentence each chapter's prose opens its profile paragraph with, built from limit_of, so the tests can
    hold the prose to the recorded profile word for word."""
    x, e = limit_of(rung_id, n), recorded_profile(rung_id, n)
    path = {"tma_l2_gemm": "TMA", "tma_multicast": "TMA multicast", "l2_read": "LDG/cp.async"}[x["roof"]]
    text = (f"Nsight Compute on {rung_id} at N = {n} (run {e['run']}): the top stall is `{x['top_stall']}` "
            f"({x['top_share']:.0%} of the sampled stalls), the {x['pipe']} pipe is busy {x['pipe_pct']:.0f}% of the "
            f"time, and L2 delivers {e['l2_tbps']:.2f} TB/s, {x['l2_fraction_of_roof']:.0%} of the {path} roof.")
    if x["sites"] and x["sites"]["sites"]:
        text += " The warps wait longest at " + ", then ".join(phrase(s) for s in x["sites"]["sites"][:2]) + "."
    near, roofs = x["nearest"], x["roofs"]
    others = ", ".join(f"{name} {v:.0%}" for name, v in sorted(roofs.items(), key=lambda kv: -kv[1]) if name != near)
    if roofs[near] < NEAR:
        return text + f" It is near none of the roofs it runs against: the nearest, the {near}, at {roofs[near]:.0%}."
    return text + f" Of the roofs it runs against, the nearest is the {near} at {roofs[near]:.0%} ({others})."
