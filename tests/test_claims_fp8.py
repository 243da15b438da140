"""Chapter 12's words against its data: each number its prose quotes is recomputed from the recorded run (or, for
the CPU demos, from the same seeded model the notebook runs), so a re-recorded run that changes the story fails
here until the prose is changed too. Runs without a GPU."""
import json
import re

import numpy as np
import pytest

from helpers import results
from helpers.registry import ROOT

from conftest import prose, says

FP8, BF16 = "12_fp8", "10_beyond_cublas"
WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten",
         11: "eleven", 12: "twelve"}


@pytest.fixture(scope="module")
def data():
    return results.load(results.path_for())


@pytest.fixture(scope="module")
def text():
    nb = json.loads((ROOT / "chapters" / "12_fp8.ipynb").read_text())
    return prose("\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"))


def _row(data, rung, n):
    return data["gemm"][results.gemm_key(rung, n, n, n)]


def _contenders(data, n):
    return data["baselines"][f"e4m3-TN-bf16@{n}x{n}x{n}"]["contenders"]


def _algorithm(label):
    """(rank, of, tile) from a cuBLASLt label: "..., tile 128x128, cluster 1x2x1; the heuristic's #5 of 8 ...";
    the tile as the prose writes it, "128 × 128"."""
    m = re.search(r"tile (\d+)x(\d+), cluster [\dx]+; the heuristic's #(\d+) of (\d+)", label)
    assert m, f"no algorithm in the label {label!r}"
    return int(m[3]), int(m[4]), f"{m[1]} × {m[2]}"


def _crosscheck_bar():
    from tools import crosscheck
    return 100 * crosscheck.GAP


def test_chapter_12_climb_and_target(data, text):
    up = {n: _row(data, FP8, n)["tflops"] / _row(data, BF16, n)["tflops"] for n in (4096, 8192)}
    assert says(text, f"Rung 12 runs {up[4096]:.2f} times as fast as rung 10 at N = 4096 and {up[8192]:.2f} times at "
                      f"8192")
    ratio = {n: _row(data, FP8, n)["ratio"] for n in (4096, 8192)}
    assert says(text, f"against it rung 12 reaches {ratio[4096]:.1%} and {ratio[8192]:.1%}")
    miss = {n: 100 * (1 - ratio[n]) for n in (4096, 8192)}
    assert max(ratio.values()) < 1.0 and says(text, f"**the target of 1.00× is missed at both sizes**, by "
                                                    f"{miss[4096]:.1f} points at 4096 and {miss[8192]:.1f} at 8192")
    for n in (4096, 8192):  # the reference is the fast-accumulation mode at both sizes
        assert "fast accumulation" in _row(data, FP8, n)["cublas_ref"]
    promoted = {n: _row(data, FP8, n)["tflops"] / max(t["tflops"] for name, t in _contenders(data, n).items()
                                                       if "fast" not in name) for n in (4096, 8192)}
    assert says(text, f"rung 12 is {promoted[4096] - 1:.1%} and {promoted[8192] - 1:.1%} ahead")
    # how the reference is chosen: the heuristic's first LT_CANDIDATES algorithms (and the autotuner's pick), timed
    from helpers.cublas import LT_CANDIDATES
    assert says(text, f"times the heuristic's first {WORDS[LT_CANDIDATES]} candidate algorithms (fewer where the "
                      f"heuristic offers fewer), plus the autotuner's pick when it is not among them")
    ref4 = _row(data, FP8, 4096)["cublas_ref"]
    rank, of, tile = _algorithm(ref4)
    assert f"the fastest of {LT_CANDIDATES} cuBLASLt algorithms" in ref4 and "autotune's pick" in ref4
    assert says(text, f"the fastest of the {WORDS[LT_CANDIDATES]} fast-accumulation algorithms was the heuristic's "
                      f"#{rank} of {of}, a {tile} tile (the autotuner picked it too)") and rank > 1
    c = _contenders(data, 4096)
    tuned = c["cuBLASLt FP8 fast autotuned"]["tflops"] / c["cuBLASLt FP8 fast heuristic"]["tflops"] - 1
    first = _row(data, FP8, 4096)["tflops"] / c["cuBLASLt FP8 fast heuristic"]["tflops"]
    # runs 11:40Z to 13:27Z had rung 12 just behind that first choice; run 18:01Z had it level, within 0.05%; run
    # 19:47Z has it just behind again
    assert says(text, f"beats the heuristic's first choice by {tuned:.1%}; against that first choice rung 12 is at "
                      f"{first:.1%}, just behind it") and 0.99 < first < 0.9995
    assert not says(text, "level with it")
    rank8, of8, tile8 = _algorithm(_row(data, FP8, 8192)["cublas_ref"])
    assert (rank8, of8) == (1, 1) and "fastest of" not in _row(data, FP8, 8192)["cublas_ref"]
    assert says(text, f"offers a single fast-accumulation algorithm, the heuristic's #1 of 1, a {tile8} tile")
    c8 = _contenders(data, 8192)
    assert abs(c8["cuBLASLt FP8 fast autotuned"]["tflops"] / c8["cuBLASLt FP8 fast heuristic"]["tflops"] - 1) < 0.002
    summary = (f"{up[4096]:.2f} and {up[8192]:.2f} times rung 10 at N = 4096 and 8192; {ratio[4096]:.1%} and "
               f"{ratio[8192]:.1%} of the strongest cuBLASLt FP8")
    assert says(text, summary) and says(text, f"{promoted[4096] - 1:.1%} and {promoted[8192] - 1:.1%} ahead of "
                                              f"cuBLASLt's default, promoted mode")
    assert says(text, f"This run measured {up[8192]:.2f} at N = 8192 (and {up[4096]:.2f} at 4096)")


def test_chapter_12_says_the_4096_crosscheck_fails_at_the_edge_of_the_bar(data, text):
    bar = _crosscheck_bar()
    cc = {n: data["crosscheck"][f"{FP8}@{n}"] for n in (4096, 8192)}
    assert all(c["cache_control"] == "none" for c in cc.values()) and says(text, "with `--cache-control none`")
    assert says(text, f"({cc[4096]['ncu_launches']} launches at 4096, {cc[8192]['ncu_launches']} at 8192)")
    assert says(text, f"A gap over {bar:.0f} points fails the check")
    c8, c4 = cc[8192], cc[4096]
    assert c8["ok"] and abs(c8["gap_points"]) < bar
    assert says(text, f"At 8192 the two agree: Nsight Compute gives {c8['ncu_ratio']:.1%} against the harness's "
                      f"{c8['harness_ratio']:.1%}, a gap of {c8['gap_points']:.1f} points")
    # Runs 11:40Z and 12:35Z: the check failed just over the bar (3.04 and 3.02 points). Run 13:27Z: it passes, with
    # less to spare than any other row; the day the gap crosses the bar again, this paragraph must change
    gap4 = c4["gap_points"]
    assert c4["ok"] == (abs(gap4) <= bar)
    assert c4["ok"] and 0.5 * bar < abs(gap4) <= bar
    assert says(text, f"At 4096 **the check passes, with less to spare**: Nsight Compute gives {c4['ncu_ratio']:.1%} "
                      f"against the harness's {c4['harness_ratio']:.1%}, a gap of {gap4:.2f} points, inside the "
                      f"{bar:.0f}-point bar, with caches flushed in neither")
    assert says(text, f"read it with its margin, {abs(gap4):.2f} of the {bar:.0f} points the bar allows")
    for claim in ("the check fails", "not confirmed", "Nsight Compute agrees with the harness at 4096"):
        assert not says(text, claim), claim
    # "not the agreement the other rows show": the 8192 gap and rung 10's are each a small part of the 4096 one
    assert all(abs(g) < abs(gap4) / 2 for g in (c8["gap_points"], *(data["crosscheck"][f"{BF16}@{n}"]["gap_points"]
                                                                     for n in (4096, 8192))))
    assert says(text, "The cause is not found yet")
    g10 = [data["crosscheck"][f"{BF16}@{n}"] for n in (4096, 8192)]
    assert all(g["ok"] and g["cache_control"] == "none" for g in g10)
    assert says(text, f"agrees at both sizes ({g10[0]['gap_points']:+.1f} and {g10[1]['gap_points']:+.1f} points)")
    # where the gap sits: under ncu both kernels take longer than in the harness (run 11:40Z had cuBLASLt's time a
    # little shorter; run 12:35Z has it longer too), rung 12's several times as much, so most of the gap is rung 12's
    kmove = c4["ncu_kernel_ms"] / c4["harness_kernel_ms"] - 1
    cmove = c4["ncu_cublas_ms"] / c4["harness_cublas_ms"] - 1
    assert kmove > 0.02 and 0 < cmove < kmove / 2
    assert says(text, f"Most of the gap is in rung 12's time, not cuBLASLt's: Nsight Compute times both kernels "
                      f"longer than the harness does, rung 12 {WORDS[round(kmove / cmove)]} times as much: rung 12 at "
                      f"{c4['ncu_kernel_ms'] * 1e3:.1f} µs per call against the harness's "
                      f"{c4['harness_kernel_ms'] * 1e3:.1f} µs, {kmove:.1%} longer, and the cuBLASLt kernel at "
                      f"{c4['ncu_cublas_ms'] * 1e3:.1f} µs against {c4['harness_cublas_ms'] * 1e3:.1f} µs, "
                      f"{cmove:.1%} longer")
    # the clocks ncu recorded: rung 12 ran at the higher one and still took longer than in the harness
    assert c4["ncu_kernel_mhz"] > c4["ncu_cublas_mhz"]
    assert says(text, f"under Nsight Compute rung 12's launches ran at {c4['ncu_kernel_mhz']:,.0f} MHz and cuBLASLt's "
                      f"at {c4['ncu_cublas_mhz']:,.0f}, so rung 12 had the higher clock and still took {kmove:.1%} "
                      f"longer than in the harness")
    # the cross-check's rounds crowned another cuBLASLt algorithm than the table's (as in runs 12:35Z, 13:27Z and
    # 19:47Z; runs 11:40Z and 18:01Z crowned the same one), so its two ratios divide by another reference than the
    # table's; the paragraph names both
    table, row4 = data["baselines"]["e4m3-TN-bf16@4096x4096x4096"], _row(data, FP8, 4096)
    (own, _, own_tile), (tabled, _, tile) = _algorithm(c4["cublas"]), _algorithm(row4["cublas_ref"])
    assert own != tabled and f"fast heuristic #{own}" in c4["cublas_contender"]
    vs_own = row4["tflops"] / _contenders(data, 4096)[f"cuBLASLt FP8 fast heuristic #{own}"]["tflops"]
    assert says(text, f"(These are the cross-check's own rounds, and their fastest cuBLASLt was not the table's: they "
                      f"crowned the heuristic's #{own}, a {own_tile} tile, at {c4['harness_cublas_ms'] * 1e3:.1f} µs, "
                      f"where the table's rounds crowned #{tabled}, the {tile} tile. They timed rung 12 at "
                      f"{c4['harness_kernel_ms'] * 1e3:.1f} µs; the table's rounds timed #{tabled} and rung 12 at "
                      f"{table['ms'] * 1e3:.1f} and {row4['ms'] * 1e3:.1f} µs, so the harness says "
                      f"{c4['harness_ratio']:.1%} here, against #{own}, and {row4['ratio']:.1%} in the table, against "
                      f"#{tabled}; against #{own} the table's rounds put rung 12 at {vs_own:.1%}.)")
    assert not says(text, "their fastest cuBLASLt was the table's")
    # Nsight Compute's figure below the harness's, inside the bar (run 13:27Z; the two runs before it, just over it)
    assert c4["ncu_ratio"] < min(c4["harness_ratio"], row4["ratio"]) and c4["ok"]
    assert says(text, f"this one stays inside the bar, so the 4096 ratio passes the check, as the 8192 one does")
    assert says(text, f"rung 12 reaches {row4['ratio']:.1%} and {_row(data, FP8, 8192)['ratio']:.1%} (both inside the "
                      f"cross-check below, the 4096 one with less to spare)")


def test_chapter_12_ceiling_and_power(data, text):
    q, h = data["ceilings"]["qgmma_peak_random"], data["ceilings"]["hgmma_peak_random"]
    assert says(text, f"holds {q['value']:,.0f} TFLOP/s at {q['sm_clock_mhz']:,.0f} MHz and {q['power_w']:.0f} W: "
                      f"{q['value'] / h['value']:.2f} times the BF16 probe")
    roof = [_row(data, r, n)["tflops"] / c["value"] for r, c in ((FP8, q), (BF16, h)) for n in (4096, 8192)]
    assert says(text, f"Rung 12 reaches {roof[0]:.0%} of that ceiling at 4096 and {roof[1]:.0%} at 8192; rung 10 "
                      f"reaches {roof[2]:.0%} and {roof[3]:.0%}")
    assert roof[0] < roof[2] and roof[1] < roof[3] and roof[2] - roof[0] > roof[3] - roof[1]  # "most at 4096"
    assert says(text, "further from its roof than rung 10 at both sizes, most at 4096")
    s8 = data["sustained"][f"{FP8}@8192"]
    below = 100 * (s8["burst_ratio"] - s8["ratio"])
    # run 11:40Z: 0.2 points, "about as much from each"; run 12:35Z: 0.7, "a little more"; run 13:27Z: 1.9, "more"
    assert says(text, f"rung 12 holds {s8['ratio']:.1%} of cuBLASLt ({s8['tflops']:,.0f} against "
                      f"{s8['cublas_tflops']:,.0f} TFLOP/s), {below:.1f} points below its bursts "
                      f"({s8['burst_ratio']:.1%}): the cap takes more from rung 12 than from cuBLASLt")
    assert 1 <= below < 3 and not says(text, "the cap takes about as much from each")
    # run 11:40Z had both at one clock; since run 12:35Z rung 12 runs at the higher clock and still behind, so it does
    # fewer FLOP per clock; at the cap, FLOP/s = watts / (J per FLOP). Run 12:35Z had the pJ equal to within 0.1%, the
    # FLOP/s gap the watts' gap; run 13:27Z had the watts equal to within 0.1%, the FLOP/s gap the pJ's; run 18:01Z had
    # rung 12 drawing a few tenths of a percent more watts, which won back a little of the larger gap in pJ; run 19:47Z
    # has rung 12 drawing fewer watts and spending less per FLOP, and the watts' gap is the larger
    assert s8["sm_clock_mhz"] > s8["cublas_sm_clock_mhz"] and s8["tflops"] < s8["cublas_tflops"]
    assert (s8["tflops"] / s8["sm_clock_mhz"]) < (s8["cublas_tflops"] / s8["cublas_sm_clock_mhz"])
    assert says(text, "At the higher clock rung 12 still falls a little behind, so it does fewer FLOP per clock")
    assert not says(text, "At the same clock")
    pw, pj = s8["power_w"] / s8["cublas_power_w"], s8["pj_per_flop"] / s8["cublas_pj_per_flop"]
    assert pw < pj < 0.99 and abs(pw / pj - s8["ratio"]) < 1e-6  # FLOP/s = watts / (J per FLOP)
    assert f"{round(pw, 4) / round(pj, 4):.1%}" == f"{s8['ratio']:.1%}"  # the quotient as printed gives the ratio
    assert says(text, f"here rung 12 drew {1 - pw:.1%} less power than cuBLASLt, while each of its FLOP costs "
                      f"{s8['pj_per_flop']:.4f} pJ against cuBLASLt's {s8['cublas_pj_per_flop']:.4f}, {1 - pj:.1%} "
                      f"less, so rung 12 holds {pw:.4f} / {pj:.4f} = {s8['ratio']:.1%} of cuBLASLt's FLOP per second: "
                      f"its cheaper FLOP win back only part of what its lower power loses")
    assert not says(text, "the watts they drew are the same to within 0.1%") and not says(text, "more power than")
    burst_mhz = _row(data, FP8, 8192)["sm_clock_mhz"]
    assert says(text, f"the clock down from the bursts' {burst_mhz:,.0f} MHz to {s8['sm_clock_mhz']:,.0f} MHz for "
                      f"rung 12 and {s8['cublas_sm_clock_mhz']:,.0f} MHz for cuBLASLt")
    assert says(text, f"back to back: {s8['power_w']:.0f} and {s8['cublas_power_w']:.0f} W")
    assert all(w > 0.98 * 700 for w in (s8["power_w"], s8["cublas_power_w"]))  # "run into the cap"
    pj = sorted((s8["pj_per_flop"], s8["cublas_pj_per_flop"]))
    both = f"{pj[0]:.2f}" if f"{pj[0]:.2f}" == f"{pj[1]:.2f}" else f"{pj[0]:.2f}-{pj[1]:.2f}"  # one figure when equal
    assert says(text, f"Both spend {both} pJ per FLOP")
    bf = data["sustained"][f"{BF16}@8192"]
    assert says(text, f"about half of BF16's {bf['pj_per_flop']:.2f}") and 0.45 < pj[1] / bf["pj_per_flop"] < 0.55
    assert says(text, f"the FP8 rung does {s8['tflops'] / bf['tflops']:.2f} times rung 10's FLOP per second")
    assert says(text, f"FP8 costs about {s8['pj_per_flop']:.2f} pJ per FLOP, half of BF16's, and rung 12 holds "
                      f"{s8['ratio']:.1%} of cuBLASLt at 8192")


def test_chapter_12_says_the_4096_back_to_back_row_is_host_bound(data, text, monkeypatch):
    from helpers.demos import sustained
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    s4, s8 = sustained(FP8, 4096), sustained(FP8, 8192)
    assert s4["host_bound"] == ["cuBLAS"] and s8["host_bound"] == []
    assert says(text, f"it took about {s4['cublas_host_us']:.0f} µs of host time per call in the bursts, while the "
                      f"call runs for about {s4['cublas_gpu_us']:.0f} µs on the GPU")
    # the back-to-back line of this run neither shows the queue running dry nor rules it out (as in runs 12:35Z and
    # 13:27Z; run 18:01Z had cuBLASLt under the cap and a call slower than the bursts' host time, and showed it):
    # both kernels at the cap, and at the median a call every per_call µs, less than the bursts' host time per call
    per_call = 2 * 4096**3 / (s4["cublas_tflops"] * 1e12) * 1e6
    assert s4["cublas_power_w"] > 0.98 * 700 and s4["power_w"] > 0.98 * 700
    assert per_call < s4["cublas_host_us"]
    assert says(text, "This run's back-to-back line neither shows that nor rules it out")
    assert not says(text, "This run's back-to-back line shows it")
    assert says(text, f"Both kernels ran at the cap, cuBLASLt drawing {s4['cublas_power_w']:.0f} W at "
                      f"{s4['cublas_sm_clock_mhz']:,.0f} MHz and rung 12 {s4['power_w']:.0f} W at "
                      f"{s4['sm_clock_mhz']:,.0f} MHz, and cuBLASLt ran at {s4['cublas_tflops']:,.0f} TFLOP/s, "
                      f"about {per_call:.0f} µs per call: less than the {s4['cublas_host_us']:.0f} µs the host took to "
                      f"queue one in the bursts, so at the median the host queued faster back to back")
    # cuBLASLt's rounds scatter more than rung 12's (in run 11:40Z hardly more; in run 12:35Z 22 times as wide; in
    # run 13:27Z 7 times; in run 18:01Z 3 times, with even the high end's call over the host's time); in run 19:47Z
    # 1.5 times, and even the low end's call is well under the host's time: the scatter does not show a queue
    # running dry
    ci, ki = s4["cublas_iqr"], s4["tflops_iqr"]
    wide = (ci[1] - ci[0]) / (ki[1] - ki[0])
    low_call = 2 * 4096**3 / (ci[0] * 1e12) * 1e6
    assert s4["rounds"] == 4 and wide > 1 and low_call < 0.9 * s4["cublas_host_us"]
    assert says(text, f"cuBLASLt's four rounds scatter more than rung 12's, with an interquartile range from "
                      f"{ci[0]:,.0f} to {ci[1]:,.0f} TFLOP/s against rung 12's {ki[0]:,.0f} to {ki[1]:,.0f}, "
                      f"{wide:.1f} times as wide, but even at the low end of that range a call takes about "
                      f"{low_call:.0f} µs, still under the host's {s4['cublas_host_us']:.0f}")
    assert says(text, "so the scatter does not show the queue running dry either")
    # no further from the bursts than the cell's other rows (run 12:35Z: within 1.1 points; runs 13:27Z and 18:01Z
    # far from them)
    dist = 100 * abs(s4["ratio"] - s4["burst_ratio"])
    others = [sustained(BF16, 4096), sustained(BF16, 8192), s8]
    spread = max(100 * abs(o["ratio"] - o["burst_ratio"]) for o in others)
    assert all(not o["host_bound"] for o in others) and dist <= spread
    assert says(text, f"The two lines would give {s4['ratio']:.1%}, {dist:.1f} points from the bursts' "
                      f"{s4['burst_ratio']:.1%}, and the other three back-to-back rows of the cell stay within "
                      f"{spread:.1f} points of their bursts: this row sits no further from its bursts than they do")
    assert says(text, "The flag stays all the same") and not says(text, "So the flag is borne out")


def test_chapter_12_profile_and_variants(data, text):
    e = lambda who, n, f: data["l2_schedule"][f"{who}@{n}"][f]  # noqa: E731
    pipes = [e(who, n, "tensor_pipe_pct") for n in (4096, 8192) for who in (FP8, "cublas_fp8")]
    assert says(text, f"({pipes[0]:.1f}% against {pipes[1]:.1f}% at 4096, {pipes[2]:.1f}% against {pipes[3]:.1f}% at "
                      f"8192)")
    sms = [e(who, n, "sm_busy_pct") for n in (4096, 8192) for who in (FP8, "cublas_fp8")]
    assert says(text, f"the SMs about as busy ({sms[0]:.1f}% against {sms[1]:.1f}% at 4096, {sms[2]:.1f}% against "
                      f"{sms[3]:.1f}% at 8192)")
    dram = [e(who, 4096, "dram_read_gb") for who in (FP8, "cublas_fp8")]
    assert says(text, f"the DRAM reads small at 4096 ({dram[0]:.2f} against {dram[1]:.2f} GB)")
    for n in (4096, 8192):
        assert e(FP8, n, "l2_hit_pct") > e("cublas_fp8", n, "l2_hit_pct")
        assert abs(e(FP8, n, "sm_busy_pct") - e("cublas_fp8", n, "sm_busy_pct")) < 1.5  # 1.4 points apart at 8192
        assert abs(e(FP8, n, "dram_read_gb") / e("cublas_fp8", n, "dram_read_gb") - 1) < 0.1  # 9% apart at 4096
    assert "128x256" in e("cublas_fp8", 4096, "kernel") and pipes[2] > pipes[0]
    run = {e(who, n, "run") for who in (FP8, "cublas_fp8") for n in (4096, 8192)}
    assert len(run) == 1 and says(text, f"(`tools/l2_schedule.py`, recorded in run {run.pop()})")
    ratio4 = _row(data, FP8, 4096)["ratio"]
    assert says(text, f"What leaves rung 12 {100 * (1 - ratio4):.1f} points short at 4096 is a different kernel, the "
                      f"{_algorithm(_row(data, FP8, 4096)['cublas_ref'])[2]} tile that won this run's rounds")
    v = lambda change, n: data["variants"][f"{FP8}:{json.dumps(change, sort_keys=True)}@{n}"]["ratio"]  # noqa: E731
    group = max(v({}, n) - v({"GROUP_M": 16}, n) for n in (4096, 8192))
    assert says(text, f"a longer group costs up to {100 * group:.1f} points")
    single = sorted(100 * (v({}, n) - v({"CLUSTER": 1}, n)) for n in (4096, 8192))
    assert single[0] > 0 and says(text, f"cost {single[0]:.1f} to {single[1]:.1f}")  # tenths: both round to 9 points
    assert says(text, f"clusters of one give {v({'CLUSTER': 1}, 2048):.1%} of cuBLASLt against the pair's "
                      f"{v({}, 2048):.1%}")


@pytest.mark.slow  # the chapter's own accuracy demo, at its sizes: a few seconds
def test_chapter_12_accumulator_and_cpu_demos(data, text):
    acc = data["accumulator"]
    assert all(p == {"kept": 13, "first_lost": 14} for p in acc[FP8]["placements"].values())
    assert acc[BF16]["placements"]["tiny first"] == {"kept": 23, "first_lost": 24}
    assert says(text, "keeps the tiny product up to 13 binades below the largest term and loses it from 14 on")
    from helpers import fp8
    demo = fp8.scaling_demo(np.random.default_rng(0))
    assert says(text, f"only {demo.unscaled.saturated:.2%} of the values saturate")
    assert says(text, f"wrong by about {demo.unscaled.dot_rel_err:.0%}")
    assert says(text, f"{demo.scaled.subnormal:.0%} of it")
    assert demo.scaled.dot_rel_err < 0.03 and says(text, "err by under 3%")
    a = fp8.accuracy_demo(np.random.default_rng(1)).errors
    scaled, bf16, raw = a["e4m3, per-tensor scales"], a["bf16 inputs"], a["e4m3, no scaling"]
    assert says(text, f"lands at {scaled:.1%}")
    assert round(scaled / bf16) == 14 and says(text, "about fourteen times the error of BF16")
    assert says(text, f"an error of {raw:.0%}")


def test_chapter_11_quotes_chapter_12_as_recorded(data):
    nb = json.loads((ROOT / "chapters" / "11_the_climb.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    up = [_row(data, FP8, n)["tflops"] / _row(data, BF16, n)["tflops"] for n in (4096, 8192)]
    ratio = [_row(data, FP8, n)["ratio"] for n in (4096, 8192)]
    assert says(text, f"{up[0]:.2f} and {up[1]:.2f} times rung 10 at N = 4096 and 8192, and {ratio[0]:.1%} and "
                      f"{ratio[1]:.1%} of cuBLASLt's FP8 GEMM with fast accumulation")
    cc = [data["crosscheck"][f"{FP8}@{n}"] for n in (4096, 8192)]
    bar = _crosscheck_bar()
    # inside the bar at both sizes since run 13:27Z, 4096 the widest gap of the cross-check; the bullet must say so
    assert cc[1]["ok"] and cc[0]["ok"] and 0.5 * bar < abs(cc[0]["gap_points"]) <= bar
    assert says(text, f"Nsight Compute's cross-check passes at both sizes: at 8192 the gap is "
                      f"{abs(cc[1]['gap_points']):.1f} points; at 4096 Nsight Compute gives {cc[0]['ncu_ratio']:.1%} "
                      f"against the harness's {cc[0]['harness_ratio']:.1%}, a gap of {cc[0]['gap_points']:.2f} points, "
                      f"inside the {bar:.0f}-point bar but wider than any other row of the cross-check, for a reason "
                      f"chapter 12 has not yet found")
    assert not says(text, "not confirmed")


def test_chapter_12_names_the_kernel_the_crosscheck_timed(data, text):
    cc = data["crosscheck"][f"{FP8}@4096"]
    (name,) = cc["cublas_kernels"]
    rank, _, tile = _algorithm(cc["cublas"])
    tabled, _, ttile = _algorithm(_row(data, FP8, 4096)["cublas_ref"])
    # "The cross-check's own rounds chose another" (runs 12:35Z, 13:27Z and 19:47Z chose #4; runs 11:40Z and 18:01Z
    # the table's #5)
    assert rank != tabled and says(text, f"What leaves rung 12 {100 * (1 - _row(data, FP8, 4096)['ratio']):.1f} "
                                         f"points short at 4096 is a different kernel, the {ttile} tile")
    # the kernel's name spells the label's tile, its k depth and stages, and the 1 x 2 cluster ("clusters along N")
    m = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_1x2_", name)
    assert m and f"{m[1]} × {m[2]}" == tile and m[3] == "128" and "coop" not in name
    assert says(text, f"The cross-check's own rounds chose another: the heuristic's #{rank}, `{name}` at 4096, a "
                      f"{tile} tile with {m[4]} stages and clusters along N, without the `coopA`")
    assert says(text, f"timed it at {cc['ncu_cublas_ms'] * 1e3:.1f} µs against rung 12's "
                      f"{cc['ncu_kernel_ms'] * 1e3:.1f} µs")
    # "its lead is thin": the table's runner-up is the algorithm the cross-check's rounds put first, close behind
    # (run 11:40Z: 0.9%; run 12:35Z: 1.1%; run 19:47Z: 0.2%); the power cell crowned the table's winner (in run 18:01Z
    # the cross-check's rounds did too)
    fast = {int(k.rsplit("#", 1)[1]) if "#" in k else 1: t["tflops"] for k, t in _contenders(data, 4096).items()
            if "fast heuristic" in k}  # the heuristic's rank -> TFLOP/s in the table's rounds
    win = fast.pop(tabled)
    rank2 = max(fast, key=fast.get)
    t2 = fast[rank2]
    assert rank2 == rank and win / t2 - 1 < 0.02
    assert says(text, f"The {ttile} tile's lead over the field is thin: in the table's rounds the heuristic's "
                      f"#{rank2} came within {win / t2 - 1:.1%} of it ({t2:,.1f} against {win:,.1f} TFLOP/s), the "
                      f"cross-check's rounds put #{rank} first")
    srank, _, stile = _algorithm(data["sustained"][f"{FP8}@4096"]["cublas_ref"])
    assert srank == tabled and stile == ttile and says(text, f"the power cell's rounds above crowned #{srank}.")
    assert not says(text, "The cross-check's own rounds chose it too")


def test_chapter_12_names_the_limit_the_profile_shows():
    """The cell after the profile figure names what binds rung 12 at 8192 by the metrics limit_of reads from the
    recorded profiles, and compares them with rung 10's, which the same figure draws."""
    from helpers.figures import limit_of
    from helpers.figures.profile import ROOFS
    from helpers.ceilings import recorded_ceilings
    from helpers.ladder import recorded_entry
    nb = json.loads((ROOT / "chapters" / "12_fp8.ipynb").read_text())
    ids = [c["id"] for c in nb["cells"]]
    i = ids.index("c12-profile-md")
    assert ids[i - 1] == "c12-profile" and nb["cells"][i]["cell_type"] == "markdown"
    assert 'fig_profile("12_fp8", "10_beyond_cublas", n=8192)' in "".join(nb["cells"][i - 1]["source"])
    md = prose("".join(nb["cells"][i]["source"]))
    x, b = limit_of(FP8, 8192), limit_of(BF16, 8192)
    e, eb = recorded_entry("profiles", f"{FP8}@8192"), recorded_entry("profiles", f"{BF16}@8192")
    intro = prose("".join(nb["cells"][ids.index("ch12-37")]["source"]))  # the section's opening names both runs
    assert says(intro, f"rung 12's recorded in run {e['run']}, rung 10's in run {eb['run']}")
    assert x["roof"] == b["roof"] and x["pipe"] == b["pipe"] == "tensor"  # "the same roof"
    assert says(md, f"Nsight Compute on {FP8} at N = 8192 (run {e['run']}): the top stall is `{x['top_stall']}` "
                    f"({x['top_share']:.0%} of the sampled stalls), the tensor pipe is busy {x['pipe_pct']:.0f}% of "
                    f"the time, and L2 delivers {e['l2_tbps']:.2f} TB/s, {x['l2_fraction_of_roof']:.0%} of the "
                    f"{ROOFS[x['roof']]} roof")
    assert abs(e["l2_tbps"] / recorded_ceilings()[x["roof"]].value - x["l2_fraction_of_roof"]) < 1e-9
    # "rung 10's profile, a little worse": the same top stall, a larger share of it, a less busy pipe
    assert x["top_stall"] == b["top_stall"] and x["top_share"] > b["top_share"] and x["pipe_pct"] < b["pipe_pct"]
    assert says(md, f"rung 10 has `{b['top_stall']}` at {b['top_share']:.0%}, its tensor pipe busy "
                    f"{b['pipe_pct']:.0f}% of the time and L2 at {b['l2_fraction_of_roof']:.0%} of the same roof")
    # "not the load path": neither comes near its roof, and rung 10 draws more through the same path
    assert max(x["l2_fraction_of_roof"], b["l2_fraction_of_roof"]) < 0.75
    assert b["l2_fraction_of_roof"] > x["l2_fraction_of_roof"]
    assert says(md, f"neither rung comes near that roof, and rung 10 draws {eb['l2_tbps'] / e['l2_tbps'] - 1:.0%} "
                    f"more through it")
    assert says(md, f"What leads is the {x['top_stall']}") and x["top_share"] > 0.5  # "most of ... stalled warps"


def test_chapter_12_promoted_section_matches_its_record(text):
    # ci/fp8_promoted.py's record (outside the run): the builds and both cuBLASLt modes, same rounds per shape
    from experiments.fp8_promoted import LT_FAST, LT_PROMOTED, record as promoted_record
    rec = promoted_record()
    every = "12_fp8_promoted, every 256 k"
    rows = {tuple(r["shape"]): r for r in rec["time"]}
    t = {s: {**{b: r[b]["tflops"] for b in ("12_fp8", "12_fp8, 128 x 128", "12_fp8_promoted", every)},
             "lt": r["cublas_groups"][LT_PROMOTED]["tflops"], "fast": r["cublas_groups"][LT_FAST]["tflops"]}
         for s, r in rows.items()}
    a, b = t[(4096,) * 3], t[(8192,) * 3]
    cost = [1 - x["12_fp8_promoted"] / x["12_fp8, 128 x 128"] for x in (a, b)]
    assert says(text, f"The promotion costs {cost[0]:.0%} at N = 4096 and {cost[1]:.0%} at 8192** on the same tile: "
                      f"{a['12_fp8_promoted']:,.1f} against {a['12_fp8, 128 x 128']:,.1f} TFLOP/s and "
                      f"{b['12_fp8_promoted']:,.1f} against {b['12_fp8, 128 x 128']:,.1f}")
    tile = [1 - x["12_fp8, 128 x 128"] / x["12_fp8"] for x in (a, b)]
    assert says(text, f"The tile costs {tile[0]:.0%} and {tile[1]:.0%} ({a['12_fp8, 128 x 128']:,.1f} against "
                      f"{a['12_fp8']:,.1f}, {b['12_fp8, 128 x 128']:,.1f} against {b['12_fp8']:,.1f})")
    whole = [x["12_fp8_promoted"] / x["12_fp8"] for x in (a, b)]
    assert says(text, f"Together, {whole[0]:.2f} and {whole[1]:.2f} of rung 12: below the napkin's 0.80-0.85")
    assert max(whole) < 0.80
    assert says(text, f"the adds cost {100 * min(cost):.0f}-{max(cost):.0%}, not the 5%")
    vs_lt = {s: x["12_fp8_promoted"] / x["lt"] for s, x in t.items()}
    assert says(text, f"{vs_lt[(4096,) * 3]:.3f} at 4096, {vs_lt[(8192,) * 3]:.3f} at 8192, "
                      f"{vs_lt[(2048,) * 3]:.3f} at 2048 and {vs_lt[(8192, 8192, 1024)]:.3f} at 8192 × 8192 × 1024")
    assert says(text, f"missed, at {min(vs_lt.values()):.3f}-{max(vs_lt.values()):.3f} and "
                      f"{min(x['12_fp8_promoted'] / x['12_fp8'] for x in t.values()):.3f}-"
                      f"{max(x['12_fp8_promoted'] / x['12_fp8'] for x in t.values()):.3f}")
    assert says(text, f"({a['lt']:,.1f} against {a['fast']:,.1f}, {b['lt']:,.1f} against {b['fast']:,.1f})")
    assert says(text, f"promotion costs it {1 - a['lt'] / a['fast']:.0%} and {1 - b['lt'] / b['fast']:.0%}")
    assert 0.97 <= a["12_fp8, 128 x 128"] / a["lt"] < 1  # "comes within 3% of cuBLASLt's promoted mode at 4096"
    labels = {r["cublas_groups"][LT_PROMOTED]["label"] for r in rec["time"]}
    assert {re.search(r"tile (\d+x\d+), cluster 1x2x1", x).group(1) for x in labels} == {"128x128", "144x128"}
    # every 256 k: half the adds
    assert says(text, f"{a[every]:,.1f} and {b[every]:,.1f} TFLOP/s, {a[every] / a['12_fp8, 128 x 128']:.2f} and "
                      f"{b[every] / b['12_fp8, 128 x 128']:.2f} of the unpromoted tile, {a[every] / a['lt']:.3f} and "
                      f"{b[every] / b['lt']:.3f} of cuBLASLt's promoted mode")
    assert all(1 - x[every] / x["12_fp8, 128 x 128"] < (1 - x["12_fp8_promoted"] / x["12_fp8, 128 x 128"]) / 2
               for x in (a, b))  # "more than half of their cost"
    # the profiles at 8192
    p = rec["profile"]
    pr, nr, ev = p["12_fp8_promoted"], p["12_fp8, 128 x 128"], p[every]
    assert says(text, f"the tensor pipe is busy {pr['tensor_active_pct']:.1f}% of the time, "
                      f"{ev['tensor_active_pct']:.1f}% adding every 256 k, against {nr['tensor_active_pct']:.1f}% "
                      f"without the adds")
    st = lambda e, k: round(100 * e["stall_reasons"][k])  # noqa: E731
    assert says(text, f"`warpgroup_arrive`, {st(pr, 'warpgroup_arrive')}% of the stalled samples against "
                      f"{st(nr, 'warpgroup_arrive')}%, and `dispatch_stall`, {st(pr, 'dispatch_stall')}% against "
                      f"{st(nr, 'dispatch_stall')}%")
    assert says(text, f"It is as large when the adds come half as often ({st(ev, 'warpgroup_arrive')}%)")
    # the first try, one partial-sum buffer
    ft = {tuple(r["shape"]): r for r in rec["first_try"]["time"]}[(4096,) * 3]
    fp = rec["first_try"]["profile"]
    assert says(text, f"The first try ran at {ft['12_fp8_promoted']['tflops'] / ft['12_fp8']['tflops']:.2f} of rung 12 "
                      f"at N = 4096 ({ft['12_fp8_promoted']['tflops']:,.1f} against {ft['12_fp8']['tflops']:,.1f} "
                      f"TFLOP/s), and its tensor pipe was busy {fp['12_fp8_promoted']['tensor_active_pct']:.1f}% of the "
                      f"time at 8192, against {fp['12_fp8, 128 x 128']['tensor_active_pct']:.1f}%")
    assert says(text, "0.62 of rung 12 at N = 4096 here")
    assert says(text, f"{whole[0]:.2f} of rung 12 and {vs_lt[(4096,) * 3]:.2f} of cuBLASLt's promoted mode at N = 4096, "
                      f"in an experiment outside the run; the adds cost {cost[0]:.0%}")
    # the probe: what promotion buys, and what every 256 k gives back
    got = rec["probe"]
    assert got["12_fp8_promoted"]["across k tiles"] == {"kept": 23, "first_lost": 24}
    assert all(v == {"kept": 13, "first_lost": 14} for v in got["12_fp8"].values())
    assert all(v == {"kept": 13, "first_lost": 14} for v in got[every].values())
    assert says(text, "inside a k tile it keeps the same 13 binades, across k tiles 23")
    assert says(text, "the tiny product is lost from d = 14 again")
