"""The book's words against its data: every number the prose quotes, and every comparison it makes with cuBLAS,
is checked against the recorded results, so a re-recorded run that changes the story fails here until the prose
is changed too. Runs without a GPU (it reads results/)."""
import json
import re

import pytest

from helpers import results
from helpers.registry import ROOT

FINAL = "10_beyond_cublas"
TIMED = ("gemm", "baselines", "ceilings", "crosscheck", "sustained", "variants")


@pytest.fixture(scope="module")
def data():
    return results.load(results.path_for())


def _markdown(name: str) -> str:
    nb = json.loads((ROOT / "chapters" / name).read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def _ratio(data, rung, m, n=None, k=None):
    return data["gemm"][results.gemm_key(rung, m, n or m, k or m)]["ratio"]


def _l2(data, who, n, field):
    return data["l2_schedule"][f"{who}@{n}"][field]


def test_the_book_shows_one_run(data):
    runs = {e.get("run") for section in TIMED for e in data.get(section, {}).values()}
    assert len(runs) == 1 and None not in runs, f"entries from several runs (or none): {runs}"


def test_every_row_was_timed_by_gpu_time_against_a_same_output_cublas(data):
    for key, e in data["gemm"].items():
        assert e["method"] == "gpu-time", key
        assert f"{e['dtype']} in" in e["cublas_ref"], (key, e["cublas_ref"])
        out = "bf16" if e["rung"].startswith("10_") else "fp32"
        assert f"{out} out" in e["cublas_ref"], (key, e["cublas_ref"])
        assert e["correct"], key


def test_one_cublas_baseline_per_key_and_the_rows_own_rounds_agree_within_3_percent(data):
    groups: dict = {}
    for e in data["gemm"].values():
        groups.setdefault((e["cublas_ref"], e["m"], e["n"], e["k"]), []).append(e)
    for key, rows in groups.items():
        assert len({e["cublas_tflops"] for e in rows}) == 1, key  # the run's baseline, shared
        witness = [e["cublas_row_tflops"] for e in rows]
        assert max(witness) / min(witness) < 1.03, (key, witness)
        assert all(abs(w / rows[0]["cublas_tflops"] - 1) < 0.03 for w in witness), (key, witness)


def test_the_harness_agrees_with_nsight_compute(data):
    for n in (4096, 8192):
        e = data["crosscheck"][f"{FINAL}@{n}"]
        assert e["ok"] and abs(e["harness_ratio"] - e["ncu_ratio"]) <= 0.03, e
        assert abs(e["harness_ratio"] - _ratio(data, FINAL, n)) < 0.03, (e["harness_ratio"], _ratio(data, FINAL, n))


def test_level_with_cublas_and_not_ahead_is_what_the_final_rung_measured(data):
    texts = {name: (ROOT / name).read_text() for name in ("intro.md", "README.md")}
    texts["chapter 10"] = _markdown("10_beyond_cublas.ipynb")
    texts["chapter 11"] = _markdown("11_the_climb.ipynb")
    ratios = [_ratio(data, FINAL, n) for n in (4096, 8192)]
    for where, text in texts.items():
        if "level with cuBLAS" in text:
            assert all(0.97 <= x <= 1.03 for x in ratios), (where, ratios)
        if "within about 2%" in text:
            assert all(abs(x - 1) <= 0.025 for x in ratios), (where, ratios)
        if re.search(r"not ahead|below it everywhere|behind it", text):
            assert all(x < 1 for x in ratios), (where, ratios)
        assert not re.search(r"\bbeats? cuBLAS|ahead of cuBLAS|above cuBLAS", text), where


def test_chapter_10_profile_numbers_are_the_recorded_ones(data):
    text = _markdown("10_beyond_cublas.ipynb")
    tp = lambda who, n: f"{_l2(data, who, n, 'tensor_pipe_pct'):.0f}%"  # noqa: E731
    expected = [
        f"{tp('09_setmaxnreg', 4096)} → {tp('10_persistent', 4096)} at N=4096",
        f"{tp('09_setmaxnreg', 8192)} → {tp('10_persistent', 8192)} at 8192",
        f"({_l2(data, '10_persistent', 8192, 'l2_hit_pct'):.0f}% → {_l2(data, '10_grouped', 8192, 'l2_hit_pct'):.0f}%)",
        f"({_l2(data, '10_persistent', 8192, 'dram_read_gb'):.2f} → {_l2(data, '10_grouped', 8192, 'dram_read_gb'):.2f} GB)",
        f"({tp('10_persistent', 8192)} → {tp('10_grouped', 8192)})",
        f"to {_l2(data, '10_cluster', 8192, 'dram_read_gb'):.2f} GB",
        f"back at {tp('10_cluster', 8192)} at N=8192",
        f"from {tp('10_cluster', 4096)} to {tp(FINAL, 4096)} at N=4096",
        f"from {tp('10_cluster', 8192)} to\n  {tp(FINAL, 8192)} at 8192",
        f"cuBLAS's {tp('cublas', 4096)} and {tp('cublas', 8192)}",
    ]
    for phrase in expected:
        assert phrase in text, phrase


def test_chapter_11_claims_hold(data):
    text = _markdown("11_the_climb.ipynb")
    assert "falls below half of cuBLAS" in text
    for shape in ((12288,), (16384,), (4096, 16384, 4096)):
        assert _ratio(data, "09_setmaxnreg", *shape) < 0.5, shape
    assert "within a few percent of cuBLAS at every size from 4096 up, but\nbelow it everywhere" in text
    for n in (4096, 8192, 12288, 16384):
        assert 0.9 < _ratio(data, FINAL, n) < 1, n
    assert "the gap narrows to a few points" in text and 0.9 < _ratio(data, FINAL, 2048) < 1
    clusters = data["grids"][FINAL]["clusters"]
    assert f"16 cluster tiles leave {clusters - 16} of the {clusters} clusters" in text
    won_1024 = data["gemm"][results.gemm_key(FINAL, 1024, 1024, 1024)]["cublas_ref"]
    assert "128 × 64 tiles" in text and "tile (128, 64)" in won_1024, won_1024


def test_chapter_00_explains_its_gaps_with_what_it_recorded(data):
    c = data["ceilings"]
    zero, real = c["hgmma_peak"], c["hgmma_peak_random"]
    assert real["value"] < zero["value"] and real["sm_clock_mhz"] < zero["sm_clock_mhz"]
    assert real["power_w"] > zero["power_w"]  # random operands draw more power: the reason for the lower clock
    burst, steady = c["cublas_bf16_8192"], c["cublas_bf16_8192_back_to_back"]
    assert "short bursts run faster" in _markdown("00_the_machine.ipynb")
    assert steady["value"] < burst["value"], (steady["value"], burst["value"])
