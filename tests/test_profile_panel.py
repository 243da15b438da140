"""helpers.figures.profile: the profile panel every chapter shows (a rung beside its predecessor) draws the recorded
Nsight Compute numbers exactly, against the roof of each rung's own load path, legibly (no text shown under 8 pt, no
two texts on top of each other), refuses an unrecorded rung or size in one sentence, and limit_of says what the entry
says. CPU only: everything is read from the recorded results file."""
import functools
import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from helpers import results  # noqa: E402
from helpers.figures import fig_profile, limit_of  # noqa: E402
from helpers.figures.profile import GLOSSARY, GLOSSARY_LINE, OTHER, PLAIN, stall_label  # noqa: E402
from helpers.store import NotRecorded  # noqa: E402
from helpers.registry import MAIN, rung  # noqa: E402

SIZES = (4096, 8192)
# MAIN is in climb order: each rung beside the one before it (the first alone), and the same-tile ablation of ch 08.
PAIRS = [(MAIN[0], None)] + [(b, a) for a, b in zip(MAIN, MAIN[1:])] + [("08_same_tile", "07_tma")]
REFERENCE = results.RESULTS / results.REFERENCE / results.RUN_FILE


pytestmark = pytest.mark.usefixtures("book_results")  # conftest: the book's run file, figures closed


@functools.cache
def _reference() -> dict:
    return json.loads(REFERENCE.read_text())


def _recorded(rid: str, n: int) -> dict:
    return _reference()["profiles"][f"{rid}@{n}"]


def _ceiling(cid: str) -> float:
    return _reference()["ceilings"][cid]["value"]


def _path_roof(rid: str) -> str:
    """Written out here, not imported: rungs whose SASS the registry claims multicast loads load through TMA
    multicast, the other tensor-map rungs through TMA, the rest through LDG."""
    r = rung(rid)
    if "UTMALDG.2D.MULTICAST" in r.sass_has:
        return "tma_multicast"
    return "tma_l2_gemm" if r.operands in ("tensor_maps", "tensor_maps_c") else "l2_read"


def _nsight(label: str) -> str:
    """The Nsight Compute name a stall row's label carries in its closing brackets."""
    assert label.endswith(")"), label
    return label[label.rindex("(") + 1:-1]


def _widths(ax) -> dict[str, list[float]]:
    """Bar widths per rung (each barh call is one container, labelled with its rung), top row first."""
    return {c.get_label(): [b.get_width() for b in c] for c in ax.containers}


def _drawn_texts(fig) -> list[Text]:
    """Every text the canvas draws: tick labels only where their tick lies inside the view, nothing empty."""
    pool = {t for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
            for tick in axis.majorTicks + axis.minorTicks for t in (tick.label1, tick.label2)}
    texts = [t for t in fig.findobj(Text) if t not in pool]
    for ax in fig.axes:
        for axis, (lo, hi) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            texts += [t for loc, t in zip(axis.get_majorticklocs(), axis.get_majorticklabels())
                      if lo - 1e-9 <= loc <= hi + 1e-9]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


@pytest.mark.sweep  # every main-path panel at both sizes, each drawn and checked for legibility
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("rid, before", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_panel_draws_the_recorded_numbers_legibly(rid, before, n):
    ax_s, ax_r = fig_profile(rid, before, n)
    fig = ax_s.figure
    ids = [rid] + ([before] if before else [])
    entries = {i: _recorded(i, n) for i in ids}

    # Left: one row per reason in the union of each rung's top five, then the rest, summed; each row a plain name with
    # Nsight Compute's name in brackets after it.
    labels = [t.get_text() for t in ax_s.get_yticklabels()]
    assert labels[-1] == OTHER
    rows = [_nsight(label) for label in labels[:-1]]
    assert all(label == f"{PLAIN[r]}\n({r})" for label, r in zip(labels, rows))
    tops = {r for e in entries.values() for r in sorted(e["stall_reasons"], key=lambda k: -e["stall_reasons"][k])[:5]}
    assert set(rows) == tops
    stalls = _widths(ax_s)
    assert list(stalls) == ids
    for i, e in entries.items():
        assert stalls[i][:-1] == [e["stall_reasons"].get(r, 0.0) for r in rows]
        assert stalls[i][-1] == pytest.approx(sum(v for r, v in e["stall_reasons"].items() if r not in tops))

    # Right: pipe, L2 -> SM against its own path's roof, shared-memory bytes, occupancy; the value written on the bar.
    rates, written = _widths(ax_r), [t.get_text() for t in ax_r.texts]
    labels = "\n".join(t.get_text() for t in ax_r.get_yticklabels())
    for i, e in entries.items():
        pipe = e["fma_pipe_pct"] if e["pipe"] == "fma" else e["tensor_active_pct"]
        roof = _ceiling(_path_roof(i))
        assert rates[i] == pytest.approx([pipe, 100 * e["l2_tbps"] / roof, e["smem_pipe_pct"], e["occupancy_pct"]],
                                         rel=1e-12)
        assert f"{e['l2_tbps']:.2f} TB/s" in written
        assert f"{roof:.2f}" in labels and {"tma_l2_gemm": "TMA", "tma_multicast": "TMA multicast", "l2_read": "LDG"}[_path_roof(i)] in labels
    assert "shared-memory reads, % of the\nread port's 128 B/clk (fills beside)" in labels
    # the reads are the bar (the read port is the roof); the TMA fills, a load of their own, are written beside them
    from helpers.figures.profile import port_of
    for i, e in entries.items():
        fill = port_of(i, n).get("smem_fill_pct")
        want = f"+ fills {fill * 128 / 100:.0f} B/clk"
        assert (any(want in w for w in written) if fill else not any("fills" in w for w in written if w.startswith(
            f"{e['smem_pipe_pct']:.0f}%"))), (i, want, written)

    # The source, so a saved figure stays true; the issuing share beside each rung's name.
    title = fig.get_suptitle()
    assert f"N={n}" in title and all(i in title for i in ids)
    assert all(f"run {e['run']}" in title and e["gpu"] in title for e in entries.values())
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    # DRAM as what it counts: reads plus writes, the reads alone beside them; the last line points at the glossary
    assert legend == [f"{i}: issuing in {entries[i]['issuing_share']:.1%} of samples, {entries[i]['registers']} registers, "
                      f"{entries[i]['spill_bytes']} B spilled, DRAM read + written "
                      f"{(entries[i]['dram_read_bytes'] + entries[i]['dram_write_bytes']) / 1e9:.2f} GB "
                      f"({entries[i]['dram_read_bytes'] / 1e9:.2f} GB read)" for i in ids] + [GLOSSARY_LINE]

    # Legible as the book shows it: nothing under 8 pt at the column's width, no two texts overlapping once drawn.
    from helpers.figures.common import illegible  # the check every figure of the book passes
    assert illegible(fig) == []


def test_each_rung_uses_the_roof_of_its_own_load_path():
    # 07_tma loads through TMA, 06_wgmma_wide through LDG: one figure, two roofs, both named.
    _, ax_r = fig_profile("07_tma", "06_wgmma_wide", 8192)
    rates = _widths(ax_r)
    assert rates["07_tma"][1] == pytest.approx(100 * _recorded("07_tma", 8192)["l2_tbps"] / _ceiling("tma_l2_gemm"))
    assert rates["06_wgmma_wide"][1] == pytest.approx(100 * _recorded("06_wgmma_wide", 8192)["l2_tbps"]
                                                      / _ceiling("l2_read"))
    label = ax_r.get_yticklabels()[1].get_text()
    assert f"TMA {_ceiling('tma_l2_gemm'):.2f}" in label and f"LDG {_ceiling('l2_read'):.2f}" in label
    plt.close("all")
    _, ax_r = fig_profile("09_setmaxnreg", "08_warp_specialized", 8192)  # both TMA: the one roof, named once
    assert ax_r.get_yticklabels()[1].get_text() == f"L2 -> SM, % of TMA roof\n{_ceiling('tma_l2_gemm'):.2f} TB/s"


@pytest.mark.parametrize("rid, before, n, missing", [
    ("07_tma", "06_wgmma_wide", 2048, "07_tma at N=2048"),
    ("07_tma", None, 1000, "07_tma at N=1000"),
])
def test_an_unrecorded_size_is_one_sentence_and_no_figure(rid, before, n, missing):
    with pytest.raises(NotRecorded) as err:
        fig_profile(rid, before, n)
    assert missing in str(err.value) and str(err.value).count(". ") == 0 and str(err.value).endswith(".")
    assert plt.get_fignums() == []
    with pytest.raises(NotRecorded, match=missing):
        limit_of(rid, n)


def test_an_unrecorded_predecessor_draws_nothing(tmp_path, monkeypatch):
    # Only the rung's own profile is recorded: the figure refuses whole, naming the missing one, not half drawn.
    data = _reference()
    only = {"ceilings": data["ceilings"], "gemm": {}, "profiles": {"07_tma@8192": data["profiles"]["07_tma@8192"]}}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(only))
    monkeypatch.setenv(results.RESULTS_ENV, str(path))
    assert fig_profile("07_tma", None, 8192)
    plt.close("all")
    with pytest.raises(NotRecorded, match="06_wgmma_wide at N=8192"):
        fig_profile("07_tma", "06_wgmma_wide", 8192)
    assert plt.get_fignums() == []


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("rid", [*MAIN, "08_same_tile"])
def test_limit_of_says_what_the_entry_says(rid, n):
    e, got = _recorded(rid, n), limit_of(rid, n)
    top = max(e["stall_reasons"], key=e["stall_reasons"].get)
    roof = _path_roof(rid)
    roofs, nearest, sites = got.pop("roofs"), got.pop("nearest"), got.pop("sites")
    assert got == {"top_stall": top, "top_share": e["stall_reasons"][top],
                   "pipe": "FMA" if e["pipe"] == "fma" else "tensor",
                   "pipe_pct": e["fma_pipe_pct"] if e["pipe"] == "fma" else e["tensor_active_pct"],
                   "l2_fraction_of_roof": pytest.approx(e["l2_tbps"] / _ceiling(roof)), "roof": roof}
    # every roof the rung runs against, the nearest the largest; HBM is DRAM bytes per second against the copy probe
    assert roofs[nearest] == max(roofs.values()) and len(roofs) == 4, roofs
    assert roofs["HBM copy roof"] == pytest.approx(e["dram_bytes"] / e["duration_us"] / 1e6 / _ceiling("hbm_copy"))
    assert sites is None or sites["sites"][0]["share"] == max(s["share"] for s in sites["sites"])



# --- the glossary a panel points at (glossary.md, in the table of contents) -------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def _glossary_terms() -> set[str]:
    """The terms of glossary.md's {glossary} blocks: an unindented, non-empty line inside such a block."""
    terms, inside = set(), False
    for line in (ROOT / f"{GLOSSARY}.md").read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```{glossary}"
            continue
        if inside and line.strip() and not line.startswith(" "):
            terms.add(line.strip())
    return terms


def test_every_recorded_stall_reason_has_a_plain_name_and_a_glossary_entry():
    recorded = {r for e in _reference()["profiles"].values() for r in e["stall_reasons"]}
    for path in results.RESULTS.glob("*/" + results.RUN_FILE):  # every machine's run, not only the reference
        recorded |= {r for e in json.loads(path.read_text()).get("profiles", {}).values() for r in e["stall_reasons"]}
    # and the ones the book names without a recorded share: the issuing samples, and reasons Nsight Compute may add
    named = recorded | {"selected", "sleeping", "tex_throttle", "math_pipe_throttle", "membar", "no_instructions"}
    assert named <= set(PLAIN), named - set(PLAIN)
    assert named <= _glossary_terms(), named - _glossary_terms()
    assert stall_label("long_scoreboard") == "waiting on global/TMA data\n(long_scoreboard)"
    assert stall_label("other") == OTHER and stall_label("a_new_reason") == "a_new_reason"


def test_the_glossary_explains_every_site_kind_and_every_throughput_row():
    from helpers.sites import KINDS, WAIT_LOOP
    terms = _glossary_terms()
    kinds = {what for _, what in KINDS} | {WAIT_LOOP, "other", "branch"}
    assert kinds <= terms, kinds - terms
    assert {"tensor pipe busy", "L2 -> SM", "shared-memory reads", "read port and fills", "achieved occupancy",
            "DRAM read + written", "issuing share"} <= terms


def test_the_panel_says_where_its_glossary_is():
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed here")
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    tools = next(part for part in toc["parts"] if part["caption"] == "Tools")
    assert {"file": GLOSSARY} in tools["chapters"]  # where the footer sends the reader: the sidebar, under Tools
    assert "Glossary page (sidebar, Tools)" in GLOSSARY_LINE
    assert (ROOT / f"{GLOSSARY}.md").read_text().startswith("# Glossary")
    ax_s, _ = fig_profile("07_tma", "06_wgmma_wide", 8192)
    assert fig_profile.__doc__ and GLOSSARY_LINE in [t.get_text() for t in ax_s.figure.legends[0].get_texts()]
