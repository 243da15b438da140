"""Chapter 10 from "Every size, a long run, and what was tried" to the end: what it teaches, as predicates over the
book's run (results/) and over the experiments' own records (experiments/<name>/record.json). The chapter renders
these numbers from the same data (helpers.prose; nbval holds the rendered text to the replayed run), so a re-run
fails here only where a conclusion the chapter teaches no longer holds, and each message says which."""
import json

import pytest

from helpers import results

from conftest import says

FINAL = "10_chip"  # the kernel chapter 10's file builds, with its tile per shape
PDL = "10_pdl"     # step 6: the same kernel, launched to overlap the one before
LAST = "10_overlap"  # the chapter's last step (step 7), the final BF16 rung
SIZES = (4096, 8192)


@pytest.fixture(scope="module")
def data():
    return results.load(results.path_for())


def _row(data, rung, n, k=None):
    from helpers.ladder import Row
    return Row.from_entry(data["gemm"][results.gemm_key(rung, n, n, k or n)], "recorded")


def _variant(data, change, n):
    return data["variants"][f"{FINAL}:{json.dumps(change, sort_keys=True)}@{n}"]


def test_held_back_to_back_both_kernels_slow_under_the_cap_and_stay_level(data):
    """The long run: held back to back, both the final rung and cuBLAS run at a lower clock and rate than in bursts;
    the rung stays level with cuBLAS and not ahead, at about the same energy per FLOP and clock, both under the
    power-limited wgmma ceiling."""
    roof = data["ceilings"]["hgmma_peak_random"]["value"]
    for n in SIZES:
        s, b = data["sustained"][f"{FINAL}@{n}"], _row(data, FINAL, n)
        assert s["sm_clock_mhz"] < b.sm_clock_mhz and s["cublas_sm_clock_mhz"] < b.cublas_sm_clock_mhz, \
            f"held back to back, the clock no longer falls below the bursts' at N={n}"
        assert s["tflops"] < b.tflops and s["cublas_tflops"] < b.cublas_tflops, \
            f"held back to back, the kernels no longer lose rate against their bursts at N={n}"
        assert 0.97 <= s["ratio"] < 1, f"the rung is no longer level with cuBLAS and behind it in a long run at N={n}"
        assert abs(s["pj_per_flop"] / s["cublas_pj_per_flop"] - 1) < 0.05, \
            f"the rung no longer spends about cuBLAS's energy per FLOP at N={n}"
        assert abs(s["sm_clock_mhz"] / s["cublas_sm_clock_mhz"] - 1) < 0.05, \
            f"the cap no longer holds both clocks close at N={n}"
        assert max(s["tflops"], s["cublas_tflops"]) < roof, f"a long run now passes the wgmma ceiling at N={n}"


def test_no_switch_helps_and_clusters_of_one_lead_only_at_2048(data):
    """The switches swept against the final rung: none helps at the target sizes (beyond the rounds' spread); the
    group length moves it by under 2 points; row order and clusters of one cost at full waves; four C buffers never
    help; at N = 2048 clusters of one lead every variant in pairs (the rule the launch takes)."""
    tried = ({"GROUP_M": 4}, {"GROUP_M": 16}, {"SCHEDULE": 0}, {"CLUSTER": 1}, {"C_BUFFERS": 4})
    base = {n: _variant(data, {}, n) for n in (2048, 4096, 8192)}
    for n in SIZES:
        for ch in tried:
            assert _variant(data, ch, n)["tflops_iqr"][0] <= base[n]["tflops_iqr"][1], \
                f"the switch {ch} now helps the final rung at N={n}"
    assert all(abs(_variant(data, {"GROUP_M": g}, n)["ratio"] - base[n]["ratio"]) < 0.02 for g in (4, 16)
               for n in base), "the group length now moves the rung by 2 points or more"
    assert _variant(data, {"SCHEDULE": 0}, 8192)["ratio"] < base[8192]["ratio"], "row order no longer costs at 8192"
    assert all(_variant(data, {"CLUSTER": 1}, n)["ratio"] < base[n]["ratio"] for n in SIZES), \
        "clusters of one no longer lose at full waves"
    assert all(_variant(data, {"C_BUFFERS": 4}, n)["ratio"] < base[n]["ratio"] for n in base), \
        "four C buffers now help at some size"
    pairs = [_variant(data, ch, 2048)["ratio"] for ch in ({}, *tried) if ch != {"CLUSTER": 1}]
    assert _variant(data, {"CLUSTER": 1}, 2048)["ratio"] > max(pairs), \
        "clusters of one no longer lead every variant in pairs at N = 2048 (the rule the launch takes)"


def test_at_2048_the_pairs_take_longer_without_waiting_for_each_other(data):
    """The profile at N = 2048: the same kernel in pairs (10_grouped_order) takes longer than the launch with clusters of
    one; both read only a few megabytes from DRAM. Since the producer's idle warps exit in pairs too, both launches run
    the same warps, and the pairs' barrier share is no higher: their CTAs do not wait for each other here (issue
    "counters", item A, c70). Before (experiments/idle_warps) the pairs' extra barrier share was those 3 idle warps of
    12: sampled like the 9 others, they account for all of it and for the lower issuing share."""
    from experiments.idle_warps import kept
    one, two = (data["profiles"][f"{r}@2048"] for r in (FINAL, "10_grouped_order"))
    assert one["duration_us"] < two["duration_us"], "at N = 2048 the pairs no longer take longer than clusters of one"
    assert max(e["dram_read_bytes"] for e in (one, two)) < 10e6, "at N = 2048 the operands no longer stay in L2"
    assert two["stall_reasons"]["barrier"] <= one["stall_reasons"]["barrier"] + 0.02, \
        "at N = 2048 the pairs now stall more at barriers: a CTA may be waiting for its partner"
    old = kept("profiles", "10_grouped_order@2048")
    idle, work = 3, 9
    stalled = (1 - one["issuing_share"]) * work
    pred_b = (one["stall_reasons"]["barrier"] * stalled + idle) / (stalled + idle)
    pred_i = one["issuing_share"] * work / (work + idle)
    assert old["stall_reasons"]["barrier"] <= pred_b + 0.02, \
        "the idle producer warps no longer account for the old pairs' extra barrier share at N = 2048"
    assert abs(old["issuing_share"] - pred_i) < 0.01, "the old pairs' issuing share no longer fits three more idle warps"
    assert one["cluster"] == 1 and two["cluster"] == 2 == old["cluster"]


def _pingpong():
    from experiments import pingpong
    return pingpong, pingpong.record()


def test_ping_pong_is_slower_everywhere_but_at_1024_where_it_only_counts_ctas():
    """experiments/pingpong's timings: with five stages ping-pong is slower than the cooperative kernel at every shape
    but N = 1024, the shape it was built for (8192 x 8192 x 1024) included; with four it is slower still; at 1024 it
    leads only by running twice the CTAs, and rung 10's own tile does better there."""
    _, rec = _pingpong()
    rows = {tuple(r["shape"]): r for r in rec["time"]}
    one = rows[(1024,) * 3]
    for s, r in rows.items():
        if s == (1024,) * 3:
            continue
        assert r["ping-pong, 5 stages"]["tflops"] < r["cooperative"]["tflops"], f"ping-pong now leads at {s}"
        assert r["ping-pong"]["tflops"] < r["ping-pong, 5 stages"]["tflops"], f"four stages no longer trail five at {s}"
    assert one["ping-pong, 5 stages"]["tflops"] > one["cooperative"]["tflops"], "ping-pong no longer leads at N = 1024"
    assert (one["ping-pong"]["grid"], one["cooperative"]["grid"]) == (64, 32)  # half-height tiles, twice the CTAs
    assert one["rung 10"]["tflops"] > one["ping-pong, 5 stages"]["tflops"], \
        "rung 10's own tile no longer beats ping-pong at N = 1024"


def test_ping_pong_hides_the_epilogue_and_pays_more_in_its_k_loops():
    """The trace: the epilogue is about a tenth of a tile at K = 1024 (under 2% at K = 8192); the cooperative k loop
    keeps the tensor pipe near its rate, ping-pong's does not (four stages worse than five), and ping-pong pays more
    in slower k loops than the epilogue it hides. Its stages land more bytes a cycle than the cooperative kernel
    needs and fewer than it needs itself. The parity trap the turns prevent is the chapter's typed arithmetic."""
    pp, rec = _pingpong()
    co, p5, p4 = (pp.phases(w, rec) for w in ("cooperative", "ping-pong, 5 stages", "ping-pong"))
    k_trace = rec["trace"]["shape"][2]
    share = co["epilogue"] / (co["k_loop"] + co["epilogue"])
    assert 0.05 < share < 0.2, f"the epilogue is no longer about a tenth of a tile at K = {k_trace}: {share:.1%}"
    assert co["epilogue"] / (8192 // k_trace * co["k_loop"] + co["epilogue"]) < 0.02, \
        "the epilogue's share at K = 8192 is no longer under 2%"
    assert co["pipe"] > 0.95 and p4["pipe"] < p5["pipe"] < 0.85, \
        f"the k loops no longer split as taught (cooperative {co['pipe']:.0%}, five {p5['pipe']:.0%}, four {p4['pipe']:.0%})"
    assert 2 * p5["k_loop"] - co["k_loop"] > co["epilogue"], "ping-pong no longer pays more in k loops than it hides"
    c5, cc = pp.consts("ping-pong, 5 stages"), pp.consts("cooperative")
    assert (c5["STAGE_BYTES"], c5["STAGES"], pp.consts("ping-pong")["STAGES"]) == (40 * 1024, 5, 4)
    need5, need_co = c5["STAGE_BYTES"] / p5["ideal_per_k_tile"], cc["STAGE_BYTES"] / co["ideal_per_k_tile"]
    assert (need5, need_co) == (80, 48)
    assert need_co < min(p5["landing"], p4["landing"]) and max(p5["landing"], p4["landing"]) < need5, \
        "ping-pong's landing rate no longer sits between what the cooperative kernel asks and what it needs"
    # the trap: without turns, consumer 1 waits at once for tile 1's first k tile (K = 1024, four stages)
    it = 1024 // cc["BK"]
    slot, lap = it % cc["STAGES"], it // cc["STAGES"]
    text = _markdown()
    assert says(text, f"that is slot {slot} on lap {lap}, parity {lap & 1}")
    assert (slot, lap & 1) == (0, 0)  # the parity a fresh barrier's first completed phase reports


def _markdown() -> str:
    from helpers.registry import ROOT
    nb = json.loads((ROOT / "chapters" / "10_chip.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_ping_pong_is_held_back_by_neither_a_roof_nor_dram_nor_the_round_trip(data):
    """The profiles agree with the trace (tensor pipe: cooperative, five stages, four); ping-pong's L2 traffic is
    higher than the cooperative kernel's and under the multicast roof; its DRAM bytes are higher, yet the GROUP_M 16
    control runs no faster; the round trip fits both ring depths, and the 128 x 128 build, whose six slots the guess
    says should keep up, does not: it lands fewer bytes a cycle than the cooperative kernel."""
    pp, rec = _pingpong()
    p = rec["profile"]
    co, p4, p5 = p["cooperative"], p["ping-pong"], p["ping-pong, 5 stages"]
    assert co["tensor_active_pct"] > p5["tensor_active_pct"] > p4["tensor_active_pct"], \
        "Nsight Compute no longer agrees with the trace's order of the three builds"
    timed = {tuple(r["shape"]): r for r in rec["time"]}[(8192,) * 3]
    for w in ("ping-pong, 5 stages", "ping-pong"):
        by_time = co["duration_us"] / p[w]["duration_us"]
        rounds = timed[w]["tflops"] / timed["cooperative"]["tflops"]
        assert by_time < 1 and abs(rounds - by_time) <= 0.06, f"profile and rounds disagree on {w}'s loss"
    mc = data["ceilings"]["tma_multicast"]["value"]
    assert co["l2_tbps"] < p5["l2_tbps"] < mc, "ping-pong's L2 traffic is no longer above the cooperative's, under the roof"
    assert p5["dram_bytes"] > 1.5 * co["dram_bytes"], "ping-pong no longer reads far more DRAM than the cooperative kernel"
    ctl = rec["control"]
    assert ctl["profile"]["ping-pong, 5 stages, GROUP_M 16"]["dram_bytes"] < p5["dram_bytes"]
    assert all(r["ping-pong, 5 stages, GROUP_M 16"]["tflops"] < 1.01 * r["ping-pong, 5 stages"]["tflops"]
               for r in ctl["time"]), "the GROUP_M 16 control now runs faster: DRAM may be the cause after all"
    ph = {w: pp.phases(w, rec) for w in ("cooperative", "ping-pong", "ping-pong, 5 stages")}
    trips = {w: ph[w]["stages"] * ph[w]["per_k_tile"] for w in ph}
    fit = (trips["ping-pong"], trips["ping-pong, 5 stages"])
    assert max(fit) / min(fit) < 1.15, f"one round trip no longer fits both ring depths: {fit}"
    assert trips["cooperative"] > 1.2 * max(fit), "the cooperative k tile no longer sits above the round-trip floor"
    sq, sq_co = (pp.phases(w, rec, "square") for w in ("ping-pong, 128 x 128", "cooperative"))
    assert (sq["stages"], rec["square"]["consts"]["ping-pong, 128 x 128"]["STAGE_BYTES"]) == (6, 32 * 1024)
    assert sq["per_k_tile"] > max(fit) / sq["stages"], "the 128 x 128 build no longer refutes the round-trip guess"
    assert sq["landing"] < sq_co["landing"], "the 128 x 128 build now lands more bytes a cycle than the cooperative kernel"


def test_one_issuing_warpgroup_idles_the_pipe_and_two_groups_in_flight_do_not_help():
    """The one-consumer control: a lone issuing warpgroup leaves a share of the pipe idle where two keep it busy;
    ping-pong's k loop is slower still beside the other's epilogue, and gives back about what its schedule hides; the
    two run close, both behind the cooperative kernel. Two wgmma groups in flight make every build slower. The
    register file cannot hold three consumers beside a producer."""
    from helpers.hardware import REGISTER_FILE
    from helpers.registry import rung
    from helpers.compiler import build
    pp, rec = _pingpong()
    s1, p5, c1 = (pp.phases(w, rec, "single") for w in ("one consumer, 64 x 256", "ping-pong, 5 stages", "cooperative"))
    assert s1["pipe"] < 0.9 < 0.95 < c1["pipe"], "one issuing warpgroup no longer leaves the pipe idle where two do not"
    assert p5["per_k_tile"] > s1["per_k_tile"] and p5["epilogue"] > s1["epilogue"], \
        "beside the other consumer's epilogue, ping-pong's k loop and epilogue are no longer slower"
    k_tiles = rec["single"]["trace"]["shape"][2] // 64
    assert 0.7 < (p5["per_k_tile"] - s1["per_k_tile"]) * k_tiles / s1["epilogue"] < 1.3, \
        "ping-pong no longer gives back in its k loop about what its schedule hides"
    rows = rec["single"]["time"]
    assert max(abs(r["ping-pong, 5 stages"]["tflops"] / r["one consumer, 64 x 256"]["tflops"] - 1) for r in rows) < 0.05, \
        "ping-pong and one consumer no longer run close"
    assert all(r[w]["tflops"] < r["cooperative"]["tflops"] for r in rows
               for w in ("ping-pong, 5 stages", "one consumer, 64 x 256")), "a one-issuer build now leads the cooperative"
    ph = {w: pp.phases(w, rec, "issue") for w in ("cooperative", "cooperative, two groups", "one consumer",
                                                   "one consumer, two groups", "ping-pong, 5 stages, two groups")}
    irows = rec["issue"]["time"]
    for base in ("cooperative", "one consumer"):
        assert ph[f"{base}, two groups"]["per_k_tile"] > ph[base]["per_k_tile"], f"two groups now help {base}'s k tile"
        assert all(r[f"{base}, two groups"]["tflops"] < r[base]["tflops"] for r in irows), f"two groups now help {base}"
    earlier = [pp.phases("ping-pong, 5 stages", rec, part)["per_k_tile"] for part in (None, "square", "single")]
    assert ph["ping-pong, 5 stages, two groups"]["per_k_tile"] > max(earlier), "two groups now help ping-pong"
    c = build(rung(FINAL)).consts
    per_group = c["THREADS"] // (c["CONSUMERS"] + 1)
    assert per_group * (c["PRODUCER_REGS"] + 3 * c["CONSUMER_REGS"]) > REGISTER_FILE


def test_one_warpgroup_keeps_the_wgmma_probe_as_busy_as_two():
    """experiments/wgmma_issue: chapter 00's probe with one warpgroup per SM or two, with and without a consumer's
    handshake: every build within 1% of the others, in the last run and in each of the three earlier ones."""
    from experiments.wgmma_issue import record
    rec = record()
    rates = [e["tflops"] for e in rec["time"].values()]
    assert len(rates) == 6 and {e["handshake"] for e in rec["time"].values()} == {0, 1}
    assert max(rates) / min(rates) < 1.01, "one warpgroup no longer keeps the wgmma probe as busy as two"
    earlier = [[e["tflops"] for e in r["time"].values()] for r in rec["earlier"]]
    assert len(earlier) == 3 and all(max(x) / min(x) < 1.01 for x in earlier), "an earlier run no longer agrees"


def test_split_k_loses_at_1024_and_pays_a_little_only_at_long_k(data):
    """experiments/splitk: rung 10 at N = 1024 runs 64 tiles of 128 x 128, leaving SMs idle, and is the furthest
    shape from cuBLAS in the book's run; its napkin (k loop at the top clock, fix-up at the TMA roof) leaves a small
    gain, yet every split loses at 1024³, the fix-up costing more than twice the napkin's; at K = 4096 two pieces
    pay a little, still well short of cuBLAS."""
    from experiments.splitk import record
    from helpers.hardware import MAX_SM_CLOCK_HZ, SMS, TENSOR_FLOP_PER_CLK
    rows = {tuple(r["shape"]): r for r in record()["time"]}
    one, long_k = rows[(1024,) * 3], rows[(1024, 1024, 4096)]
    assert one["rung 10"]["tile"] == [128, 128] and one["rung 10"]["grid"] == 64 < SMS
    at = lambda n: data["gemm"][results.gemm_key(FINAL, n, n, n)]["ratio"]  # noqa: E731
    assert all(at(1024) <= at(n) for n in (2048, 3072, 4096, 8192)), "N = 1024 is no longer rung 10's furthest shape"
    loop = 16 * 2 * 128 * 128 * 64 / (TENSOR_FLOP_PER_CLK * MAX_SM_CLOCK_HZ) * 1e6
    each = 128 * 128 * 4 / (data["ceilings"]["tma_l2_gemm"]["value"] * 1e12 / 128) * 1e6
    assert loop / 2 > 2 * each, "the split-K napkin no longer leaves a gain"
    us = {w: one[w]["us"] for w in ("128 x 128, no split", "SPLITS=2", "SPLITS=3", "SPLITS=4")}
    assert min(us["SPLITS=2"], us["SPLITS=3"], us["SPLITS=4"]) > us["128 x 128, no split"], \
        "split-K no longer loses at N = 1024"
    assert us["SPLITS=2"] - (us["128 x 128, no split"] - loop / 2) > 2 * 2 * each, \
        "the fix-up no longer costs more than twice the napkin's"
    assert long_k["SPLITS=2"]["us"] < long_k["128 x 128, no split"]["us"], "two pieces no longer pay at K = 4096"
    assert long_k["SPLITS=2"]["ratio"] < 0.8, "split at K = 4096 is now close to cuBLAS"


def test_stream_k_stays_an_experiment_its_fix_up_and_its_schedule_each_measured():
    """experiments/streamk: the record's plans are what the build's arithmetic gives; stream-K never beats rung 10 as
    it launches where its plan cuts tiles, and falls under its own whole-tile build at 4096 and 2048 x 8192 x 8192
    (the 256-tile shapes). Of the two costs chapter 10 names: the fix-up adds cycles (Nsight Compute, 4096), and where
    tiles are few it takes back what the schedule alone gains (127 x 4096 x 4096); the schedule alone reads more from
    DRAM than whole tiles at both profiled sizes (the wave no longer shares its k slices in L2)."""
    from experiments import streamk
    from experiments.streamk.build import BUILDS, config_for, plan
    rec = streamk.record()
    rows = {tuple(r["shape"]): r for r in rec["time"]}
    sk, whole, bare = "stream-K", "whole tiles", "stream-K, no fix-up"
    for s, r in rows.items():
        for name in BUILDS:
            workers = r[name]["grid"] // r[name]["cluster"]
            assert r["plans"][name] == plan(*s, workers, config_for(s[0], BUILDS[name])), (s, name)
    cut = [s for s, r in rows.items() if r["plans"][sk]["whole"] < r["plans"][sk]["tiles"]]
    assert len(cut) >= 6 and all(rows[s][sk]["tflops"] < rows[s]["rung 10"]["tflops"] for s in cut), \
        "stream-K now beats rung 10 somewhere: chapter 10 says it stays an experiment"
    for s in ((4096,) * 3, (2048, 8192, 8192)):
        assert rows[s][sk]["tflops"] < 0.97 * rows[s][whole]["tflops"], f"stream-K no longer clearly loses at {s}"
    prof = rec["profile"]
    assert streamk.cycles(prof[f"{sk}@4096"]) > 1.02 * streamk.cycles(prof[f"{bare}@4096"]), \
        "the fix-up no longer costs cycles at 4096"
    small = rows[(127, 4096, 4096)]
    assert small[bare]["tflops"] > 1.3 * small[whole]["tflops"] and small[sk]["tflops"] < 1.05 * small[whole]["tflops"], \
        "at 127 x 4096 x 4096 the schedule alone no longer gains, or the fix-up no longer takes it back"
    for n in (4096, 8192):
        assert prof[f"{bare}@{n}"]["dram_read_bytes"] > 1.2 * prof[f"{whole}@{n}"]["dram_read_bytes"], \
            f"the cut ranges no longer read more from DRAM than whole tiles at {n}"
        assert prof[f"{bare}@{n}"]["l2_hit_pct"] < prof[f"{whole}@{n}"]["l2_hit_pct"], n


def _rendered(cell_id: str) -> str:
    from helpers.registry import ROOT
    nb = json.loads((ROOT / "chapters" / "10_chip.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c.get("id") == cell_id)
    text = lambda x: "".join(x) if isinstance(x, list) else x  # noqa: E731  (a notebook keeps text as lines)
    return "".join(text(o.get("data", {}).get("text/markdown", "")) or text(o.get("text", "")) for o in cell["outputs"])


def test_step_6_saves_microseconds_where_launches_are_short_and_nothing_falls_where_they_are_long(data):
    """Chapter 10's step 6 in the book's run: 10_pdl against 10_chip saves one to three microseconds a launch at
    1024³, 2048³ and 127 x 4096 x 4096 (the napkin's range, and the paragraph says it lands inside), under half of that
    at 3072³ (a grid that fills every SM), and does not fall at 4096³, 8192³ or 8192 x 8192 x 1024; Nsight Compute
    agrees with the harness on 10_pdl within 3 points at 4096 and 8192 (it times the kernel, not the gap)."""
    from helpers.prose import step
    row = lambda r, s: _row(data, r, s[1], s[2]) if s[0] == s[1] else _row_mnk(data, r, *s)  # noqa: E731
    us = lambda r, s: row(r, s).ms * 1e3  # noqa: E731
    short = ((1024,) * 3, (2048,) * 3, (127, 4096, 4096))
    saved = {s: us(FINAL, s) - us(PDL, s) for s in (*short, (3072,) * 3)}
    assert all(1 <= saved[s] <= 3 for s in short), f"the saving left the napkin's one to three µs: {saved}"
    assert says(_rendered("c10-pdl"), "inside the napkin")
    assert saved[(3072,) * 3] < 0.5 * min(saved[s] for s in short), "at 3072³ the saving is no longer the smaller"
    for s in ((4096,) * 3, (8192,) * 3, (8192, 8192, 1024)):
        assert not step(row(FINAL, s), row(PDL, s)).falls, f"launches that overlap now cost at {s}"
    assert all(data["crosscheck"][f"{PDL}@{n}"]["ok"] for n in SIZES), "the cross-check of 10_pdl no longer passes"


def test_step_7_rises_where_ctas_take_a_second_tile_under_the_napkin_and_is_step_6_elsewhere(data):
    """Chapter 10's step 7 in the book's run: 10_overlap against 10_pdl rises beyond the rounds' spread at 4096³,
    8192³ and the long shapes under 12288, each gain under the napkin's ceiling (one k step hidden per tile, against
    the tile's k loop and the epilogue of chapter 10's trace) or within 0.2 points of it (8192³ in the lease of 09:54,
    x1.0091 against x1.0077, its two rows timed six minutes apart; the paragraph names any such gain) and the largest
    where K is short (8192 x 8192 x 1024);
    where no CTA takes a second tile (2048³, 1024³) the tile policy builds 10_pdl's very kernel, and the paragraph
    says the step rises where it acts, each gain under its ceiling."""
    from experiments import pingpong
    from helpers.kernel import variant
    from helpers.prose import step
    from helpers.registry import rung
    from helpers.tiles import launch_config
    row = lambda r, s: _row(data, r, s[1], s[2]) if s[0] == s[1] else _row_mnk(data, r, *s)  # noqa: E731
    epi = pingpong.phases("cooperative")["epilogue"]
    acts = ((4096,) * 3, (6144,) * 3, (8192,) * 3, (8192, 8192, 1024), (4096, 16384, 4096), (2048, 8192, 8192),
            (12288, 12288, 4096))
    over = set()
    for s in acts:
        got = step(row(PDL, s), row(LAST, s))
        assert got.rises, f"the epilogue under the next tile no longer rises at {s}: x{got.factor:.4f}"
        k_step = 2 * 128 * 256 * 64 / 4096
        assert got.factor - 1 <= k_step / (s[2] // 64 * k_step + epi) + 0.002, f"a gain passes the napkin's ceiling at {s}"
        over |= {s} if got.factor - 1 > k_step / (s[2] // 64 * k_step + epi) else set()
    short = step(row(PDL, (8192, 8192, 1024)), row(LAST, (8192, 8192, 1024))).factor
    assert short > max(step(row(PDL, s), row(LAST, s)).factor for s in acts if s[2] > 1024), \
        "the gain is no longer largest where K is short"
    for n in (1024, 2048):  # one tile per CTA: the launch builds 10_pdl's kernel
        cfg = launch_config(rung(LAST), n, n, n, 66, 132)
        assert cfg["OVERLAP"] == 0 and cfg["CLUSTER"] == 1
        assert variant(rung(LAST), cfg).build.cubin.read_bytes() == \
            variant(rung(PDL), {k: v for k, v in cfg.items() if k != "OVERLAP"}).build.cubin.read_bytes()
    text = _rendered("c10-overlap-result")
    assert says(text, "each of those gains is under its ceiling") == (not over)
    assert all(says(text, f"at {s[0]}³ the gain passes its ceiling by") for s in over)
    assert says(text, "The gain is largest where K is short")


def test_two_early_k_steps_lose_and_every_build_is_correct():
    """experiments/overlap part steps: issuing the next tile's first two k steps early loses to 10_overlap at every
    shape timed, with two chunks late and with all of them; every build computed the right C at every check shape."""
    from experiments import overlap
    part = overlap.record()["steps"]
    assert all(x["ok"] for x in part["check"]) and len(part["check"]) >= 21
    for row in part["time"]:
        for build in ("2 late, 2 steps", "all late, 2 steps"):
            assert row[build]["tflops"] < row["10_overlap"]["tflops"], f"{build} no longer loses at {row['shape']}"
    assert says(_rendered("c10-overlap-steps"), "Every two-step build loses, at every shape")


def _row_mnk(data, rung, m, n, k):
    from helpers.ladder import Row
    return Row.from_entry(data["gemm"][results.gemm_key(rung, m, n, k)], "recorded")


def test_overlapping_launches_save_microseconds_at_small_shapes_and_are_checked_back_to_back():
    """experiments/pdl: with programmatic stream serialization the PDL build saves more than a microsecond a launch
    at every small shape and under 1% at 4096³; launched plainly it times as rung 10 (the instructions cost nothing);
    every launch back to back is correct, and the control without the wait is caught where launches overlap. With
    OVERLAP = 2 (part `both`): correct, faster than rung 10 at every target shape, and PDL's saving at 3072³ (a grid
    that fills the chip) well under its saving at 1024³ (SMs left idle)."""
    from experiments import pdl
    rec = pdl.record()
    for r in rec["time"]:
        rung10, attr, plain = (r[x]["us"] for x in (pdl.RUNG, pdl.ATTRIBUTE, pdl.PLAIN))
        assert abs(plain / rung10 - 1) < 0.01, f"the PDL build launched plainly no longer times as rung 10: {r['shape']}"
        if r["shape"] == [4096] * 3:
            assert abs(attr / rung10 - 1) < 0.01, "PDL now moves 4096³ by more than 1%"
        else:
            assert rung10 - attr > 1.0, f"PDL no longer saves a microsecond at {r['shape']}"
    chk = rec["check"]
    assert all(x["ok"] for x in chk["single"]) and len(chk["single"]) >= 20
    assert all(all(x["chain_ok"]) and x["into_one_ok"] for x in chk["back_to_back"])
    assert sum(x["caught"] for x in chk["control"]) >= 3, "the no-wait control no longer shows launches overlapping"
    both = rec["both"]
    assert all(x["ok"] for x in both["check"]["single"]) and \
        all(all(x["chain_ok"]) and x["into_one_ok"] for x in both["check"]["back_to_back"])
    rows = {tuple(r["shape"]): r for r in both["time"]}
    assert all(r[pdl.BOTH]["us"] < r[pdl.RUNG]["us"] for r in rows.values()), "the two moves together lose somewhere"
    three = rows[(3072,) * 3]
    assert three[pdl.RUNG]["us"] - three[pdl.ATTRIBUTE]["us"] < 0.5 * (rows[(1024,) * 3][pdl.RUNG]["us"]
                                                                      - rows[(1024,) * 3][pdl.ATTRIBUTE]["us"]), \
        "at 3072³, where the grid fills the chip, PDL now saves as much as where SMs idle"


def test_the_64_row_tile_pays_a_little_at_1024_and_loses_from_2048_up(data):
    """experiments/small_tiles: cuBLAS's tile at 1024³ (64 x 128 in 2 x 1 clusters, the book's run's label) beats
    rung 10 there with clusters of one, saving less than the napkin's ~2 µs, and in pairs is still slower than
    cuBLAS; at K = 4096 the pairs win and clusters of one lose (the rule would pick the slower build); from N = 2048
    up every 64-row tile loses to rung 10."""
    from experiments.small_tiles import record
    assert "tile 64x128, cluster 2x1x1" in data["gemm"][results.gemm_key(FINAL, 1024, 1024, 1024)]["cublas_ref"], \
        "cuBLAS's winner at 1024³ is no longer a 64 x 128 tile in pairs"
    rows = {tuple(r["shape"]): r for r in record()["time"]}
    one, long_k = rows[(1024,) * 3], rows[(1024, 1024, 4096)]
    assert "tile 64x128, cluster 2x1x1" in one["cublas"]
    r10, solo, pair = one["rung 10"], one["64 x 128, clusters of one"], one["64 x 128, pairs"]
    assert 0 < r10["us"] - solo["us"] < 1.5, "the 64 x 128 tile no longer pays a little (less than the napkin) at 1024³"
    assert pair["us"] > one["cublas_best"]["us"], "the 64 x 128 tile in pairs now matches cuBLAS's time"
    lp, lr, ls = long_k["64 x 128, pairs"], long_k["rung 10"], long_k["64 x 128, clusters of one"]
    assert ls["us"] > lr["us"] > lp["us"], "at K = 4096 the pairs no longer win, or clusters of one no longer lose"
    assert all(r[w]["tflops"] < r["rung 10"]["tflops"] for s, r in rows.items() if s[0] >= 2048
               for w in ("64 x 128, clusters of one", "64 x 128, pairs", "64 x 256, pairs")), \
        "a 64-row tile now beats rung 10 from N = 2048 up"


def test_2_by_1_clusters_are_the_fastest_shape_from_4096_up():
    """experiments/clusters: 2 x 1 is the fastest shape at every shape from N = 4096 up; clusters of one fall well
    behind at 4096 (the prediction missed) and read far more DRAM at 8192, waiting on long_scoreboard; 2 x 2 runs on
    120 CTAs and reaches a little more than 120/132 of 2 x 1 at 8192, two waves at 2048, leading only at 3072 where
    rung 10's own tile is far ahead; 1 x 2 reads more DRAM than 2 x 1."""
    from experiments.clusters import SHAPES, l2_kib, record
    rec = record()
    rows = {tuple(r["shape"]): r for r in rec["time"]}
    big = [r for s, r in rows.items() if min(s[:2]) >= 4096]
    assert all(max(SHAPES, key=lambda w: r[w]["tflops"]) == "2 x 1" for r in big), \
        "2 x 1 is no longer the fastest cluster shape at every shape from N = 4096 up"
    a, b = rows[(4096,) * 3], rows[(8192,) * 3]
    assert a["1 x 1"]["tflops"] < 0.95 * a["2 x 1"]["tflops"], "clusters of one are now level with 2 x 1 at 4096"
    assert [l2_kib(*s) for s in ((1, 1), (2, 1), (1, 2), (2, 2))] == [48, 32, 40, 24]
    p = {w: rec["profile"][w] for w in SHAPES}
    assert p["1 x 1"]["dram_bytes"] > 2 * p["2 x 1"]["dram_bytes"], "clusters of one no longer read far more DRAM"
    stalls = p["1 x 1"]["stall_reasons"]
    assert max(stalls, key=stalls.get) == "long_scoreboard", "long_scoreboard no longer leads clusters of one's stalls"
    grids = {w: {r[w]["grid"] for r in big} for w in SHAPES}
    assert grids == {"1 x 1": {132}, "2 x 1": {132}, "1 x 2": {132}, "2 x 2": {120}}
    assert p["2 x 2"]["grid"][0] == 120
    assert 120 / 132 < b["2 x 2"]["tflops"] / b["2 x 1"]["tflops"] < 1, \
        "2 x 2 no longer reaches a little more than its share of SMs at 8192"
    assert rows[(2048,) * 3]["2 x 2"]["tflops"] < 0.7 * rows[(2048,) * 3]["2 x 1"]["tflops"], \
        "2 x 2's two waves at N = 2048 no longer cost it"
    leads = [s for s, r in rows.items() if max(SHAPES, key=lambda w: r[w]["tflops"]) == "2 x 2"]
    three = rows[(3072,) * 3]
    assert leads == [(3072,) * 3] and three["rung 10"]["tile"] == [128, 192], "2 x 2 no longer leads only at 3072"
    assert three["rung 10"]["tflops"] > 1.1 * three["2 x 2"]["tflops"], "rung 10's own tile is no longer far ahead at 3072"
    assert p["1 x 2"]["dram_bytes"] > p["2 x 1"]["dram_bytes"], "1 x 2 no longer reads more DRAM than 2 x 1"
    assert p["1 x 2"]["tensor_active_pct"] < p["2 x 1"]["tensor_active_pct"]


def test_the_summary_holds(data):
    """The summary's conclusions over the book's run: persistence rises on its own; stmatrix moves the timing by under
    half a percent and never costs; the tile per shape lifts N = 3072 and 1024; clusters of one lifted 1024 and 2048
    where both ways were measured; bf16 C rises after persistence, and launched per tile reads more DRAM, stays within
    a percent of rung 09 at 8192 and below bf16 C after persistence, half-sector stores costing rung 09 a few percent;
    pairs with the fourth stage rise together, and each alone rises at one size at most, under both together; the
    grouped order pays more with pairs than right after bf16 C, where it costs at 4096, and rises as the last step;
    every step of the path rises but the TMA store's at 8192, which may be flat (chapter 10 says why) and never falls;
    the final rung ends level with cuBLAS, behind it, and misses the registry's target. What differs between the runs
    the summary renders: on the H100 (run 19:47Z) stmatrix is level at both sizes, one block per tile ties with rung
    09, each half alone costs or ties, the grouped order costs at both sizes right after bf16 C, every step rises; on
    the H200 (run 2026-11-29T01:10Z-h200) stmatrix is x1.003 at 8192 beyond the spread, one block per tile is x1.008
    above rung 09, the pairs alone rise at 8192 and the fourth stage alone at 4096, the grouped order right after bf16
    C pays at 8192, and the TMA store is flat at 8192."""
    from experiments.bf16_stores import medians
    from experiments.clusters_of_one import rows as clusters_of_one_rows
    from helpers.prose import step
    from helpers.registry import MAIN, rung
    st = lambda a, b: [step(_row(data, a, n), _row(data, b, n)) for n in SIZES]  # noqa: E731
    assert all(s.rises for s in st("09_setmaxnreg", "10_persistent")), "persistence no longer rises on its own"
    assert all(not s.falls and abs(s.factor - 1) < 0.005 for s in st("10_sts_store", "10_tma_store")), \
        "stmatrix now moves the timing by half a percent or more, or costs"
    for n in (1024, 3072):
        assert _row(data, FINAL, n).ratio > _row(data, "10_grouped_order", n).ratio + 0.1, \
            f"the tile per shape no longer lifts N = {n}"
    c1 = clusters_of_one_rows()
    assert all(c1["recorded", n]["ratio"] > c1["replaced", n]["ratio"] for n in (1024, 2048))
    assert all(s.rises for s in st("10_persistent", "10_bf16_c")), "bf16 C no longer rises after persistence"
    gb = lambda w: data["l2_schedule"][f"{w}@8192"]["dram_read_gb"]  # noqa: E731
    assert gb("10_bf16_c_per_tile") > 1.1 * gb("09_setmaxnreg"), "bf16 C per tile no longer reads more DRAM at 8192"
    assert step(_row(data, "10_bf16_c_per_tile", 8192), _row(data, "10_bf16_c", 8192)).rises, \
        "bf16 C per tile is no longer below bf16 C after persistence at 8192"
    m12 = medians(1, 2)
    half = [1 - m12[n, "09 writing bf16x2"] / m12[n, "09 as built (fp32 C)"] for n in SIZES]
    assert all(0 < h < 0.05 for h in half), f"half-sector stores no longer cost rung 09 a few percent: {half}"
    assert all(s.rises for s in st("10_bf16_c", "10_cluster")), "the pairs with the fourth stage no longer rise"
    for r in ("10_cluster_3_stages", "10_four_stages"):  # each alone: below both together (costing, or rising less)
        assert all(s.rises for s in st(r, "10_cluster")), f"both together no longer beat {r} alone"
    grouped, last = st("10_bf16_c", "10_grouped"), st("10_tma_store", FINAL)
    assert all(last[i].factor > grouped[i].factor for i in range(len(SIZES))), \
        "the grouped order no longer pays more with pairs than right after bf16 C"
    assert grouped[0].falls, "the grouped order no longer costs right after bf16 C at 4096"
    assert st("10_tma_store", FINAL)[1].rises, "the grouped order no longer rises as the last step at 8192"
    path = MAIN[MAIN.index("09_setmaxnreg"):MAIN.index(FINAL) + 1]
    short = {(b, n) for a, b in zip(path, path[1:]) for n, s in zip(SIZES, st(a, b)) if not s.rises}
    assert short <= {("10_tma_store", 8192)}, f"a step of chapter 10's path is not rising: {sorted(short)}"
    assert not st("10_cluster", "10_tma_store")[1].falls, "the TMA store now costs at 8192"
    assert not any(s.falls for s in st(FINAL, PDL)), "launches that overlap now cost at 4096 or 8192"
    assert all(s.rises for s in st(PDL, LAST)), "the epilogue under the next tile no longer rises at 4096 and 8192"
    ratios = [_row(data, LAST, n).ratio for n in SIZES]
    assert all(0.97 <= v < 1 for v in ratios), f"the final rung is no longer level with cuBLAS and behind it: {ratios}"
    assert all(v < rung(LAST).target[0] for v in ratios), "the final rung now meets the registry's target"


def test_reads_and_fills_are_not_one_port_and_do_not_explain_ping_pong():
    """Issue "counters", item B: at the tensor peak the cooperative tile reads 80 and lands 48 B a clock, ping-pong's
    64 x 256 tile and the 128 x 128 tile 160; one port of 128 B a clock would cap those near 80%. The probe
    (experiments/smem_port) moved more than 128 B a clock of reads and fills and kept its two warpgroups over 90%
    busy with about ping-pong's fills, far above the lone warpgroup's k loop; the wgmma_issue probe lands no fills."""
    from experiments import smem_port
    from helpers.hardware import SMEM_BYTES_PER_CLK, TENSOR_FLOP_PER_CLK
    from helpers.registry import ROOT
    pp, rec = _pingpong()
    reads = lambda n: TENSOR_FLOP_PER_CLK * (64 + n) / (64 * n)  # noqa: E731
    fills = lambda bm, bn: TENSOR_FLOP_PER_CLK * (bm + bn) / (bm * bn)  # noqa: E731
    assert reads(256) + fills(128, 256) == SMEM_BYTES_PER_CLK == 128
    assert reads(256) + fills(64, 256) == reads(128) + fills(128, 128) == 160
    assert pp.phases("ping-pong, 5 stages")["tile"] == (64, 256)
    assert pp.phases("ping-pong, 128 x 128", rec, "square")["tile"] == (128, 128)
    assert smem_port.port_roof() > SMEM_BYTES_PER_CLK, "the probe no longer moves more than one wavefront a clock"
    near = smem_port.with_fills(fills(64, 256))
    lone = pp.phases("one consumer, 64 x 256", rec, "single")["pipe"]
    assert near["tensor_busy"] > 0.9 and near["tensor_busy"] > lone + 0.03, \
        "the probe beside ping-pong's fills no longer keeps the pipe well above the lone consumer's k loop"
    src = (ROOT / "experiments" / "wgmma_issue" / "wgmma_issue.cu").read_text()
    assert "cp.async.bulk" not in src and "tma_load" not in src, "the wgmma_issue probe now lands TMA fills"
