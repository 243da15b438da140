"""What chapters 00 to 03 teach from their measurements, as predicates over the book's recorded run. The chapters
render every measured number and every conclusion drawn from one (helpers.prose, in hidden-input cells that nbval
holds to the replayed run); these tests hold the conclusions themselves, so a re-recorded run needs no edit here
unless a conclusion a chapter teaches stops being true, and then the assertion says which. Runs without a GPU."""
import json
import math

import pytest

from helpers import results
from helpers.hardware import DENSE_BF16_FLOPS, FP32_FLOPS, SMS
from helpers.registry import ROOT

from conftest import prose, says

SIZES = (4096, 8192)


@pytest.fixture(scope="module")
def data():
    return results.load(results.path_for())


def _row(data, rung_id: str, n: int):
    from helpers.ladder import Row
    return Row.from_entry(data["gemm"][results.gemm_key(rung_id, n, n, n)], "recorded")


def _markdown(name: str) -> str:
    nb = json.loads((ROOT / "chapters" / name).read_text())
    return prose("\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"))


def test_chapter_00_explains_its_gaps_with_what_it_recorded(data):
    """The datasheet is never met: random operands draw more power and run at a lower clock than zeros; short bursts
    run faster than the same GEMM back to back; every compute ceiling sits below its datasheet peak, and the clock
    under BF16 load explains most of the tensor cores' gap; the FP32 pipe is more than ten times slower than mma.sync."""
    c = data["ceilings"]
    zero, real = c["hgmma_peak"], c["hgmma_peak_random"]
    assert real["value"] < zero["value"] and real["sm_clock_mhz"] < zero["sm_clock_mhz"], \
        "random operands no longer run at a lower clock than zero operands (chapter 00's wgmma probes)"
    assert real["power_w"] > zero["power_w"], "random operands no longer draw more power than zeros"
    burst, steady = c["cublas_bf16_8192"]["value"], c["cublas_bf16_8192_back_to_back"]["value"]
    assert steady < burst, f"short bursts no longer run faster than the same GEMM back to back: {steady} vs {burst}"
    paper = {"ffma_peak": FP32_FLOPS, "hmma_peak": DENSE_BF16_FLOPS, "hgmma_peak": DENSE_BF16_FLOPS,
             "hgmma_peak_random": DENSE_BF16_FLOPS}
    over = [k for k, p in paper.items() if c[k]["value"] * 1e12 > p]
    assert not over, f"measured ceilings above the datasheet, against chapter 00's summary: {over}"
    at_clock = SMS * 4096 * c["sm_clock_bf16_load"]["value"] * 1e6
    assert DENSE_BF16_FLOPS - at_clock > (DENSE_BF16_FLOPS - steady * 1e12) / 2, \
        "the SM clock under BF16 load no longer explains most of the gap to the datasheet"
    assert c["hmma_peak"]["value"] > 10 * c["ffma_peak"]["value"], "the FP32 pipe is no longer ten times slower"


def test_chapter_00_converts_cycles_at_the_clock_the_kernels_ran_at(data):
    """NVML's clock on a short burst is a stale sample: Nsight Compute's elapsed-cycle rate of every mma.sync rung
    (chapters 02-05) reads below the NVML clock stamped on the same rung's timed batches, while the FP32 rungs run
    near the boost clock; a burst ceiling's clock is labelled a sample, a held one's is not."""
    from helpers.ceilings import ceiling
    from helpers.figures import recorded_profile
    for r in ("02_wmma_naive", "02_wmma_smem", "03_mma_sync", "04_swizzle", "05_cp_async"):
        ran, nvml = recorded_profile(r, 4096)["sm_clock_mhz"], _row(data, r, 4096).sm_clock_mhz
        assert ran < 0.95 * nvml, f"{r} ran at {ran:.0f} MHz by Nsight Compute, no longer below NVML's {nvml:.0f}"
    for r in ("01_coalesced", "01_warptiled"):
        assert recorded_profile(r, 4096)["sm_clock_mhz"] > 1900, f"{r} no longer runs near the boost clock"
    assert "NVML sample" in str(ceiling("ffma_peak")) and "NVML sample" not in str(ceiling("hgmma_peak_random"))


def test_chapter_00_reads_the_l2_to_sm_counter_and_the_path_roofs_alike(data):
    """The L2-to-SM counter counts bytes landed in each receiving SM, multicast copies included: rung 10 before and
    after its CTAs pair up lands the same bytes (every tile's A and B slabs) while L2 serves fewer sectors. Like for
    like, at the same 20 MB working set, TMA reads above LDG but less far above it than the 2.6 MB figure says."""
    raw = {r: results.metrics("profiles", f"{r}@8192", results.path_for())["raw"]
           for r in ("10_persistent", "10_cluster")}
    landed = {r: m["l1tex__m_xbar2l1tex_read_bytes.sum"] for r, m in raw.items()}
    served = {r: m["lts__t_sectors_srcunit_tex_op_read.sum"] for r, m in raw.items()}
    clusters = [data["profiles"][f"{r}@8192"]["cluster"] for r in ("10_persistent", "10_cluster")]
    assert clusters == [1, 2], f"the pair compared is no longer solo against multicast pairs: {clusters}"
    assert abs(landed["10_cluster"] / landed["10_persistent"] - 1) < 0.01, \
        f"multicast changed the L2-to-SM bytes: {landed}; the counter may not count each receiver (chapter 00)"
    assert served["10_cluster"] < 0.9 * served["10_persistent"], "multicast no longer cuts the sectors L2 serves"
    bm, bn = data["profiles"]["10_persistent@8192"]["tile"][:2]
    assert abs(landed["10_persistent"] / ((8192 // bm) * (8192 // bn) * (bm + bn) * 8192 * 2) - 1) < 0.01
    c = data["ceilings"]
    same, mixed = c["tma_l2_read"]["value"] / c["l2_read"]["value"], c["tma_l2_gemm"]["value"] / c["l2_read"]["value"]
    assert 1 < same < mixed, f"TMA over LDG at the same 20 MB (x{same:.2f}) vs at 2.6 MB (x{mixed:.2f}) moved"


def test_chapter_01_rung_5_credits_what_the_sass_and_registers_show(data):
    from helpers import build, rung
    from helpers.models import blocks_per_sm
    text = _markdown("01_fp32_simt.ipynb")
    b4, b5 = (build(rung(r)) for r in ("01_blocktile_2d", "01_vectorized"))
    for b, r in ((b4, "01_blocktile_2d"), (b5, "01_vectorized")):
        inv = b.inventory(rung(r).entry)
        assert inv.get("LDS.128") == 32 and not any(op == "LDS" or op.startswith("LDS.32") for op in inv), inv
    regs = [b.resources[rung(r).entry].registers for b, r in ((b4, "01_blocktile_2d"), (b5, "01_vectorized"))]
    assert says(text, f"the register count: {regs[1]} instead of {regs[0]}")
    fits = [blocks_per_sm(x, 256, 8192 + 1024)["blocks"] for x in regs]
    assert fits == [1, 2] and says(text, "one block per SM") and says(text, "two blocks fit")
    for n in SIZES:
        gain = _row(data, "01_vectorized", n).tflops / _row(data, "01_blocktile_2d", n).tflops
        assert gain > 2, f"rung 5 no longer more than doubles rung 4's rate at N={n}: x{gain:.2f}"


def test_chapter_01_counts_the_copies_per_tile_from_the_sass_and_the_run(data):
    """Per thread and k tile rung 4 runs 8 scalar LDG and 8 STS (its SASS holds 14 of each: a 4-way body and a
    remainder), rung 5 two LDG.E.128, one STS.128 and four scalar STS (A's transpose); the stall sites show the copy
    body running once per warp and k tile, as often as an FFMA of the k loop."""
    from helpers import build, rung
    from helpers.figures import limit_of
    inv4 = build(rung("01_blocktile_2d")).inventory(rung("01_blocktile_2d").entry)
    inv5 = build(rung("01_vectorized")).inventory(rung("01_vectorized").entry)
    assert inv4["STS"] == 14 and inv4["LDG.E.CONSTANT"] == 14, inv4
    assert inv5["STS"] == 4 and inv5["STS.128"] == 1 and inv5["LDG.E.128.CONSTANT"] == 2, inv5
    b4 = build(rung("01_blocktile_2d")).consts
    assert b4["BM"] * b4["BK"] // b4["THREADS"] + b4["BK"] * b4["BN"] // b4["THREADS"] == 8
    for r in ("01_blocktile_2d", "01_vectorized"):
        sites = limit_of(r, 4096)["sites"]["sites"]
        sts = max(s["executed"] for s in sites if s["opcode"] == "STS")
        ffma = max(s["executed"] for s in sites if s["opcode"] == "FFMA")
        assert sts == ffma, f"{r}'s STS no longer runs once per warp and k tile: {sts} vs {ffma}"


def test_chapter_01_last_rung_issue_share_and_instruction_mix(data):
    """Rung 6 is not purely issue-bound: its schedulers issue in under 90% of the cycles, and the idle cycles' samples
    are mostly barrier and shared-memory waits; dispatch_stall costs almost no issue slots (its samples fall in cycles
    that issued anyway). FFMAs are a larger share of what ran (the profile's executed count) than of the static SASS,
    and each FFMA site ran once per warp and k tile in each profiled launch."""
    from helpers import build, rung
    from helpers.figures import limit_of
    raw = results.metrics("profiles", "01_warptiled@4096", results.path_for())["raw"]
    assert raw["sm__issue_active.avg.pct_of_peak_sustained_elapsed"] < 90, "rung 6 now issues in 90% of cycles"
    pre = "smsp__pcsamp_warps_issue_stalled_"
    idle = {k[len(pre):-len("_not_issued")]: v for k, v in raw.items()
            if k.startswith(pre) and k.endswith("_not_issued")}
    top = sorted(idle, key=lambda k: -idle[k])[:2]
    assert set(top) == {"barrier", "short_scoreboard"}, f"rung 6's idle cycles now wait on {top}"
    assert raw[pre + "dispatch_stall_not_issued"] < 0.05 * raw[pre + "dispatch_stall"], "dispatch_stall costs slots"
    inv = build(rung("01_warptiled")).inventory(rung("01_warptiled").entry)
    ran = raw["sass__inst_executed_per_opcode"]
    assert inv["FFMA"] / sum(inv.values()) < 0.75 < 4096 ** 3 / 32 / ran <= 1, "the static vs executed FFMA share moved"
    b = build(rung("01_warptiled")).consts
    per_warp_tile = (4096 // b["BM"]) * (4096 // b["BN"]) * b["THREADS"] // 32 * (4096 // b["BK"])
    ffma = [s["executed"] for s in limit_of("01_warptiled", 4096)["sites"]["sites"] if s["opcode"] == "FFMA"]
    assert ffma and all(e % per_warp_tile == 0 for e in ffma), "an FFMA site no longer runs once per warp and k tile"


def test_chapter_01_measures_what_the_second_block_buys(data):
    """Rung 4 held to 128 registers (MIN_BLOCKS = 2, tools/tune.py's variant) against rung 4 and rung 5: occupancy
    and the wider loads share the step about equally."""
    v = data["variants"]['01_blocktile_2d:{"MIN_BLOCKS": 2}@4096']
    assert v["registers"] <= 128 and v["correct"]
    four, five = (_row(data, r, 4096).tflops for r in ("01_blocktile_2d", "01_vectorized"))
    share = math.log(v["tflops"] / four) / math.log(five / four)
    assert abs(share - 0.5) < 0.1, f"the second block no longer buys about half of rung 5's step: {share:.0%}"


def test_chapter_01_ends_issue_bound_below_cublas_and_the_probe(data):
    """The coalesced rung sits above the L2 roof at its tiling's intensity (L1 serves the repeats); the last rung's
    top stall is not_selected (it presses on its issue slots; how far: the issue-share test above) with L2 far from
    its roof; cuBLAS FP32 stops below the FFMA probe."""
    from helpers import intensity, rung
    from helpers.figures import limit_of
    c = data["ceilings"]
    co = _row(data, "01_coalesced", 4096).tflops
    assert co > c["l2_read"]["value"] * intensity(rung("01_coalesced")), "the coalesced rung no longer sits above L2"
    lim = limit_of("01_warptiled", 4096)
    assert lim["top_stall"] == "not_selected", f"rung 6's top stall is no longer not_selected: {lim['top_stall']}"
    assert lim["l2_fraction_of_roof"] < 0.5, f"rung 6's L2 is near its roof: {lim['l2_fraction_of_roof']:.0%}"
    assert all(_row(data, "01_warptiled", n).cublas_tflops < c["ffma_peak"]["value"] for n in SIZES), \
        "cuBLAS FP32 no longer stops below the FFMA probe"


def test_chapter_02_prediction_and_measurement(data):
    """The napkin: the naive rung's L2 cap is close to the FFMA probe, the smem rung's comfortably above it and far
    below mma.sync, and the tensor cores would need more than ten times the L2 bandwidth. The measurement: the
    naive rung loses to the warptiled FP32 kernel at both sizes; the smem rung is more than 4x the naive one, about
    3x the warptiled one, more than twice the FFMA probe, about a fifth of the mma.sync probe; HBM delivers under a
    fifth of the bytes either rung's loads ask for (their profiles' DRAM reads), so L2 and L1 serve the repeated
    reads, and both reach about half of their L2 caps; its profile is mio_throttle and long_scoreboard, with neither
    the tensor pipe nor L2 binding; chapter 03's first kernel is slower than the padded rung.
    Whether a rung also runs faster than its HBM cap depends on the board, and the chapter renders it from the run:
    on the H100 both did; on the H200, whose HBM copy probe is faster, the naive rung runs under its cap."""
    from helpers import intensity, rung
    from helpers.figures import limit_of, recorded_profile
    from helpers.hardware import TENSOR_BOOST_HZ
    c = data["ceilings"]
    l2, ffma, hmma = (c[k]["value"] for k in ("l2_read", "ffma_peak", "hmma_peak"))
    naive_ai, smem_ai = intensity(rung("02_wmma_naive")), intensity(rung("02_wmma_smem"))
    assert 0.8 <= l2 * naive_ai / ffma <= 1.25, "the naive rung's L2 cap no longer lands close to the FFMA probe"
    assert l2 * smem_ai > 2 * ffma and l2 * smem_ai < 0.5 * hmma, "the smem rung's cap moved against the prediction"
    assert SMS * 512 * TENSOR_BOOST_HZ / 1e12 > 10 * l2, "the tensor cores' need is no longer ten times L2"
    t = {(r, n): _row(data, r, n).tflops for r in ("01_warptiled", "02_wmma_naive", "02_wmma_smem") for n in SIZES}
    for n in SIZES:
        assert t["02_wmma_naive", n] < t["01_warptiled", n], f"the naive WMMA rung no longer loses at N={n}"
        assert t["02_wmma_smem", n] / t["02_wmma_naive", n] > 4, f"the smem rung is not 4x the naive one at N={n}"
        assert 2.8 <= t["02_wmma_smem", n] / t["01_warptiled", n] <= 3.2, f"the smem rung is not ~3x SIMT at N={n}"
        assert t["02_wmma_smem", n] > 2 * ffma, f"the smem rung is not twice the FFMA probe at N={n}"
        assert 0.17 <= t["02_wmma_smem", n] / hmma <= 0.23, f"the smem rung is not a fifth of mma.sync at N={n}"
    for r, ai in (("02_wmma_naive", naive_ai), ("02_wmma_smem", smem_ai)):
        from_hbm = recorded_profile(r, 4096)["dram_read_bytes"] / (2 * 4096 ** 3 / ai)  # of the bytes its loads ask for
        assert from_hbm < 0.2, f"HBM now delivers {from_hbm:.0%} of what {r}'s loads ask for, not L2 and L1"
        assert 0.4 <= t[r, 4096] / (l2 * ai) <= 0.6, f"{r} no longer reaches about half of its L2 cap"
    lead = sorted(recorded_profile("02_wmma_smem", 4096)["stall_reasons"].items(), key=lambda kv: -kv[1])[:2]
    assert {s for s, _ in lead} == {"mio_throttle", "long_scoreboard"}, f"02_wmma_smem's stalls changed: {lead}"
    lim = limit_of("02_wmma_smem", 4096)
    assert lim["pipe_pct"] < 50 and lim["l2_fraction_of_roof"] < 0.8, "the tensor pipe or L2 now binds 02_wmma_smem"
    assert _row(data, "03_mma_sync", 4096).tflops < t["02_wmma_smem", 4096], "rung 03 is no longer slower than 02"
    paper = DENSE_BF16_FLOPS / FP32_FLOPS  # the datasheet's sixteen; the chapter renders the probes' ratio beside it
    assert 8 <= hmma / ffma < 0.8 * paper, "the probes' mma.sync / FFMA ratio no longer sits well below sixteen"
    p = recorded_profile("02_wmma_smem", 4096)
    issue_active = p["issuing_share"] * p["occupancy_pct"] / 100 * 64 / 4  # a warp's issuing share x warps/scheduler
    assert issue_active < 0.5 and lead[0][0] == "mio_throttle", \
        "02_wmma_smem's binding limit is no longer the MIO queue with the issue slots mostly idle"


def test_chapter_02_error_grows_like_k_through_the_tensor_cores(data):
    """The BF16 rungs' error against the FP32 reference doubles with K (a biased rounding in the accumulation), while
    the FP32 SIMT rungs' error against float64 grows like sqrt(K) (round to nearest in another order); both pass."""
    for r in ("02_wmma_naive", "02_wmma_smem"):
        e = [_row(data, r, n).rel_err for n in SIZES]
        assert e[1] / e[0] > 1.8 and e[1] < 1e-4, f"{r}'s error no longer grows like K: {e}"
    e = [_row(data, "01_warptiled", n).rel_err for n in SIZES]
    assert e[1] / e[0] < 1.6, f"the FP32 rung's error no longer grows like sqrt(K): {e}"


def test_chapter_03_napkin_and_measurement(data):
    """Padded WMMA already runs at about the unswizzled shared-memory ceiling (converted at the clock rung 03 ran
    at, Nsight Compute's), so rung 03 is slower than it, below the ceiling and well under it, at practically the same
    rate at both sizes; the gap is the shared-memory pipe's idle time (its rate over the ceiling is the pipe's busy
    share), not mostly the global loads (long_scoreboard under a fifth), and most samples wait at the HMMAs; Nsight
    Compute counts the conflict degree the model computes; the shared-memory pipe is busier than padded WMMA's; the
    top stall is short_scoreboard."""
    from helpers.exercises import PREDICTIONS
    from helpers.figures import limit_of, recorded_profile
    from helpers.hardware import MAX_SM_CLOCK_HZ
    from helpers.sites import by_kind
    prof = recorded_profile("03_mma_sync", 4096)
    ceiling = PREDICTIONS["03", 3].model({}) * prof["sm_clock_mhz"] * 1e6 / MAX_SM_CLOCK_HZ
    padded = _row(data, "02_wmma_smem", 4096).tflops
    assert padded >= 0.9 * ceiling, f"padded WMMA no longer runs at about the {ceiling:.0f} TFLOP/s ceiling"
    rate = {n: _row(data, "03_mma_sync", n).tflops for n in SIZES}
    assert rate[4096] < padded, "rung 03 is no longer slower than padded WMMA at N = 4096"
    assert all(r < 0.8 * ceiling for r in rate.values()), "rung 03 no longer stays well under its ceiling"
    assert abs(rate[8192] / rate[4096] - 1) < 0.02, "rung 03's rate now changes with N"
    bc = data["bank_conflicts"]["03_mma_sync"]
    assert abs(bc["measured_degree"] - bc["computed_degree"]) < 0.01, "the counted conflict degree left the model"
    assert recorded_profile("03_mma_sync", 4096)["smem_pipe_pct"] > recorded_profile("02_wmma_smem", 4096)["smem_pipe_pct"]
    assert limit_of("03_mma_sync", 4096)["top_stall"] == "short_scoreboard"
    assert abs(rate[4096] / ceiling - prof["smem_pipe_pct"] / 100) < 0.05, \
        "rung 03's share of its ceiling no longer matches the shared-memory pipe's busy share"
    assert prof["stall_reasons"]["long_scoreboard"] < 0.2, "the wait for global loads is now a large part of rung 03's gap"
    kinds = by_kind(limit_of("03_mma_sync", 4096)["sites"])
    assert max(kinds, key=kinds.get) == "mma.sync", f"rung 03's warps no longer wait most at the HMMAs: {kinds}"


def test_chapter_00_reads_the_paths_alike_and_separates_sharing_from_size(data):
    """Chapter 00's alike sweep: at each working set LDG, cp.async and TMA (each CTA its own slice) are within 10% of
    each other; at 2.7 MB TMA in the shared walk reads more than with distinct slices (sharing, not size, made the old
    small-set number high); l2_read, one load in flight per thread, reads below LDG alike at the largest set; HBM read
    alone runs above the copy; chapter 10's rungs draw more from L2 than the distinct-slice TMA roof at 2.7 MB."""
    from helpers.figures import recorded_profile
    from helpers.probes import READ_PATHS, READ_SETS
    c = data["ceilings"]
    for s in READ_SETS:
        got = [c[f"read_{p}@{s}"]["value"] for p in READ_PATHS]
        assert max(got) / min(got) < 1.1, f"the three load paths are no longer within 10% of each other at {s}: {got}"
    shared, distinct = c["read_tma_shared@2.7MB"]["value"], c["read_tma@2.7MB"]["value"]
    assert shared > distinct, f"TMA in the shared walk no longer reads more than distinct slices: {shared} vs {distinct}"
    assert c["l2_read"]["value"] < c[f"read_ldg@{list(READ_SETS)[-1]}"]["value"], "l2_read no longer understates LDG"
    assert c["hbm_read"]["value"] > c["hbm_copy"]["value"], "HBM read-only no longer runs above the copy"
    drawn = [recorded_profile(r, 8192)["l2_tbps"] for r in ("10_persistent", "10_cluster", "10_chip")]
    assert min(drawn) > distinct, f"chapter 10's rungs no longer draw above the distinct-slice TMA roof: {drawn}"
