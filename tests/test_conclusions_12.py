"""Chapter 12's conclusions, as predicates over the book's run and the experiments' records. The chapter renders
its measured numbers from the run (helpers.prose, hidden-input cells that nbval holds to the replayed run), so a
re-recorded run needs no edit here unless a conclusion the chapter teaches no longer holds; each assertion says
which one. Runs without a GPU."""
import json
import re

import numpy as np
import pytest

from helpers import results
from helpers.registry import ROOT

from conftest import prose, says

FP8, BF16 = "12_fp8", "10_overlap"  # rung 12 and rung 10 as the path ends, launched alike
BAR = 3  # points: the cross-check's bar, as the chapter states it (tools/crosscheck.py's GAP)


@pytest.fixture(scope="module")
def data():
    return results.load(results.path_for())


@pytest.fixture(scope="module")
def cells():
    return json.loads((ROOT / "chapters" / "12_fp8.ipynb").read_text())["cells"]


@pytest.fixture(scope="module")
def text(cells):
    """What a reader reads: the markdown cells and the saved Markdown of the rendered-prose cells."""
    return prose("\n".join(_shown(c) for c in cells))


def _shown(cell: dict) -> str:
    if cell["cell_type"] == "markdown":
        return "".join(cell["source"])
    if "remove-input" in cell.get("metadata", {}).get("tags", []):
        return "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in cell.get("outputs", []))
    return ""


def _row(data, rung, n):
    return data["gemm"][results.gemm_key(rung, n, n, n)]


def _contenders(data, n):
    return data["baselines"][f"e4m3-TN-bf16@{n}x{n}x{n}"]["contenders"]


def _algorithm(label):
    """(rank, of, tile) from a cuBLASLt label: "..., tile 128x128, cluster 1x2x1; the heuristic's #5 of 8 ..."."""
    m = re.search(r"tile (\d+)x(\d+), cluster [\dx]+; the heuristic's #(\d+) of (\d+)", label)
    assert m, f"no algorithm in the label {label!r}"
    return int(m[3]), int(m[4]), f"{m[1]} × {m[2]}"


def test_chapter_12_renders_its_measured_paragraphs(cells):
    """Every paragraph that states a measured number is a rendered-prose cell whose output nbval checks, and no
    markdown cell quotes a measured rate, ratio or share (what stays typed: the codec's constants, the method's)."""
    shown = [c for c in cells if "remove-input" in c.get("metadata", {}).get("tags", [])]
    assert len(shown) >= 20 and all("nbval-check-output" in c["metadata"]["tags"] and c["outputs"] for c in shown)
    md = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    typed = set(re.findall(r"(?<![\d.])\d+\.\d+(?![\d.])", md.split("## Exercises")[0]))
    assert typed <= {"6.25", "1.75"}, f"a markdown cell of chapter 12 types a number: {typed}"
    assert {"## Why an FP8 tensor carries a scale", "## Check and time", "## What the profile says",
            "## Promoted accumulation", "## Summary"} <= {ln.strip() for ln in md.splitlines()}


def test_chapter_12_climb_and_target(data, text):
    """FP8 nearly doubles rung 10 but stays under the 2x napkin; the reference is cuBLASLt's fast-accumulation mode,
    the strongest of its candidate algorithms in the same rounds (at 4096 the fastest of those its rounds timed, the
    heuristic's first six and autotune's pick in the recorded run, as the label says: on the H100 the winner was
    autotune's pick too, #5 of 8, on the H200 it is not, #4 of 8; the paragraph says which); rung 12 is level with it
    within a point at both sizes (the 1.00x target met or just missed, run to run: 0.995 / 0.998 in one lease of the
    H200 run, 0.998 / 1.001 in the next, the kernel unchanged) and leads cuBLASLt's promoted default."""
    up = {n: _row(data, FP8, n)["tflops"] / _row(data, BF16, n)["tflops"] for n in (4096, 8192)}
    assert all(1.7 < u < 2.0 for u in up.values()), f"FP8 no longer nearly doubles rung 10 under the napkin's 2: {up}"
    assert up[8192] > up[4096], f"the FP8 speed-up is no longer larger at 8192 (the epilogue's share): {up}"
    ratio = {n: _row(data, FP8, n)["ratio"] for n in (4096, 8192)}
    assert all(abs(x - 1) < 0.01 for x in ratio.values()), f"rung 12 is no longer level with the target: {ratio}"
    for n in (4096, 8192):  # the reference is the fast-accumulation mode at both sizes
        assert "fast accumulation" in _row(data, FP8, n)["cublas_ref"], f"the reference at {n} is not fast accumulation"
    promoted = {n: _row(data, FP8, n)["tflops"] / max(t["tflops"] for name, t in _contenders(data, n).items()
                                                       if "fast" not in name) for n in (4096, 8192)}
    assert min(promoted.values()) > 1, f"rung 12 no longer leads cuBLASLt's promoted default: {promoted}"
    ref4 = _row(data, FP8, 4096)["cublas_ref"]
    rank, of, _ = _algorithm(ref4)
    timed = [k for k in _contenders(data, 4096) if "fast heuristic" in k]  # the fast-accumulation candidates
    assert f"the fastest of {len(timed)} cuBLASLt algorithms" in ref4, \
        f"the 4096 reference is no longer the fastest of the {len(timed)} candidates its rounds timed: {ref4!r}"
    ranks = {int(k.rsplit("#", 1)[1]) if "#" in k else 1 for k in timed}
    assert rank in ranks, f"the reference was not a timed algorithm: {ref4}"
    assert rank > 1, "at 4096 the rounds no longer crown another algorithm than the heuristic's first"
    first = _row(data, FP8, 4096)["tflops"] / _contenders(data, 4096)["cuBLASLt FP8 fast heuristic"]["tflops"]
    assert 0.98 < first < 1.02, f"rung 12 is no longer close to the heuristic's first choice at 4096: {first:.3f}"
    rank8, of8, _ = _algorithm(_row(data, FP8, 8192)["cublas_ref"])
    assert (rank8, of8) == (1, 1) and "fastest of" not in _row(data, FP8, 8192)["cublas_ref"]
    c8 = _contenders(data, 8192)
    assert abs(c8["cuBLASLt FP8 fast autotuned"]["tflops"] / c8["cuBLASLt FP8 fast heuristic"]["tflops"] - 1) < 0.002
    assert says(text, "times every candidate algorithm the heuristic offers (runs before this rule timed its first six "
                      "and the autotuner's pick, and each row's label says how many were timed)")


def test_chapter_12_crosscheck_passes_with_the_4096_gap_in_rung_12s_time(data):
    """The cross-check passes at both sizes, 8192 agreeing and 4096 with the widest gap of the cross-check, rung 10's
    both narrower: Nsight Compute times rung 12 longer than the harness does, by more than it times cuBLASLt longer,
    although rung 12 ran at the higher clock. How much more is what the paragraph renders: on the H100 3.8% against
    1.5%, "most of the gap in rung 12's time"; on the H200 3.7% against 2.0%, both kernels longer, rung 12 1.8 times
    as much."""
    from tools import crosscheck
    assert 100 * crosscheck.GAP == BAR, "the cross-check's bar moved: the chapter's say-cell states it"
    cc = {n: data["crosscheck"][f"{FP8}@{n}"] for n in (4096, 8192)}
    assert all(c["cache_control"] == "none" for c in cc.values())
    c8, c4 = cc[8192], cc[4096]
    assert c8["ok"] and abs(c8["gap_points"]) < BAR / 2, f"the 8192 cross-check no longer agrees: {c8['gap_points']}"
    gap4 = c4["gap_points"]
    assert c4["ok"] == (abs(gap4) <= BAR)
    assert c4["ok"], f"the 4096 cross-check fails again: {gap4:.2f} points"
    g10 = [data["crosscheck"][f"{BF16}@{n}"] for n in (4096, 8192)]
    assert all(g["ok"] and g["cache_control"] == "none" for g in g10)
    assert all(abs(g) < abs(gap4) for g in (c8["gap_points"], *(g["gap_points"] for g in g10))), \
        "the 4096 gap of rung 12 is no longer the widest of the cross-check"
    kmove = c4["ncu_kernel_ms"] / c4["harness_kernel_ms"] - 1
    cmove = c4["ncu_cublas_ms"] / c4["harness_cublas_ms"] - 1
    if abs(gap4) > BAR / 2:  # the chapter diagnoses the gap only where it is notable
        assert kmove > 0 and cmove < kmove, f"the 4096 gap is no longer in rung 12's longer time: {kmove}, {cmove}"
        assert c4["ncu_kernel_mhz"] > c4["ncu_cublas_mhz"], "rung 12 no longer had the higher clock under ncu"
    assert c4["ncu_ratio"] < c4["harness_ratio"]


def test_chapter_12_ceiling_and_power(data):
    """FP8 doubles the BF16 probe under the power cap; rung 12 is further from its roof than rung 10, most at 4096;
    back to back at 8192 both run into the 700 W cap and rung 12 is level with cuBLASLt within a point, doing about as
    many FLOP per clock (behind it before rung 12 stored part of its epilogue under the next tile; a little ahead since,
    in four rounds: the paragraph renders which), the
    cap takes from rung 12 at least about as much as from cuBLASLt (the paragraph picks between "more", "about as
    much" and "more from cuBLASLt" at one point: on the H100 rung 12 falls 1.4 points below its bursts at the higher
    clock, 1,425 against 1,380 MHz; on the H200 it sits 0.2 points above them, both at 1,410 MHz), and an FP8 FLOP
    costs about half the energy of a BF16 one."""
    q, h = data["ceilings"]["qgmma_peak_random"], data["ceilings"]["hgmma_peak_random"]
    assert 1.9 < q["value"] / h["value"] < 2.1, f"FP8 no longer doubles BF16 under the cap: {q['value'] / h['value']}"
    roof = [_row(data, r, n)["tflops"] / c["value"] for r, c in ((FP8, q), (BF16, h)) for n in (4096, 8192)]
    assert roof[0] < roof[2] and roof[1] < roof[3], f"rung 12 is no longer further from its roof than rung 10: {roof}"
    s8 = data["sustained"][f"{FP8}@8192"]
    assert all(w > 0.98 * 700 for w in (s8["power_w"], s8["cublas_power_w"])), "the FP8 kernels no longer hit the cap"
    assert s8["burst_ratio"] - s8["ratio"] > -0.01, "the cap now takes more from cuBLASLt than from rung 12"
    assert abs(s8["ratio"] - 1) < 0.01, "rung 12 is no longer level with cuBLASLt back to back, within a point"
    per_clock = s8["tflops"] / s8["sm_clock_mhz"] / (s8["cublas_tflops"] / s8["cublas_sm_clock_mhz"])
    assert abs(per_clock - 1) < 0.02, "rung 12 and cuBLASLt no longer do about as many FLOP per clock under the cap"
    pw, pj = s8["power_w"] / s8["cublas_power_w"], s8["pj_per_flop"] / s8["cublas_pj_per_flop"]
    assert abs(pw / pj - s8["ratio"]) < 1e-6  # FLOP/s = watts / (J per FLOP)
    bf = data["sustained"][f"{BF16}@8192"]
    assert 0.45 < max(s8["pj_per_flop"], s8["cublas_pj_per_flop"]) / bf["pj_per_flop"] < 0.55, \
        "an FP8 FLOP no longer costs about half the energy of a BF16 one"


def test_chapter_12_flags_the_4096_back_to_back_row_as_host_bound(data, monkeypatch):
    """At 4096 cuBLASLt's host time per call (through nvmath-python) flags its back-to-back row; at 8192 nothing."""
    from helpers.demos import sustained
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    s4, s8 = sustained(FP8, 4096), sustained(FP8, 8192)
    assert s4["host_bound"] == ["cuBLAS"] and s8["host_bound"] == [], "the host-bound flag moved"
    assert s4["rounds"] == 4


def test_chapter_12_profile_and_variants(data):
    """Beside cuBLASLt's own FP8 kernel rung 12 is level in Nsight Compute (tensor pipe, SMs, DRAM), with a higher L2
    hit rate; neither tuning switch helps at 4096 or 8192 (no variant's rounds rise above the committed build's: a
    longer group costs at 8192, and at 4096 on the H100, where on the H200 it is level, +0.06 points within the
    rounds' spread; clusters of one cost at both), and at 2048 clusters of one win."""
    e = lambda who, n, f: data["l2_schedule"][f"{who}@{n}"][f]  # noqa: E731
    for n in (4096, 8192):
        assert e(FP8, n, "l2_hit_pct") > e("cublas_fp8", n, "l2_hit_pct"), f"the L2 hit rate is no longer higher at {n}"
        assert abs(e(FP8, n, "sm_busy_pct") - e("cublas_fp8", n, "sm_busy_pct")) < 1.5, f"the SMs differ at {n}"
        assert abs(e(FP8, n, "tensor_pipe_pct") - e("cublas_fp8", n, "tensor_pipe_pct")) < 1.5, f"the pipes differ at {n}"
        assert abs(e(FP8, n, "dram_read_gb") / e("cublas_fp8", n, "dram_read_gb") - 1) < 0.25, f"DRAM differs at {n}"
    assert e(FP8, 8192, "tensor_pipe_pct") > e(FP8, 4096, "tensor_pipe_pct"), "the pipe is no longer busier at 8192"
    assert len({e(who, n, "run") for who in (FP8, "cublas_fp8") for n in (4096, 8192)}) == 1
    from types import SimpleNamespace

    from helpers.prose import step
    entry = lambda change, n: data["variants"][f"{FP8}:{json.dumps(change, sort_keys=True)}@{n}"]  # noqa: E731
    v = lambda change, n: entry(change, n)["ratio"]  # noqa: E731
    row = lambda change, n: SimpleNamespace(**{k: entry(change, n)[k] for k in ("tflops", "tflops_iqr")})  # noqa: E731
    moved = lambda change, n: step(row({}, n), row(change, n))  # noqa: E731  (the committed build -> the variant)
    assert not any(moved({"GROUP_M": 16}, n).rises for n in (4096, 8192)), "a longer group now helps"
    assert moved({"GROUP_M": 16}, 8192).falls and v({}, 8192) > v({"GROUP_M": 16}, 8192), \
        "a longer group no longer costs at 8192"
    # Clusters of one: they cost at 8192; at 4096 they cost in the H100 run and gained 0.8 points in the H200's (one
    # variant row each, outside the rounds of the rung's own row); the chapter renders which.
    assert moved({"CLUSTER": 1}, 8192).falls and v({}, 8192) > v({"CLUSTER": 1}, 8192), \
        "clusters of one no longer cost at 8192"
    assert v({"CLUSTER": 1}, 2048) > v({}, 2048), "clusters of one no longer win at 2048"


@pytest.mark.slow  # the chapter's own accuracy demo, at its sizes: a few seconds
def test_chapter_12_accumulator_and_cpu_demos(data):
    """FP8 wgmma keeps 13 binades in every placement, BF16 fp32's; per-tensor scaling turns an error the size of the
    result into about the napkin's, about fourteen times BF16's."""
    acc = data["accumulator"]
    assert all(p == {"kept": 13, "first_lost": 14} for p in acc[FP8]["placements"].values())
    assert acc[BF16]["placements"]["tiny first"] == {"kept": 23, "first_lost": 24}
    from helpers import fp8
    demo = fp8.scaling_demo(np.random.default_rng(0))
    assert demo.unscaled.dot_rel_err > 0.5 and demo.scaled.dot_rel_err < 0.03 and demo.scaled.saturated == 0
    a = fp8.accuracy_demo(np.random.default_rng(1)).errors
    scaled, bf16, raw = a["e4m3, per-tensor scales"], a["bf16 inputs"], a["e4m3, no scaling"]
    assert round(scaled / bf16) == 14 and raw > 0.5
    assert abs(scaled / fp8.quantization_error(4096).relative - 1) < 0.1, "the scaled error left the napkin"
    assert a["e4m3, per-tensor scales, 14-bit sum"] - scaled < 0.1 * scaled, "the 14-bit sum now adds to the error"


def test_chapter_12_names_the_kernel_the_crosscheck_timed(data):
    """The table's winner leads the field thinly: the cross-check's rounds crowned either it or the runner-up (a
    1 x 2-clustered kernel without coopA, the one the cross-check timed), and the power cell crowned the table's
    winner. On the H100 the cross-check crowned the runner-up, #4 against the table's #5; on the H200 all three
    crowned #4 (the paragraphs after the cross-check and the profile say which)."""
    cc = data["crosscheck"][f"{FP8}@4096"]
    (name,) = cc["cublas_kernels"]
    rank, _, tile = _algorithm(cc["cublas"])
    tabled, _, ttile = _algorithm(_row(data, FP8, 4096)["cublas_ref"])
    m = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_1x2_", name)
    assert m and f"{m[1]} × {m[2]}" == tile and m[3] == "128" and "coop" not in name
    fast = {int(k.rsplit("#", 1)[1]) if "#" in k else 1: t["tflops"] for k, t in _contenders(data, 4096).items()
            if "fast heuristic" in k}
    win = fast.pop(tabled)
    rank2 = max(fast, key=fast.get)
    assert win / fast[rank2] - 1 < 0.02, "the table's winner no longer leads thinly"
    assert rank in (tabled, rank2), f"the cross-check's rounds crowned #{rank}, neither the table's #{tabled} nor " \
        f"the runner-up #{rank2}"
    srank, _, stile = _algorithm(data["sustained"][f"{FP8}@4096"]["cublas_ref"])
    assert srank == tabled and stile == ttile


def test_chapter_12_names_the_limit_the_profile_shows(cells):
    """The rendered cell after the profile figure opens with limit_sentence (tests/test_claims_profiles.py holds it
    to the profile); rung 12 has rung 10's profile, a little worse, and the load path is not what binds."""
    from helpers.ceilings import recorded_ceilings
    from helpers.figures import limit_of, recorded_profile
    ids = [c["id"] for c in cells]
    i = ids.index("c12-profile-md")
    assert ids[i - 1] == "c12-profile" and "remove-input" in cells[i]["metadata"]["tags"]
    assert 'fig_profile("12_fp8", "10_overlap", n=8192)' in "".join(cells[i - 1]["source"])
    x, b = limit_of(FP8, 8192), limit_of(BF16, 8192)
    e = recorded_profile(FP8, 8192)
    assert x["roof"] == b["roof"] and x["pipe"] == b["pipe"] == "tensor"  # "the same roof"
    assert abs(e["l2_tbps"] / recorded_ceilings()[x["roof"]].value - x["l2_fraction_of_roof"]) < 1e-9
    assert x["top_stall"] == b["top_stall"] == "barrier", "the barrier no longer leads"
    assert x["pipe_pct"] < b["pipe_pct"], "rung 12's tensor pipe is no longer less busy than rung 10's"
    assert max(x["l2_fraction_of_roof"], b["l2_fraction_of_roof"]) < 0.75, "a rung now comes near the load roof"


def test_chapter_12_promoted_section_matches_its_record():
    """experiments/fp8_promoted's record: the sliced promoted rung is below the chapter's budget and below cuBLASLt's
    promoted mode at 2048-8192, ahead of the narrower tiles everywhere; the controls put the miss on the adds (rung 12
    launched plainly is level with itself, one add a slice comes within 3% of it); adding every 256 k beats the
    128 x 128 build but loses the bits again; each version beat the one before it."""
    from experiments.fp8_promoted import LT_FAST, LT_PROMOTED, record as promoted_record
    rec = promoted_record()
    every, narrow, wide = "12_fp8_promoted, every 256 k", "promoted, 128 x 128", "promoted, 128 x 192"
    plain, one_add = "rung 12, launched plainly", "promoted, one add a slice (C wrong)"
    t = {tuple(r["shape"]): {**{b: r[b]["tflops"] for b in ("12_fp8", "12_fp8_promoted", narrow, wide, every, plain,
                                                            one_add)},
                             "lt": r["cublas_groups"][LT_PROMOTED]["tflops"], "fast": r["cublas_groups"][LT_FAST]["tflops"]}
         for r in rec["time"]}
    a, b = t[(4096,) * 3], t[(8192,) * 3]
    assert max(x["12_fp8_promoted"] / x["12_fp8"] for x in (a, b)) < 0.88, "promotion now meets the budget"
    assert all(t[(n,) * 3]["12_fp8_promoted"] < 0.95 * t[(n,) * 3]["lt"] for n in (2048, 4096, 6144, 8192)), \
        "promotion now reaches 0.95 of cuBLASLt's promoted mode on a cube"
    assert t[(8192, 8192, 1024)]["12_fp8_promoted"] >= 0.95 * t[(8192, 8192, 1024)]["lt"]
    assert all(x["12_fp8_promoted"] > max(x[narrow], x[wide]) for x in t.values()), "a narrower tile now wins"
    assert [s for s, x in t.items() if x[every] > x["12_fp8_promoted"]] == [(2048,) * 3]
    assert all(abs(x[plain] / x["12_fp8"] - 1) < 0.01 for x in (a, b)), "the plain launch now costs rung 12"
    assert all(0.97 <= x[one_add] / x["12_fp8"] for x in (a, b)), "the slices alone now cost more than 3%"
    assert all(x["12_fp8_promoted"] / x[one_add] < 0.9 for x in (a, b)), "the adds now cost less than 10%"
    assert all(x[every] > x[narrow] for x in t.values()), "adding every 256 k no longer beats adding every 128"
    assert all(x["lt"] / x["fast"] > x["12_fp8_promoted"] / x["12_fp8"] for x in (a, b)), \
        "cuBLASLt's promotion now costs it as much as ours costs us"
    labels = {r["cublas_groups"][LT_PROMOTED]["label"] for r in rec["time"]}
    assert {re.search(r"tile (\d+x\d+), cluster", x).group(1) for x in labels} == {"128x128", "128x160", "144x128"}
    p = rec["profile"]
    assert p["12_fp8_promoted"]["tensor_active_pct"] < p["12_fp8"]["tensor_active_pct"] - 10
    for stall in ("wait", "dispatch_stall", "warpgroup_arrive"):  # "three stalls grew"
        assert p["12_fp8_promoted"]["stall_reasons"][stall] > p["12_fp8"]["stall_reasons"][stall], stall
    ft = {tuple(r["shape"]): r for r in rec["first_try"]["time"]}[(4096,) * 3]
    one = {tuple(r["shape"]): r for r in rec["one_buffer"]["time"]}
    first, single = ft["12_fp8_promoted"]["tflops"] / ft["12_fp8"]["tflops"], {
        s: r["12_fp8_promoted"]["tflops"] / r["cublas_groups"][LT_PROMOTED]["tflops"] for s, r in one.items()}
    assert first < single[(4096,) * 3] * 0.8, "the first try no longer trails"
    assert all(single[s] < x["12_fp8_promoted"] / x["lt"] for s, x in t.items()), "one buffer no longer loses"
    got = rec["probe"]
    assert got["12_fp8_promoted"]["across k tiles"] == {"kept": 23, "first_lost": 24}
    assert all(v == {"kept": 13, "first_lost": 14} for v in got["12_fp8"].values())
    assert all(v == {"kept": 13, "first_lost": 14} for v in got[every].values())


def test_chapter_12_promoted_waits_at_the_slices_first_wgmma(data):
    """The stall sites of 12_fp8_promoted at 8192: the first wgmma of a slice (scale-d = 0, issued after the fence
    that follows the adds) holds the leading site and more than a tenth of all samples."""
    from helpers.ladder import recorded_entry
    e = recorded_entry("stall_sites", "12_fp8_promoted@8192")
    top = e["sites"][0]
    assert top["kind"] == "wgmma issue" and "RZ, !UPT" in top["sass"], top
    assert sum(s["share"] for s in e["sites"] if s["kind"] == "wgmma issue" and "RZ, !UPT" in s["sass"]) > 0.10


def test_chapter_12_quotes_chapter_10s_one_consumer_control():
    """Chapter 12 quotes chapter 10's control: one warpgroup issuing wgmma keeps the tensor pipe less busy than two."""
    from experiments.pingpong import phases as pingpong_phases
    one, two = (pingpong_phases(x, None, "single")["pipe"] for x in ("one consumer, 64 x 256", "cooperative"))
    assert one < two, "one issuing warpgroup now keeps the pipe as busy as two"


def test_chapter_12_crosscheck_gap_is_a_cost_per_launch(data):
    """Issue "counters", item 6 (c35): the microseconds Nsight Compute adds to a rung-12 launch barely grow from 4096 to
    8192 (a launch ~7.6 times as long), so the 4096 gap is a cost per launch, not a share of it."""
    cc = {n: data["crosscheck"][f"{FP8}@{n}"] for n in (4096, 8192)}
    extra = {n: e["ncu_kernel_ms"] - e["harness_kernel_ms"] for n, e in cc.items()}
    assert all(v > 0 for v in extra.values()) and extra[8192] < 2 * extra[4096], \
        f"the extra time under Nsight Compute now grows with the launch: {extra}"


def test_chapter_12_barrier_is_wgmma_waits_once_the_idle_producers_exit(data):
    """Issue "counters", item A for rung 12: before the producer's idle warps exited (experiments/idle_warps) the top
    site was the closing cluster barrier at their share (3 of 12 warps); now the top site is WARPGROUP.DEPBAR and the
    cluster barrier holds almost nothing. At the FP8 peak the wgmmas read 80 B a clock and the stages land 48, as in
    rung 10."""
    from experiments.idle_warps import kept
    from helpers.compiler import build
    from helpers.figures import limit_of
    from helpers.hardware import FP8_RATE, TENSOR_FLOP_PER_CLK
    from helpers.registry import rung
    c = build(rung(FP8)).consts
    wait = "barrier.cluster.wait, the cluster barrier"
    for n in (4096, 8192):
        was = kept("stall_sites", f"{FP8}@{n}")["sites"]
        assert was[0]["kind"] == wait and abs(was[0]["share"] - 0.25) < 0.02
        sites = limit_of(FP8, n)["sites"]["sites"]
        assert sites[0]["kind"] == "wgmma.wait_group, waiting for its own wgmmas"
        assert sum(s["share"] for s in sites if s["kind"] == wait) < 0.02
    peak = TENSOR_FLOP_PER_CLK * FP8_RATE
    assert peak * (64 + c["WGMMA_N"]) / (2 * 64 * c["WGMMA_N"]) == 80
    assert peak * (c["BM"] + c["BN"]) / (2 * c["BM"] * c["BN"]) == 48


def test_chapter_12_both_rungs_land_under_the_shared_tma_roof(data):
    """Chapter 12: against TMA measured alike in the shared walk at 2.7 MB (the comparable roof for a GEMM's loads),
    rungs 12 and 10 both land under it at N = 8192."""
    from helpers.figures import recorded_profile
    shared = data["ceilings"]["read_tma_shared@2.7MB"]["value"]
    drawn = {r: recorded_profile(r, 8192)["l2_tbps"] for r in ("12_fp8", "10_chip")}
    assert max(drawn.values()) < shared, f"a rung now lands at or above the shared TMA roof: {drawn} vs {shared}"


def test_the_wider_promoted_tile_budgets():
    """Chapter 12's budget for a wider promoted tile: two partial-sum buffers fit only N = 128 in a consumer's
    registers, one buffer fits 192 and not 256; the shared-memory bytes a clock at the tensor peak (wgmma's reads
    and the fills) of 128 x 128 exceed what experiments/smem_port moved, those of 128 x 192 do not."""
    from experiments import smem_port
    from helpers.csource import read_consts, source
    from helpers.hardware import TENSOR_FLOP_PER_CLK
    c = read_consts(source("12_fp8"))
    regs = c["CONSUMER_REGS"]
    assert 3 * 128 // 2 < regs < 3 * 192 // 2 and 2 * 192 // 2 < regs < 2 * 256 // 2
    need = {n: TENSOR_FLOP_PER_CLK * ((64 + n) / (64 * n) + (c["BM"] + n) / (c["BM"] * n)) for n in (128, 192)}
    assert need[128] > smem_port.port_roof() > need[192], "the port no longer separates the 128- and 192-wide tiles"
