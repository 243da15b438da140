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
    from helpers import rung
    for key, e in data["gemm"].items():
        assert e["method"] == "gpu-time", key
        assert f"{e['dtype']} in" in e["cublas_ref"], (key, e["cublas_ref"])
        out = rung(e["rung"]).out_dtype
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
        if "within about 3%" in text:
            assert all(abs(x - 1) <= 0.03 for x in ratios), (where, ratios)
        if re.search(r"not ahead|below it everywhere|behind it", text):
            assert all(x < 1 for x in ratios), (where, ratios)
        assert not re.search(r"\bbeats? cuBLAS|ahead of cuBLAS|above cuBLAS", text), where


def test_chapter_10_profile_numbers_are_the_recorded_ones(data):
    text = _markdown("10_beyond_cublas.ipynb")
    tp = lambda who, n: f"{_l2(data, who, n, 'tensor_pipe_pct'):.0f}%"  # noqa: E731
    hit = lambda who, n: f"{_l2(data, who, n, 'l2_hit_pct'):.0f}%"  # noqa: E731
    gb = lambda who, n: f"{_l2(data, who, n, 'dram_read_gb'):.2f} GB"  # noqa: E731
    expected = [
        f"rung 09 kept the pipe {tp('09_setmaxnreg', 8192)} busy against {tp('10_persistent', 8192)}",
        f"back at {tp('10_cluster', 8192)} at N=8192",
        f"({hit('10_persistent', 8192)} → {hit('10_grouped', 8192)})",
        f"({gb('10_persistent', 8192)[:-3]} → {gb('10_grouped', 8192)})",
        f"({tp('10_persistent', 8192)} → {tp('10_grouped', 8192)})",
        f"to {gb('10_cluster', 8192)}",
        f"back at {tp('10_cluster', 8192)} at N=8192",
        f"from {tp('10_cluster', 4096)} to {tp(FINAL, 4096)} at N=4096",
        f"from {tp('10_cluster', 8192)} to\n  {tp(FINAL, 8192)} at 8192",
        f"about as busy as in rung 09\n  ({tp('09_setmaxnreg', 4096)} → {tp('10_persistent', 4096)})",
        f"cuBLAS's {tp('cublas', 4096)} and {tp('cublas', 8192)}",
        f"as busy as before ({tp('10_stmatrix', 4096)} at 4096, {tp('10_stmatrix', 8192)} at 8192)",
    ]
    for phrase in expected:
        assert phrase in text, phrase
    g09, gp = (data["gemm"][results.gemm_key(r, 8192, 8192, 8192)]["tflops"] for r in ("09_setmaxnreg", "10_persistent"))
    assert "a little behind\n  rung 09 there" in text and 0.9 < gp / g09 < 1, (gp, g09)
    assert abs(_l2(data, "09_setmaxnreg", 8192, "tensor_pipe_pct") - _l2(data, "10_persistent", 8192, "tensor_pipe_pct")) < 3
    assert abs(_l2(data, "09_setmaxnreg", 4096, "tensor_pipe_pct") - _l2(data, "10_persistent", 4096, "tensor_pipe_pct")) < 3


def test_chapter_10_steps_5_and_6_claims_hold(data):
    """stmatrix: the STS count Nsight Compute saw is the model's, then zero, and nothing else moved. A tile per
    shape: the factors, ratios and busy fractions the prose quotes at N = 1024 and 3072."""
    text = " ".join(_markdown("10_beyond_cublas.ipynb").split())
    assert "exactly the 262,144 `STS` warp instructions the model predicts at N = 4096" in text
    assert _l2(data, "10_tma_store", 4096, "shared_store_inst") == 262144 == (4096 // 128) * (4096 // 256) * 8 * 64
    assert _l2(data, "10_stmatrix", 4096, "shared_store_inst") == 0
    for n in (4096, 8192):
        assert abs(_l2(data, "10_tma_store", n, "tensor_pipe_pct") - _l2(data, "10_stmatrix", n, "tensor_pipe_pct")) < 0.5
        assert abs(_ratio(data, "10_stmatrix", n) - _ratio(data, "10_tma_store", n)) < 0.005  # "a few tenths of a point"
    g = lambda r, n: data["gemm"][results.gemm_key(r, n, n, n)]  # noqa: E731
    f3072, f1024 = (g(FINAL, n)["tflops"] / g("10_stmatrix", n)["tflops"] for n in (3072, 1024))
    assert f"{f3072:.2f} times as fast as the 128 × 256 one (the napkin said 1.29)" in text and 1.2 <= f3072 <= 1.3
    assert f"gains a factor of {f1024:.2f}, less than the 1.7 the napkin allows" in text and f1024 < 1.7
    assert g(FINAL, 3072)["tile"] == [128, 192] and g(FINAL, 1024)["tile"] == [128, 128]
    assert g(FINAL, 4096)["tile"] == [128, 256] and g(FINAL, 8192)["tile"] == [128, 256]
    assert "from three quarters of cuBLAS to 94%" in text and round(100 * _ratio(data, FINAL, 3072)) == 94
    assert 0.72 <= _ratio(data, "10_stmatrix", 3072) <= 0.78
    busy = lambda who: round(_l2(data, who, 3072, "sm_busy_pct"))  # noqa: E731
    assert f"SMs busy {busy(FINAL)}% of the kernel instead of {busy('10_stmatrix')}%" in text
    assert f"cuBLAS's own {busy('cublas')}%" in text
    assert (f"N = 3072 from {round(100 * _ratio(data, '10_stmatrix', 3072))}% to {round(100 * _ratio(data, FINAL, 3072))}% "
            f"of cuBLAS and N = 1024 from {round(100 * _ratio(data, '10_stmatrix', 1024))}% to "
            f"{round(100 * _ratio(data, FINAL, 1024))}%") in text


def test_the_tile_rates_the_registry_uses_are_what_the_run_measured(data):
    from helpers.registry import MID_RATE, NARROW_RATE
    v = lambda change, n: data["variants"][f"{FINAL}:{json.dumps(change, sort_keys=True)}@{n}"]["tflops"]  # noqa: E731
    for change, rate in (({"BN": 192, "WGMMA_N": 192}, MID_RATE), ({"BN": 128, "WGMMA_N": 128}, NARROW_RATE)):
        got = [v(change, n) / v({}, n) for n in (6144, 12288)]
        assert all(abs(x - rate) <= 0.03 for x in got), (change, got, rate)
    text = _markdown("10_beyond_cublas.ipynb")
    assert "about 0.97 for 128 × 192 and 0.84-0.86 for 128 × 128" in " ".join(text.split())
    got = {c: [v(ch, n) / v({}, n) for n in (6144, 12288)] for c, ch in ((192, {"BN": 192, "WGMMA_N": 192}),
                                                                       (128, {"BN": 128, "WGMMA_N": 128}))}
    assert all(abs(x - 0.97) < 0.01 for x in got[192]) and all(0.835 <= x < 0.865 for x in got[128]), got


def test_chapter_10_power_and_variant_claims_hold(data):
    text = _markdown("10_beyond_cublas.ipynb")
    sus = [data["sustained"][f"{FINAL}@{n}"] for n in (4096, 8192)]
    assert "about 700-750 W" in text and "1,320-1,370 MHz" in text and "lose 11-15% of their burst rate" in text
    for s in sus:
        assert all(700 <= s[w] <= 750 for w in ("power_w", "cublas_power_w")), s
        assert all(1320 <= s[c] <= 1370 for c in ("sm_clock_mhz", "cublas_sm_clock_mhz")), s
        burst = data["gemm"][results.gemm_key(FINAL, s["n"], s["n"], s["n"])]
        for held, fast in ((s["tflops"], burst["tflops"]), (s["cublas_tflops"], burst["cublas_tflops"])):
            assert 0.11 <= 1 - held / fast <= 0.15, (held, fast)
        assert 0.98 <= s["ratio"] < 1, s["ratio"]  # "behind it by under two points"
    assert (f"{sus[0]['pj_per_flop']:.2f} against {sus[0]['cublas_pj_per_flop']:.2f} at N=4096, "
            f"{sus[1]['pj_per_flop']:.2f} against {sus[1]['cublas_pj_per_flop']:.2f} at 8192") in text
    assert "slightly more picojoules per FLOP" in text and all(s["pj_per_flop"] > s["cublas_pj_per_flop"] for s in sus)
    bursts = [data["gemm"][results.gemm_key(FINAL, s["n"], s["n"], s["n"])][c] for s in sus
              for c in ("sm_clock_mhz", "cublas_sm_clock_mhz")]
    assert f"the SM clock falls from the {min(bursts):,.0f}-{max(bursts):,.0f} MHz of\nthe bursts" in text
    roof = data["ceilings"]["hgmma_peak_random"]["value"]
    shares = [t / roof for s in sus for t in (s["tflops"], s["cublas_tflops"])]
    assert "75-79% of the power-limited wgmma ceiling" in text and all(0.745 <= x < 0.795 for x in shares), shares
    v = lambda change, n: data["variants"][f"{FINAL}:{json.dumps(change, sort_keys=True)}@{n}"]["ratio"]  # noqa: E731
    base = {n: v({}, n) for n in (2048, 4096, 8192)}
    assert "moves the rung by under 2 points" in text
    assert all(abs(v({"GROUP_M": g}, n) - base[n]) < 0.02 for g in (4, 16) for n in base)
    assert f"costs {100 * (base[8192] - v({'SCHEDULE': 0}, 8192)):.0f} points at N=8192" in text
    assert (f"costs {100 * (base[4096] - v({'CLUSTER': 1}, 4096)):.0f}\npoints at N=4096 and "
            f"{100 * (base[8192] - v({'CLUSTER': 1}, 8192)):.0f} at 8192") in text
    worst = max(round(100 * (base[n] - v({"C_BUFFERS": 4}, n))) for n in base)
    assert f"four C buffers never help, costing up\nto {worst} points" in text
    assert all(v({"C_BUFFERS": 4}, n) < base[n] for n in base)
    assert "lands at 92-94% of cuBLAS" in text and f"Clusters of one reach {100 * v({'CLUSTER': 1}, 2048):.0f}% there" in text
    assert all(0.915 <= v(c, 2048) < 0.945 for c in ({}, {"GROUP_M": 4}, {"GROUP_M": 16}, {"SCHEDULE": 0}, {"C_BUFFERS": 4}))
    assert v({"CLUSTER": 1}, 2048) > base[2048] and "though at full waves they\nlose 6-12 points" in text
    assert f"running {100 * (v({'CLUSTER': 1}, 2048) - base[2048]):.1f} points faster" in " ".join(text.split())
    assert all(6 <= round(100 * (base[n] - v({"CLUSTER": 1}, n))) <= 12 for n in (4096, 8192))


def test_chapter_11_claims_hold(data):
    from helpers.tiles import waves
    text = _markdown("11_the_climb.ipynb")
    assert "falls below half of cuBLAS" in text
    for shape in ((12288,), (16384,), (4096, 16384, 4096)):
        assert _ratio(data, "09_setmaxnreg", *shape) < 0.5, shape
    assert "level with cuBLAS, within about 3%, at every size from 4096 up to\n16384" in text
    for n in (4096, 6144, 8192, 12288, 16384):
        assert abs(_ratio(data, FINAL, n) - 1) <= 0.031, n  # "within about 3%"
    gap = f"{100 * (1 - _ratio(data, FINAL, 2048)):.0f}"
    assert f"the gap narrows to {gap} points" in text
    clusters = data["grids"][FINAL]["clusters"]
    narrow = waves(1024, 1024, 256, 128, clusters)
    assert f"32 cluster tiles leave {clusters - narrow['tiles']} of the\n{clusters} clusters" in text and narrow["tiles"] == 32
    w, mid = waves(3072, 3072, 256, 256, clusters), waves(3072, 3072, 256, 192, clusters)
    assert f"busy only {w['efficiency']:.0%} of that time" in text and w["busiest"] == 3 == mid["busiest"]
    assert f"keep it {mid['efficiency']:.0%} busy" in text
    assert f"reaches {100 * _ratio(data, FINAL, 3072):.0f}% of cuBLAS" in text
    assert f"{gap} behind at 2048, {100 * (1 - _ratio(data, FINAL, 3072)):.0f} at 3072" in text
    odd = {s: _ratio(data, FINAL, *s) for s in ((8192, 8192, 1024), (4096, 16384, 4096), (2048, 8192, 8192),
                                                  (12288, 12288, 4096))}
    assert f"{100 * (1 - odd[(8192, 8192, 1024)]):.0f} points behind on the short-K shape" in text
    assert "within 4 points on three of the four non-square shapes" in text
    assert all(0 <= 1 - r <= 0.04 for s, r in odd.items() if s[2] != 1024), odd


def test_chapter_00_explains_its_gaps_with_what_it_recorded(data):
    c = data["ceilings"]
    zero, real = c["hgmma_peak"], c["hgmma_peak_random"]
    assert real["value"] < zero["value"] and real["sm_clock_mhz"] < zero["sm_clock_mhz"]
    assert real["power_w"] > zero["power_w"]  # random operands draw more power: the reason for the lower clock
    burst, steady = c["cublas_bf16_8192"], c["cublas_bf16_8192_back_to_back"]
    assert "short bursts run faster" in _markdown("00_the_machine.ipynb")
    assert steady["value"] < burst["value"], (steady["value"], burst["value"])


def test_the_cli_replays_the_final_rung_at_every_size_the_speed_target_names():
    import subprocess
    import sys
    shapes = [["--shape", *map(str, s)] for s in ((8192, 8192, 1024), (4096, 16384, 4096), (2048, 8192, 8192),
                                                   (12288, 12288, 4096))]
    out = subprocess.run([sys.executable, "-m", "helpers", "ladder", "--replay", "--json", "--plot", "", "--rungs", FINAL,
                          "--n", "2048", "3072", "4096", "6144", "8192", "12288", "16384", *sum(shapes, [])],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert len(rows) == 11 and all(r["method"] == "gpu-time" and r["rung"] == FINAL for r in rows)
    assert all(len(r["tflops_iqr"]) == 2 and r["tflops_iqr"][0] <= r["tflops"] <= r["tflops_iqr"][1] for r in rows)


def test_the_hopper_chapters_compare_rungs_as_the_run_measured(data):
    t = lambda r, n: data["gemm"][results.gemm_key(r, n, n, n)]["tflops"]  # noqa: E731
    sizes = (4096, 8192)
    ch06 = _markdown("06_wgmma.ipynb")
    assert "Both wgmma rungs are faster than rung 05 at both sizes" in ch06
    assert all(t(w, n) > t("05_cp_async", n) for w in ("06_wgmma_m64n64", "06_wgmma_wide") for n in sizes)
    assert "The wide rung is faster than the narrow one at both sizes" in ch06
    assert all(t("06_wgmma_wide", n) > t("06_wgmma_m64n64", n) for n in sizes)
    assert "well below its two-thirds shared-memory bound" in ch06
    assert all(t("06_wgmma_m64n64", n) < 0.6 * data["ceilings"]["hgmma_peak"]["value"] for n in sizes)
    ch07 = _markdown("07_tma.ipynb")
    assert "ahead at both sizes\nby about an eighth to a quarter" in ch07  # the napkin's words
    assert "In the run recorded here the napkin holds only at\nN = 4096" in ch07
    assert 1.125 <= t("07_tma", 4096) / t("06_wgmma_wide", 4096) <= 1.25
    behind = 1 - t("07_tma", 8192) / t("06_wgmma_wide", 8192)
    assert f"N = 4096 (a seventh); at 8192 rung 07 falls behind rung 06, by {100 * behind:.0f}%" in " ".join(ch07.split())
    assert 0.13 <= t("07_tma", 4096) / t("06_wgmma_wide", 4096) - 1 <= 0.16 and behind > 0
    iqr = data["gemm"][results.gemm_key("07_tma", 8192, 8192, 8192)]["tflops_iqr"]
    assert f"its rounds spread over {iqr[0]:.1f}-{iqr[1]:.1f} TFLOP/s" in " ".join(ch07.split())
    ch08 = _markdown("08_warp_specialization.ipynb")
    assert "rung 08 is slower than rung 07 at both sizes, and much slower at N =\n8192" in ch08
    assert all(t("08_warp_specialized", n) < t("07_tma", n) for n in sizes)
    assert t("08_warp_specialized", 8192) < 0.8 * t("07_tma", 8192)


def test_the_warp_level_chapters_compare_rungs_as_the_run_measured(data):
    t = lambda r, n: data["gemm"][results.gemm_key(r, n, n, n)]["tflops"]  # noqa: E731
    c = data["ceilings"]
    sizes = (4096, 8192)
    ch04 = _markdown("04_swizzle.ipynb")
    assert "still ran slower than chapter 02's padded WMMA kernel" in ch04
    assert all(t("03_mma_sync", n) < t("02_wmma_smem", n) < t("04_swizzle", n) for n in sizes)
    assert "The swizzle roughly doubles the rate at both sizes" in ch04
    assert all(1.8 <= t("04_swizzle", n) / t("03_mma_sync", n) <= 2.4 for n in sizes)
    cycles = lambda r: 2 * 128 * 128 * 32 / (r * 1e12 / (132 * 1.98e9))  # noqa: E731 - one k tile, as the text converts
    saved = cycles(t("03_mma_sync", 4096)) - cycles(t("04_swizzle", 4096))
    assert "within about a tenth of the predicted 1,664 cycles" in ch04 and abs(saved / 1664 - 1) <= 0.1, saved
    assert "well over twice its 512 cycles" in ch04 and cycles(t("04_swizzle", 4096)) > 2 * 512
    assert "below a third of the `mma.sync`\nprobe" in ch04 and t("04_swizzle", 4096) < c["hmma_peak"]["value"] / 3
    ch05 = _markdown("05_cp_async.ipynb")
    assert "The double buffer is the big step over rung 04 at both sizes" in ch05
    factor = lambda a, b, n: f"×{t(b, n) / t(a, n):.2f}"  # noqa: E731
    chain = ("04_swizzle", "05_warp_64x64", "05_one_stage", "05_double_buffer", "05_cp_async")
    said = {"05_warp_64x64": "The warp tile** buys", "05_one_stage": "on its own** buys",
            "05_double_buffer": "The overlap** buys", "05_cp_async": "The depth** buys"}
    for a, b in zip(chain, chain[1:]):
        assert f"{said[b]} {factor(a, b, 4096)} at N = 4096 and {factor(a, b, 8192)} at 8192" in ch05 \
            or f"{said[b]} {factor(a, b, 4096)} and {factor(a, b, 8192)}" in ch05, b
    assert all(t("05_one_stage", n) / t("05_warp_64x64", n) < 1.05 for n in sizes)  # "about x1.0"
    assert all(t("05_warp_64x64", n) / t("04_swizzle", n) < 2 for n in sizes)      # "short of the x2 ceiling"
    for n in sizes:
        first, second = t("05_double_buffer", n) / t("04_swizzle", n), t("05_cp_async", n) / t("05_double_buffer", n)
        assert first > second > 1, (n, first, second)
    assert all(t(r, n) < 0.7 * c["hmma_peak"]["value"] for r in ("05_double_buffer", "05_cp_async") for n in sizes)
    l2 = c["l2_read"]["value"]
    assert "most of the L2 read bandwidth" in ch05 and 0.5 < t("05_cp_async", 4096) / 64 / l2 < 1
    assert 64 * l2 < 0.8 * c["hmma_peak"]["value"] and t("05_cp_async", 4096) < 64 * l2
    assert "about twice the L2 read bandwidth" in ch05 and 1.8 <= 15.5 / l2 <= 2.4
    assert "and the profile agrees" in ch05 and 11 <= data["profile"]["05_cp_async"]["warps_active_pct"] <= 14


def test_chapter_09_compares_rungs_as_the_run_measured(data):
    from helpers.timeline import summary
    t = lambda r, n: data["gemm"][results.gemm_key(r, n, n, n)]["tflops"]  # noqa: E731
    ch09 = _markdown("09_setmaxnreg.ipynb")
    assert "Rung 09 is faster than rung 08 at both sizes" in ch09
    assert 1.15 <= t("09_setmaxnreg", 4096) / t("08_warp_specialized", 4096) < 4 / 3
    assert t("09_setmaxnreg", 8192) / t("08_warp_specialized", 8192) > 1.5
    assert "rung 09 is ahead at both sizes: by 9% at N = 4096" in ch09 and "by a third at 8192" in ch09
    assert round(t("09_setmaxnreg", 4096) / t("07_tma", 4096) - 1, 2) == 0.09
    assert abs(t("09_setmaxnreg", 8192) / t("07_tma", 8192) - 4 / 3) < 0.03
    said = " ".join(ch09.split())
    for n, where in ((4096, "of it at N = 4096"), (8192, "at 8192")):
        assert f"×{t('09_setmaxnreg', n) / t('08_same_tile', n):.2f} {where}" in said, n
    s08, s09 = (summary(data["timeline"][f"{r}@4096"]) for r in ("08_warp_specialized", "09_setmaxnreg"))
    assert "median tile close to\nthat floor" in ch09 and max(s09["cycles_per_tile"]) <= 1.15 * 1024
    share = lambda s: sum(w / c for w, c in zip(s["wait_for_data_cycles"], s["cycles_per_tile"])) / 2  # noqa: E731
    assert "much smaller share of each tile than in rung 08" in " ".join(ch09.split())
    assert share(s09) < 0.55 * share(s08), (share(s09), share(s08))  # about half as much waiting per tile


def test_chapters_02_and_03_compare_rungs_as_the_run_measured(data):
    t = lambda r, n: data["gemm"][results.gemm_key(r, n, n, n)]["tflops"]  # noqa: E731
    c = data["ceilings"]
    sizes = (4096, 8192)
    ch02 = " ".join(_markdown("02_wmma.ipynb").split())
    assert "The naive rung is slower than chapter 01's warptiled FP32 kernel at both sizes" in ch02
    assert all(t("02_wmma_naive", n) < t("01_warptiled", n) for n in sizes)
    assert "more than four times faster than the naive one" in ch02
    assert all(t("02_wmma_smem", n) / t("02_wmma_naive", n) > 4 for n in sizes)
    assert "about three times faster than the warptiled rung" in ch02
    assert all(2.8 <= t("02_wmma_smem", n) / t("01_warptiled", n) <= 3.2 for n in sizes)
    assert "more than twice chapter 00's FFMA probe" in ch02
    assert all(t("02_wmma_smem", n) > 2 * c["ffma_peak"]["value"] for n in sizes)
    assert "about a fifth" in ch02 and all(0.17 <= t("02_wmma_smem", n) / c["hmma_peak"]["value"] <= 0.23 for n in sizes)
    l2 = c["l2_read"]["value"]
    assert f"about {32 * l2:.0f} TFLOP/s at the recorded {l2:.2f} TB/s" in ch02  # the solution's cap for the smem rung
    assert "Its first kernel is still slower than this padded rung" in ch02
    ch03 = " ".join(_markdown("03_mma_sync.ipynb").split())
    assert "rung 03 is slower than padded WMMA at N = 4096" in ch03 and t("03_mma_sync", 4096) < t("02_wmma_smem", 4096)
    assert all(t("03_mma_sync", n) < t("02_wmma_smem", n) for n in sizes)
    assert "practically the same rate at both sizes" in ch03
    assert abs(t("03_mma_sync", 8192) / t("03_mma_sync", 4096) - 1) < 0.01
    ceiling = 2 * 128 * 128 * 32 / 2176 * 132 * 1.98e9 / 1e12  # the napkin's shared-memory bound, TFLOP/s
    assert "126 TFLOP/s" in ch03 and round(ceiling) == 126 and all(t("03_mma_sync", n) < ceiling for n in sizes)
    bc = data["bank_conflicts"]["03_mma_sync"]
    assert abs(bc["measured_degree"] - bc["computed_degree"]) < 0.01


def test_chapter_08_same_tile_claims_hold(data):
    """The tile held fixed: the roles alone against rung 07, the smaller tile, and setmaxnreg alone."""
    t = lambda r, n: data["gemm"][results.gemm_key(r, n, n, n)]["tflops"]  # noqa: E731
    text = " ".join(_markdown("08_warp_specialization.ipynb").split())
    roles = {n: t("08_same_tile", n) / t("07_tma", n) for n in (4096, 8192)}
    assert f"make the kernel {roles[4096]:.2f} times as fast as rung 07" in text and 1.05 <= roles[4096] <= 1.15
    assert f"the same comparison gives {roles[8192]:.2f}" in text and roles[8192] > roles[4096]
    shrink = {n: t("08_warp_specialized", n) / t("08_same_tile", n) for n in (4096, 8192)}
    assert "costs a fifth at 4096 and two fifths at 8192" in text
    assert 0.75 <= shrink[4096] <= 0.85 and 0.55 <= shrink[8192] <= 0.65, shrink
    alone = [t("09_setmaxnreg", n) / t("08_same_tile", n) for n in (4096, 8192)]
    assert f"(×{alone[0]:.2f} and ×{alone[1]:.2f})" in text and all(abs(x - 1) < 0.02 for x in alone)


def test_chapter_01_rung_5_credits_what_the_sass_and_registers_show(data):
    from helpers import build, rung
    from helpers.explore import blocks_per_sm
    text = " ".join(_markdown("01_fp32_simt.ipynb").split())
    b4, b5 = (build(rung(r)) for r in ("01_blocktile_2d", "01_vectorized"))
    for b, r in ((b4, "01_blocktile_2d"), (b5, "01_vectorized")):
        inv = b.inventory(rung(r).entry)
        assert inv.get("LDS.128") == 32 and not any(op == "LDS" or op.startswith("LDS.32") for op in inv), inv
    regs = [b.resources[rung(r).entry].registers for b, r in ((b4, "01_blocktile_2d"), (b5, "01_vectorized"))]
    assert f"the register count: {regs[1]} instead of {regs[0]}" in text
    fits = [blocks_per_sm(x, 256, 8192 + 1024)["blocks"] for x in regs]
    assert fits == [1, 2] and "one block per SM" in text and "two blocks fit" in text
    t = lambda r, n: data["gemm"][results.gemm_key(r, n, n, n)]["tflops"]  # noqa: E731
    assert "more than doubles" in text and all(t("01_vectorized", n) > 2 * t("01_blocktile_2d", n) for n in (4096, 8192))


def test_chapter_10_ping_pong_napkin_quotes_the_recorded_l2_ceiling(data):
    text = " ".join(_markdown("10_beyond_cublas.ipynb").split())
    l2 = data["ceilings"]["l2_read"]["value"]
    assert f"above the {l2:.1f} TB/s that chapter 00 measured for L2" in text
    need = lambda bytes_per_k_step, rows: 790e12 * bytes_per_k_step / (2 * rows * 256 * 64) / 1e12  # noqa: E731
    assert round(need(32768, 128), 1) == 6.2 and round(need(24576, 64), 1) == 9.3 and need(24576, 64) > l2
