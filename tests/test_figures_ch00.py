"""helpers.figures.ch00: chapter 00's probe figures draw the recorded ceilings exactly (each load path at the working
sets it was measured over, the old ceilings where they measured, every roof's bar at its value), legibly (no text
shown under 8 pt, none on another), and refuse a results file without the alike sweep in one sentence. CPU only:
everything is read from the book's recorded results file."""
import functools
import json

import matplotlib
import pytest

matplotlib.use("Agg")

from helpers import results  # noqa: E402
from helpers.figures import fig_memory_roofs, fig_read_paths  # noqa: E402
from helpers.figures.common import illegible  # noqa: E402
from helpers.hardware import MEMORY  # noqa: E402
from helpers.probes import READ_PATHS, READ_SETS  # noqa: E402
from helpers.store import NotRecorded  # noqa: E402

BOOK = results.RESULTS / results.REFERENCE / results.RUN_FILE


pytestmark = pytest.mark.usefixtures("book_results")  # conftest: the book's run file, figures closed


@functools.cache
def _ceilings() -> dict:
    return json.loads(BOOK.read_text())["ceilings"]


def _points(ax) -> set[tuple[float, float]]:
    """Every (x, y) a line or marker of `ax` draws, rounded."""
    return {(round(float(x), 6), round(float(y), 6)) for line in ax.lines for x, y in zip(*line.get_data())}


def test_the_read_paths_figure_draws_each_path_at_its_recorded_working_sets():
    ax = fig_read_paths()
    drawn, c = _points(ax), _ceilings()
    for path in READ_PATHS:
        for name in READ_SETS:
            point = (float(name.removesuffix("MB")), round(c[f"read_{path}@{name}"]["value"], 6))
            assert point in drawn, f"read_{path}@{name} is not drawn at its working set and recorded value"
    assert (2.7, round(c["read_tma_shared@2.7MB"]["value"], 6)) in drawn
    curve = {(float(k.removesuffix(" MB")), round(v, 6)) for k, v in c["tma_l2_gemm"]["detail"].items()}
    assert curve <= drawn, "tma_l2_gemm's recorded curve is not drawn whole"


def test_the_old_ceilings_are_drawn_where_they_measured():
    ax = fig_read_paths()
    drawn, c = _points(ax), _ceilings()
    l2_mb = MEMORY[c["l2_read"]["gpu"]]["l2_bytes"] / 1e6
    for cid, share in (("l2_read", 0.40), ("tma_l2_read", 0.40), ("tma_l2_gemm", 0.05)):
        assert (round(share * l2_mb, 6), round(c[cid]["value"], 6)) in drawn, f"{cid} is not drawn at {share:.0%} of L2"
        assert any(t.get_text().startswith(f"{cid}: {c[cid]['value']:.2f}") for t in ax.texts), f"{cid} is unlabelled"


def test_the_roofs_figure_draws_every_roof_at_its_recorded_value():
    ax = fig_memory_roofs()
    c = _ceilings()
    widths = sorted(round(p.get_width(), 6) for p in ax.patches)
    big = max(READ_SETS, key=READ_SETS.get)
    want = [c[cid]["value"] for cid in ("hbm_copy", "hbm_read", "read_tma_shared@2.7MB", "tma_multicast")]
    want += [c[f"read_{p}@{big}"]["value"] for p in READ_PATHS]
    assert widths == sorted(round(v, 6) for v in want)


@pytest.mark.parametrize("draw", [fig_read_paths, fig_memory_roofs])
def test_chapter_00_figures_are_legible_in_the_book(draw):
    assert illegible(draw().figure) == []


@pytest.mark.parametrize("draw", [fig_read_paths, fig_memory_roofs])
def test_a_results_file_without_the_alike_sweep_is_refused_in_one_sentence(draw, monkeypatch):
    # The H100's recorded file predates the alike sweep (read_*@*, hbm_read).
    monkeypatch.setenv(results.RESULTS_ENV, str(results.RESULTS / "nvidia-h100-80gb-hbm3" / results.RUN_FILE))
    with pytest.raises(NotRecorded, match=r"records no .*run chapter 00's probes on a Hopper GPU\.") as got:
        draw()
    assert str(got.value).count(". ") == 0
