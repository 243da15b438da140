"""The figures issue "learner" named, held to what a reader must be able to read: two ring depths on one time axis,
one colour per lane, empty banks left white, timeline labels of 8 pt, and roofline labels that never overlap.
CPU only (the roofline reads the recorded results). The two sweeps over every figure the helpers draw are marked
`sweep`: ci/test.sh runs them in a pass of their own, after the tests and nbval."""
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_two_ring_depths_share_one_time_axis():
    from helpers.explore import plot_pipeline
    from helpers.models import pipeline_schedule
    _, (a, b) = plt.subplots(2, 1)
    plot_pipeline(2, ax=a)
    plot_pipeline(4, ax=b)
    assert a.get_xlim() == b.get_xlim()
    end = {s: max(e for *_, e in pipeline_schedule(s)) for s in (2, 4)}
    assert end[4] < end[2] <= a.get_xlim()[1]  # the faster ring's bars end sooner on the shared axis


def test_every_lane_of_a_warp_has_its_own_colour_and_a_lane_can_be_outlined():
    from matplotlib.patches import Rectangle
    from helpers.explore import lane_colours, plot_fragment
    from helpers.models import mma_fragment
    assert len(set(lane_colours().colors)) == 32
    ax = plot_fragment("A", lane=5)
    boxes = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
    assert len(boxes) == int((mma_fragment("A")[0] == 5).sum()) == 8  # lane 5 holds 8 elements of A
    assert min(t.get_fontsize() for t in ax.texts) >= 8


def test_banks_no_lane_touches_stay_white():
    from helpers.explore import plot_bank_map
    from helpers.models import bank_map
    ax = plot_bank_map("A", "row-major", (128, 32))
    shown = ax.images[0].get_array()
    assert np.ma.is_masked(shown) and (shown.mask == (bank_map("A", "row-major", (128, 32), 0) == 0)).all()
    assert tuple(ax.images[0].get_cmap().get_bad()[:3]) == (1.0, 1.0, 1.0)


def test_the_pipeline_timeline_labels_are_8_pt_on_an_8_inch_figure(monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from helpers.ladder import recorded_entry
    from helpers.timeline import plot_timeline
    ax = plot_timeline(recorded_entry("timeline", "08_warp_specialized@4096"), 0, 24)
    assert ax.figure.get_size_inches()[0] <= 8 and min(t.get_fontsize() for t in ax.texts) >= 8


def test_roofline_labels_of_one_tile_stack_instead_of_overlapping(monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from helpers import ceiling, chapter_rungs, replay
    from helpers.plot import roofline
    ceilings = {c: ceiling(c) for c in ("hbm_copy", "l2_read", "tma_l2_gemm", "hgmma_peak", "hgmma_peak_random")}
    rows = [replay(r, 4096) for r in ["09_setmaxnreg", *(x.id for x in chapter_rungs("10"))]]  # one intensity, 7 rungs
    ax = roofline(ceilings, rows)
    from helpers.figures.common import text_clashes
    names = [t for t in ax.texts if t.get_text() and "above the HBM roof" not in t.get_text()]  # less the note
    assert len(names) == len(rows) and text_clashes(ax.figure) == []


# ---- no text on top of other text and none shown under 8 pt, in every figure the helpers draw (issue "learner": a CI
# check on every figure; ci/test.sh also runs it on every figure a chapter shows, through GEMM_LADDER_CHECK_FIGURES) --

def _figure_functions():
    import re
    import helpers.figures as figures
    from helpers.registry import ROOT
    drawn = [f"experiments.{p.parent.name}.{f}" for p in sorted((ROOT / "experiments").glob("*/__init__.py"))
             for f in re.findall(r"^def (fig_\w+)\(", p.read_text(), re.M)]  # the experiments' figures too
    return sorted(name for name in dir(figures) if name.startswith("fig_") and name != "fig_profile") + drawn


@pytest.mark.sweep
@pytest.mark.parametrize("name", _figure_functions())
def test_every_chapter_figure_is_legible_in_the_book(name, monkeypatch):
    # fig_profile is held to the same rule, pair by pair, in tests/test_profile_panel.py
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    import importlib
    from helpers.figures.common import illegible
    where, _, function = name.rpartition(".")
    getattr(importlib.import_module(where or "helpers.figures"), function)()
    assert illegible(plt.gcf()) == []


def _shared_plots():
    from helpers import RUNGS, ceiling, replay, takes
    from helpers.explore import plot_bank_map, plot_fragment, plot_pipeline
    from helpers.models import LAYOUTS
    from helpers.ladder import recorded_entry
    from helpers.plot import climb, roofline, sweep
    from helpers.registry import MAIN
    from helpers.timeline import plot_timeline
    peaks = ("hbm_copy", "l2_read", "tma_l2_gemm", "ffma_peak", "hmma_peak", "hgmma_peak", "qgmma_peak")
    ceilings = {c: ceiling(c) for c in peaks}
    main = [replay(r, n, missing_ok=True) for n in (4096, 8192) for r in MAIN]
    every = [replay(r.id, 4096, missing_ok=True) for r in RUNGS if takes(r, 4096)]
    swept = [replay(r, n) for n in (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
             for r in ("05_cp_async", "09_setmaxnreg", "10_chip")]
    yield "climb, the main path", lambda: climb(main, ceilings)
    yield "climb, every rung", lambda: climb(every, ceilings)
    yield "roofline, every rung", lambda: roofline(ceilings, every)
    yield "sweep", lambda: sweep(swept)
    for stages in (2, 4):
        yield f"pipeline, {stages} stages", lambda stages=stages: plot_pipeline(stages, 10)
    for operand in "ABC":
        yield f"fragment {operand}", lambda operand=operand: plot_fragment(operand, lane=3)
    for layout in LAYOUTS:
        yield f"bank map, {layout}", lambda layout=layout: plot_bank_map("A", layout, (128, 32))
    for key in ("08_warp_specialized@4096", "09_setmaxnreg@4096"):
        yield f"timeline {key}", lambda key=key: plot_timeline(recorded_entry("timeline", key), 0, 24)


@pytest.mark.sweep
def test_every_shared_plot_is_legible_in_the_book(monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from helpers.figures.common import illegible
    bad = {}
    for what, draw in _shared_plots():
        drawn = draw()
        fig = drawn if hasattr(drawn, "savefig") else drawn.figure
        bad.update({what: illegible(fig)} if illegible(fig) else {})
        plt.close("all")
    assert bad == {}


def test_the_check_sees_a_clash_and_tells_rotated_neighbours_apart():
    from helpers.figures.common import text_clashes
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.text(0.5, 0.5, "one label", fontsize=10)
    ax.text(0.52, 0.5, "another label", fontsize=10)  # printed over the first
    assert text_clashes(fig) == [("one label", "another label")]
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xticks(range(6), [f"rung_{i:02d}_long_name" for i in range(6)], rotation=40, ha="right")
    assert text_clashes(fig) == []  # slanted side by side: their upright boxes overlap, their ink does not


def test_the_sweep_draws_each_rung_against_its_own_cublas(monkeypatch):
    # issue "learner": one median "cuBLAS" over rungs with different references (NN or TN, fp32 or bf16 C) put rung
    # 10, at 99% of its own cuBLAS, above the line. Each rung's dashed line, tied to it by the legend and its colour,
    # must be the cuBLAS its rows were divided by, read back from the drawn lines.
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from matplotlib.colors import to_rgba
    from helpers import replay
    from helpers.figures.common import illegible
    from helpers.plot import sweep
    sizes = (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
    swept = ("05_cp_async", "09_setmaxnreg", "10_chip")
    rows = [replay(r, n) for n in sizes for r in swept]
    ax = sweep(rows, title="TFLOP/s against N, BF16")  # chapter 11's call
    legend = ax.get_legend()
    shown = {text.get_text(): handle for handle, text in zip(legend.legend_handles, legend.get_texts())}
    drawn = {line.get_label(): line for line in ax.get_lines()}
    at = {}
    for name in swept:
        own = drawn[name]
        refs = [label for label, handle in shown.items() if label.startswith("cuBLAS") and f"{name}'s" in label
                and handle.get_linestyle() == "--" and to_rgba(handle.get_color()) == to_rgba(own.get_color())]
        assert len(refs) == 1, (name, list(shown))
        ref = drawn[refs[0]]
        assert ref.get_linestyle() == "--" and to_rgba(ref.get_color()) == to_rgba(own.get_color())
        mine = dict(zip(own.get_xdata(), own.get_ydata()))
        theirs = dict(zip(ref.get_xdata(), ref.get_ydata()))
        for r in rows:
            if r.rung == name:
                assert mine[r.n] == pytest.approx(r.tflops) and theirs[r.n] == pytest.approx(r.cublas_tflops), (name, r.n)
        at[name] = (mine, theirs)
    mine, theirs = at["10_chip"]
    for n in (4096, 8192):
        row = next(r for r in rows if r.rung == "10_chip" and r.n == n)
        assert mine[n] / theirs[n] == pytest.approx(row.ratio) and abs(mine[n] / theirs[n] - 1) <= 0.03
    assert illegible(ax.figure) == []


# ---- issue "reader" item 4: charts that show the climb, rooflines zoomed to their points ----

def _main_climb(monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from helpers import replay
    from helpers.ceilings import recorded_ceilings
    from helpers.plot import climb
    from helpers.registry import MAIN
    rows = [row for n in (4096, 8192) for r in MAIN if (row := replay(r, n, missing_ok=True)).has_number]
    return rows, climb(rows, recorded_ceilings())  # the landing page's chart (_ext/landing_chart.py)


def test_the_climb_is_linear_and_its_ratios_are_level_and_clear_of_the_cublas_ticks(monkeypatch):
    # a log axis flattened 05 -> 10 (54% -> 99%); rotated ratios sat on the cuBLAS ticks
    from matplotlib.collections import PathCollection
    from helpers.figures.common import illegible
    rows, ax = _main_climb(monkeypatch)
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ratios = [t for t in ax.texts if t.get_text().endswith("%")]
    assert len(ratios) == len(rows)  # one per bar, each drawn from its row
    assert sorted(t.get_text() for t in ratios) == sorted(
        f"{r.ratio:.1%}" if 0.995 <= r.ratio < 1 else f"{r.ratio:.0%}" for r in rows)
    assert all(t.get_rotation() == 0 and t.get_fontsize() >= 8 for t in ratios)
    ticks = [c for c in ax.collections if isinstance(c, PathCollection)]  # the cuBLAS ticks, one set per size
    marks = [ax.transData.transform(xy) for c in ax.collections if isinstance(c, PathCollection)
             for xy in c.get_offsets()]
    half = ax.transData.transform((0.8 / 2 / 2, 0))[0] - ax.transData.transform((0, 0))[0]  # half a bar
    for t in ratios:
        box = t.get_window_extent(renderer)
        for x, y in marks:  # a tick under a label's span lies below the label's box
            if box.x0 < x + half and x - half < box.x1:
                assert y + 1 < box.y0 or y - 1 > box.y1, (t.get_text(), box, (x, y))
    assert ticks and illegible(fig) == []


def test_the_climb_fits_its_axis_to_the_bars_and_tells_the_peak_pairs_apart(monkeypatch):
    # chapters 06 and 10 ran the axis to ~3,000 for bars of 400-800; the two FP8 peaks were two alike dotted lines
    rows, ax = _main_climb(monkeypatch)
    top = max(max(r.tflops, r.cublas_tflops) for r in rows)
    peaks = {line.get_label(): line for line in ax.get_lines() if "peak" in line.get_label()}
    assert ax.get_ylim()[1] <= 1.05 * max([top * 1.2] + [line.get_ydata()[0] for line in peaks.values()])
    fp8 = [line for label, line in peaks.items() if label.startswith("FP8")]
    assert len(fp8) == 2 and fp8[0].get_linestyle() != fp8[1].get_linestyle()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:3] == ["N=4096", "N=8192", labels[2]] and labels[2].startswith("cuBLAS")  # bars first


def test_chapter_06_and_10_climbs_end_near_their_bars(monkeypatch):
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from helpers import ceiling, chapter_rungs, replay
    from helpers.plot import climb
    for first, chapter, ids in (("05_cp_async", "06", ("hbm_copy", "l2_read", "hmma_peak", "hgmma_peak")),
                                ("09_setmaxnreg", "10", ("hbm_copy", "l2_read", "tma_l2_gemm", "hgmma_peak",
                                                          "hgmma_peak_random"))):
        rows = [r for r in (replay(x, 4096, missing_ok=True) for x in [first, *(y.id for y in chapter_rungs(chapter))])
                if r.has_number]
        ax = climb(rows, {c: ceiling(c) for c in ids})
        drawn = [line.get_ydata()[0] for line in ax.get_lines() if "peak" in line.get_label()]
        highest = max([max(r.tflops, r.cublas_tflops) for r in rows] + drawn)
        assert ax.get_ylim()[1] <= 1.15 * highest, chapter  # was 4x the tallest bar, on a log axis
        plt.close("all")


def test_the_roofline_zooms_to_its_points_and_explains_those_above_hbm(monkeypatch):
    # twelve rungs at ~85 FLOP/B sat in one corner of 4.5 empty decades; nothing said why they beat the HBM roof
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    from helpers import ceiling, chapter_rungs, replay
    from helpers.compiler import intensity
    from helpers.figures.common import illegible
    from helpers.plot import above_hbm, roofline
    from helpers.registry import rung
    ceilings = {c: ceiling(c) for c in ("hbm_copy", "l2_read", "tma_l2_gemm", "hgmma_peak", "hgmma_peak_random")}
    rows = [r for r in (replay(x, 4096, missing_ok=True) for x in ["09_setmaxnreg", *(y.id for y in chapter_rungs("10"))])
            if r.has_number]
    ax = roofline(ceilings, rows)
    ai = [intensity(rung(r.rung)) for r in rows]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert x0 >= min(ai) / 4 and x1 / x0 < 100 and y1 / y0 < 20  # two decades across, not 4.5
    assert x0 < min(ai) and max(ai) < x1 and y0 < min(r.tflops for r in rows) and max(r.tflops for r in rows) < y1
    above = above_hbm(ceilings, rows)
    assert len(above) == len(rows)  # every rung of chapter 10 beats HBM at its load intensity
    notes = [t.get_text() for t in ax.texts if "above the HBM roof" in t.get_text()]
    assert len(notes) == 1 and notes[0].startswith(f"{len(above)} points") and illegible(ax.figure) == []
