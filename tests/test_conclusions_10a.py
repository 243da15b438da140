"""Chapter 10, from its start to "What the profile says": what it teaches, as predicates over the book's run and the
experiments' records. The chapter renders its numbers from the run (helpers.prose; nbval holds each rendered cell to
the replayed run), so these tests hold the conclusions, not the sentences: a re-run needs no edit here unless a
conclusion the chapter teaches no longer holds, and then the assertion says which. Runs without a GPU."""
import json

import pytest

from helpers import results
from helpers.registry import ROOT, RUNGS

from conftest import prose, says

FINAL = "10_beyond_cublas"
SIZES = (4096, 8192)


@pytest.fixture(scope="module")
def data():
    return results.load(results.path_for())


def _text() -> str:
    """What chapter 10 shows: its markdown cells and the Markdown its rendered-prose cells output."""
    nb = json.loads((ROOT / "chapters" / "10_beyond_cublas.ipynb").read_text())
    out = []
    for c in nb["cells"]:
        if c["cell_type"] == "markdown":
            out.append("".join(c["source"]))
        elif "remove-input" in c.get("metadata", {}).get("tags", []):
            out += ["".join(o.get("data", {}).get("text/markdown", "")) for o in c.get("outputs", [])]
    return prose("\n".join(out))


def _row(data, r, n):
    from helpers.ladder import Row
    return Row.from_entry(data["gemm"][results.gemm_key(r, n, n, n)], "recorded")


def _l2(data, who, n, field):
    return data["l2_schedule"][f"{who}@{n}"][field]


def _step(data, a, b, n):
    from helpers.prose import step
    return step(_row(data, a, n), _row(data, b, n))


def test_chapter_10_ends_level_with_cublas_and_not_ahead(data):
    """The chapter's opening: level with cuBLAS at 4096 and 8192 (within 3 points), behind it, and Nsight Compute's
    kernel durations agree with the harness."""
    for n in SIZES:
        r = _row(data, FINAL, n).ratio
        assert 0.97 <= r < 1, f"the final rung is no longer level with cuBLAS and behind it at N={n}: {r:.3f}"
        cc = data["crosscheck"][f"{FINAL}@{n}"]
        assert abs(cc["ncu_ratio"] - r) <= 0.03, f"Nsight Compute no longer confirms the ratio at N={n}: {cc}"


def test_chapter_10_the_wave_napkin_loses_a_little_at_4096(data):
    from helpers.registry import rung
    from helpers.kernel import kernel
    from helpers.tiles import waves
    c, clusters = kernel(rung(FINAL)).consts, data["grids"][FINAL]["clusters"]
    w = {n: waves(n, n, c["CLUSTER_BM"], c["BN"], clusters) for n in (1024, 3072, 4096)}
    assert 0.9 < w[4096]["efficiency"] < 1, f"the last wave at 4096 is no longer a little short: {w[4096]}"
    assert w[1024]["tiles"] < clusters / 2, "at 1024 most of the chip no longer idles with 128 x 256 tiles"
    assert w[3072]["tiles"] - (w[3072]["busiest"] - 1) * clusters < clusters / 2, "3072's last round is no longer mostly empty"


def test_chapter_10_bf16_c_pays_after_persistence_as_the_napkin_said(data):
    """Step 1: halving C at the HBM copy rate predicts the saving; Nsight Compute's durations shrink by about that
    (the stores were exposed); the step rises at both sizes; one block per tile, the same kernel ties with rung 09 at
    8192 and reads more from DRAM, where the persistent kernels read what rung 09 reads."""
    hbm = data["ceilings"]["hbm_copy"]["value"]
    saved = {n: n * n * 2 / (hbm * 1e12) * 1e6 for n in SIZES}
    for n in SIZES:
        shrink = 1e3 * (_l2(data, "10_persistent", n, "ncu_ms") - _l2(data, "10_bf16_c", n, "ncu_ms"))
        assert abs(shrink / saved[n] - 1) < 0.2, f"the C stores no longer look exposed at N={n}: {shrink:.1f} us " \
                                                 f"against the napkin's {saved[n]:.1f}"
        assert _step(data, "10_persistent", "10_bf16_c", n).rises, f"bf16 C no longer rises after persistence at N={n}"
        assert _l2(data, "10_bf16_c", n, "tensor_pipe_pct") > _l2(data, "10_persistent", n, "tensor_pipe_pct")
    per_tile = _step(data, "09_setmaxnreg", "10_bf16_c_per_tile", 8192)
    assert not per_tile.rises, f"bf16 C one block per tile now rises over rung 09 at 8192: {per_tile}"
    gb = lambda w: _l2(data, w, 8192, "dram_read_gb")  # noqa: E731
    assert gb("10_bf16_c_per_tile") > 1.2 * gb("09_setmaxnreg"), "one block per tile no longer reads more DRAM"
    assert all(abs(gb(w) / gb("09_setmaxnreg") - 1) < 0.02 for w in ("10_persistent", "10_bf16_c")), \
        "the persistent kernels no longer read what rung 09 reads"
    from experiments.bf16_c_8192 import dram_read_gb
    read = {name: [f"{gb:.2f}" for gb in launches] for name, launches in dram_read_gb().items()}
    assert read == {"09_setmaxnreg": ["2.31", "2.31"], "09_cluster_launch": ["2.31", "2.31"],
                    "09_bf16_c": ["2.89", "3.02"], "10_bf16_c": ["2.31", "2.96"],
                    "10_bf16_c_no_cluster_launch": ["2.93", "2.95"], "10_persistent": ["2.31", "2.31"]}, read


def test_chapter_10_step_2_takes_the_pairs_with_the_fourth_stage(data):
    """Either half alone costs or ties, both together rise; at three stages the pairs lower the tensor pipe, with
    the fourth stage it is busier; 10_bf16_c draws L2 near the plain TMA roof (the bytes-only napkin's premise)."""
    B, C3, F, C = "10_bf16_c", "10_cluster_3_stages", "10_four_stages", "10_cluster"
    for n in SIZES:
        for half in (C3, F):
            s = _step(data, B, half, n)
            assert not s.rises, f"{half} alone now rises over {B} at N={n}: {s}"
        s = _step(data, B, C, n)
        assert s.rises, f"the pairs with the fourth stage no longer rise over {B} at N={n}: {s}"
    tp = lambda w: _l2(data, w, 8192, "tensor_pipe_pct")  # noqa: E731
    assert tp(C3) < tp(B) < tp(C), "the tensor pipe no longer falls with the pairs alone and rises with both"
    assert _l2(data, F, 8192, "dram_read_gb") > _l2(data, B, 8192, "dram_read_gb"), "the fourth stage alone no longer reads more DRAM at 8192"
    p, roof = data["profiles"][f"{B}@8192"], data["ceilings"]["tma_l2_gemm"]["value"]
    assert 0.9 * roof < p["l2_tbps"] < roof, f"10_bf16_c no longer draws L2 near the TMA roof: {p['l2_tbps']}"


def test_chapter_10_stmatrix_removes_the_stores_and_moves_nothing_else(data):
    """Step 3b: Nsight Compute counts the model's STS instructions, then none; the tensor pipe and the rate stay."""
    assert _l2(data, "10_sts_store", 4096, "shared_store_inst") == (4096 // 128) * (4096 // 256) * 8 * 64, \
        "Nsight Compute no longer counts the model's STS instructions"
    assert _l2(data, "10_tma_store", 4096, "shared_store_inst") == 0, "stmatrix no longer removes every STS"
    for n in SIZES:
        assert abs(_l2(data, "10_sts_store", n, "tensor_pipe_pct") - _l2(data, "10_tma_store", n, "tensor_pipe_pct")) < 0.5
        s = _step(data, "10_sts_store", "10_tma_store", n)
        assert s.flat and abs(s.factor - 1) < 0.005, f"stmatrix is no longer level with the STS epilogue at N={n}: {s}"


def test_chapter_10_the_step_4_table_is_the_run_of_the_timings(data):
    shown = ("09_setmaxnreg", *(r.id for r in RUNGS if r.chapter == "10"), "cublas")
    runs = {data["l2_schedule"][f"{w}@{n}"]["run"] for w in shown for n in SIZES}
    assert runs == {data["gemm"][results.gemm_key(FINAL, 8192, 8192, 8192)]["run"]}, runs


def test_chapter_10_a_tile_per_shape_pays_where_the_wave_napkin_says(data):
    """Step 5: at 3072 the picked tile is about as much faster as the napkin says, the SMs are as busy as the wave
    count predicts and as cuBLAS's; at 1024 the launch gains; 4096 and 8192 keep 128 x 256; clusters of one at 1024
    and 2048."""
    from helpers.registry import rung
    from helpers.tiles import choose_tile
    costs = choose_tile(rung(FINAL), 3072, 3072, 3072, data["grids"][FINAL]["clusters"])
    picked = next(r for r in costs if r["picked"])
    napkin = costs[0]["cost"] / picked["cost"]
    f3072 = _row(data, FINAL, 3072).tflops / _row(data, "10_stmatrix", 3072).tflops
    assert 1.2 <= f3072 <= 1.3 and abs(f3072 / napkin - 1) < 0.05, f"the tile at 3072 no longer pays as the napkin said: {f3072:.2f} against {napkin:.2f}"
    busy = lambda who: _l2(data, who, 3072, "sm_busy_pct") / 100  # noqa: E731
    assert abs(busy(FINAL) - picked["efficiency"]) < 0.05 and abs(busy("10_stmatrix") - costs[0]["efficiency"]) < 0.05, \
        "the SMs' busy share at 3072 is no longer what the wave count predicts"
    assert abs(busy(FINAL) - busy("cublas")) < 0.03, "the SMs at 3072 are no longer as busy as cuBLAS's"
    assert 0.72 <= _row(data, "10_stmatrix", 3072).ratio <= 0.78  # "three quarters of cuBLAS" before the step
    assert _row(data, FINAL, 1024).tflops > 1.3 * _row(data, "10_stmatrix", 1024).tflops, "the tile at 1024 no longer pays"
    g = lambda n: data["gemm"][results.gemm_key(FINAL, n, n, n)]  # noqa: E731
    assert g(3072)["tile"] == [128, 192] and g(1024)["tile"] == [128, 128]
    assert g(4096)["tile"] == [128, 256] and g(8192)["tile"] == [128, 256]
    assert g(1024)["cluster"] == g(2048)["cluster"] == 1, "the launch no longer takes clusters of one at 1024 and 2048"
    v = lambda change: data["variants"][f"{FINAL}:{json.dumps(change, sort_keys=True)}@2048"]["ratio"]  # noqa: E731
    assert v({"CLUSTER": 1}) > v({}), "clusters of one are no longer faster at 2048"


def test_chapter_10_profile_list_directions_hold(data):
    """"What the profile says", step by step: every step of the path rises at both sizes; persistence a few percent,
    less at 8192, with the DRAM reads level; bf16 C halves the DRAM writes; one block per tile reads more; the pairs
    with the fourth stage keep the DRAM reads; the TMA store keeps the tensor pipe within half a point; the grouped
    order cuts the DRAM reads at 8192 and the operands fit in L2 at 4096; the grouped order without pairs costs."""
    t = lambda r, n: _row(data, r, n).tflops  # noqa: E731
    l2 = lambda w, n, k="dram_read_gb": _l2(data, w, n, k)  # noqa: E731
    N9, P, B, BT = "09_setmaxnreg", "10_persistent", "10_bf16_c", "10_bf16_c_per_tile"
    C, C3, F, S, T, G = "10_cluster", "10_cluster_3_stages", "10_four_stages", "10_tma_store", "10_sts_store", "10_grouped"
    for a, b in ((N9, P), (P, B), (B, C), (C, S), (S, FINAL)):
        for n in SIZES:
            assert _step(data, a, b, n).rises, f"the step {a} -> {b} no longer rises at N={n}"
    assert t(P, 4096) / t(N9, 4096) > t(P, 8192) / t(N9, 8192) > 1, "persistence no longer gains less at 8192"
    assert t(P, 4096) / t(N9, 4096) < 1.05, "persistence is no longer a few percent"
    assert abs(l2(P, 8192) / l2(N9, 8192) - 1) < 0.01 and abs(l2(B, 8192) / l2(P, 8192) - 1) < 0.01
    wrote = lambda w: data["profiles"][f"{w}@8192"]["dram_write_bytes"]  # noqa: E731
    assert abs(wrote(B) / wrote(P) - 0.5) < 0.02, "bf16 C no longer halves the DRAM writes"
    assert _row(data, BT, 8192).tflops_iqr[0] < _row(data, N9, 8192).tflops_iqr[1] * 1.01 and l2(BT, 8192) > 1.2 * l2(N9, 8192)
    assert l2(C, 8192, "tensor_pipe_pct") > l2(B, 8192, "tensor_pipe_pct") and abs(l2(C, 8192) / l2(B, 8192) - 1) < 0.05
    assert all(abs(l2(S, n, "tensor_pipe_pct") - l2(C, n, "tensor_pipe_pct")) < 0.5 for n in SIZES)
    assert max(abs(t(S, n) / t(T, n) - 1) for n in SIZES) < 0.005, "10_sts_store is no longer within half a percent"
    assert all(t(x, n) < 1.005 * t(B, n) for x in (C3, F) for n in SIZES)  # either half alone: no gain
    assert l2(FINAL, 8192) < 0.6 * l2(S, 8192), "the grouped order no longer cuts the DRAM reads at 8192"
    assert l2(FINAL, 8192, "l2_hit_pct") > l2(S, 8192, "l2_hit_pct")
    assert l2(FINAL, 4096) <= l2(S, 4096) < 0.25, "the operands no longer fit in L2 at 4096"
    assert abs(l2(G, 8192) / l2(B, 8192) - 1) < 0.02 and all(t(G, n) < t(B, n) for n in SIZES)
    assert l2(G, 8192, "tensor_pipe_pct") < l2(B, 8192, "tensor_pipe_pct") - 5, "grouped without pairs is no longer much less busy"
    assert abs(l2(FINAL, 8192, "tensor_pipe_pct") - l2("cublas", 8192, "tensor_pipe_pct")) < 3, \
        "the final rung's tensor pipe is no longer as busy as cuBLAS's"


def test_chapter_10_the_bf16_stores_experiments_say_what_the_chapter_reads_from_them():
    """experiments/bf16_stores (outside the run): the launch path changes nothing, the bf16x2 stores alone cost the
    step, pairing the lanes buys it back, the TMA store then adds little; the pairs after the TMA store lose at 4096
    and pay at 8192 (experiment 7). The SASS of the paired build is what the chapter counts."""
    import statistics
    from experiments.bf16_stores import medians, rounds
    from experiments.bf16_stores.build import pairs
    from helpers import build
    med = medians(1, 2)
    for n in SIZES:
        assert abs(med[n, "without"] / med[n, "with __cluster_dims__"] - 1) < 0.005, n
        assert med[n, "09 writing bf16x2"] < med[n, "09 as built (fp32 C)"], n
    med = medians(3)
    paired, built, nine = "lanes paired, 8 B", "10_bf16_c as built", "09 as built (fp32 C)"
    assert all(med[n, paired] > med[n, built] and med[n, paired] > med[n, nine] > med[n, built] for n in SIZES), \
        "pairing the lanes no longer buys the step back"
    variants = dict((name, src) for name, src, *_ in list(pairs())[2][1])
    b, a = build("10_bf16_c", source=variants[paired]), build("10_bf16_c", source=variants[built])
    inv, before = b.inventory(next(iter(b.resources))), a.inventory(next(iter(a.resources)))
    assert (inv.get("SHFL.BFLY"), inv.get("STG.E.64"), inv.get("STG.E")) == (32, 32, None)
    assert (before.get("SHFL.BFLY"), before.get("STG.E")) == (None, 64)
    med = medians(4)
    four, four_paired, store = "10_four_stages as built", "four stages, lanes paired", "10_tma_store as built"
    assert all(med[n, four_paired] > med[n, four] for n in SIZES)
    assert all(1 <= med[n, store] / med[n, four_paired] < 1.02 for n in SIZES), "the TMA store no longer adds little"
    r4 = rounds(4)
    assert min(r4[8192, store]) < max(r4[8192, four_paired])  # within the rounds' spread at 8192
    got = rounds(7)
    m7 = {k: statistics.median(v) for k, v in got.items()}
    assert all(len(v) == 5 for v in got.values()) and len(got) == 8
    assert m7[4096, "10_tma_store"] < m7[4096, "TMA store, no clusters"], "three-stage pairs no longer lose at 4096"
    assert m7[8192, "10_tma_store"] > 1.03 * m7[8192, "TMA store, no clusters"], "three-stage pairs no longer pay at 8192"
    assert max(got[4096, "10_tma_store"]) < min(got[4096, "TMA store, no clusters"])


def test_chapter_10_the_tile_rates_the_registry_uses_are_what_the_run_measured(data):
    from helpers.registry import MID_RATE, NARROW_RATE, rung
    from helpers.tiles import pick_tile, tile_candidates
    v = lambda change, n: data["variants"][f"{FINAL}:{json.dumps(change, sort_keys=True)}@{n}"]["tflops"]  # noqa: E731
    got = {}
    for bn, rate in ((192, MID_RATE), (128, NARROW_RATE)):
        got[bn] = [v({"BN": bn, "WGMMA_N": bn}, n) / v({}, n) for n in (6144, 12288)]
        assert all(abs(x - rate) <= 0.03 for x in got[bn]), f"the registry's rate for 128 x {bn} is off: {got[bn]}"
    wide, mid, narrow = tile_candidates(rung(FINAL))
    clusters = data["grids"][FINAL]["clusters"]
    picked = lambda n, cands: [row["tile"] for row in pick_tile(n, n, cands, clusters) if row["picked"]]  # noqa: E731
    for n in (1024, 2048, 3072, 4096, 6144, 8192, 12288):
        for m in got[192]:
            for r in got[128]:
                assert picked(n, [wide, (*mid[:3], m), (*narrow[:3], r)]) == picked(n, [wide, mid, narrow]), (n, m, r)


def test_chapter_10_clusters_of_one_experiment_split_the_1024_gain():
    from experiments.clusters_of_one import rows
    r = rows()
    for n in (1024, 2048):
        assert r["recorded", n]["tflops_iqr"][0] > r["replaced", n]["tflops_iqr"][1], f"clusters of one no longer win at {n}"


def test_chapter_10_profile_panels_name_what_binds(data):
    """The panels' prose: 10_grouped waits longer on long_scoreboard while drawing less from L2 than 10_bf16_c; the
    final rung stops at `barrier`, its landed L2 bytes above the plain TMA roof and under the multicast one, and the
    counter reads bytes as they land (the profiled rate times the bytes that land per FLOP)."""
    from helpers.figures.profile import limit_of
    g, p = limit_of("10_grouped", 8192), limit_of("10_bf16_c", 8192)
    f, s9 = limit_of(FINAL, 8192), limit_of("09_setmaxnreg", 8192)
    runs = {data["profiles"][f"{who}@8192"]["run"] for who in ("10_grouped", "10_bf16_c", FINAL, "09_setmaxnreg")}
    assert len(runs) == 1, runs  # "in the same run"
    assert g["top_stall"] == p["top_stall"] == "long_scoreboard" and g["roof"] == p["roof"] == "tma_l2_gemm"
    assert g["top_share"] > p["top_share"] and g["pipe_pct"] < p["pipe_pct"], "10_grouped no longer waits longer"
    assert g["l2_fraction_of_roof"] < p["l2_fraction_of_roof"] < 1, "10_grouped no longer draws less from L2"
    assert f["roof"] == "tma_multicast" and s9["top_stall"] != f["top_stall"] == "barrier"
    tma, mc = data["ceilings"]["tma_l2_gemm"]["value"], data["ceilings"]["tma_multicast"]["value"]
    e = data["profiles"][f"{FINAL}@8192"]
    assert tma < e["l2_tbps"] < mc, "the final rung's landed bytes are no longer between the two TMA roofs"
    landed = 2 * 8192 ** 3 / (e["duration_us"] * 1e-6) * (128 + 256) * 64 * 2 / (2 * 128 * 256 * 64) / 1e12
    assert abs(landed / e["l2_tbps"] - 1) < 0.02, (landed, e["l2_tbps"])
    pp, p9 = limit_of("10_persistent", 8192), data["profiles"]["09_setmaxnreg@8192"]
    assert pp["top_stall"] == s9["top_stall"] and pp["top_share"] < s9["top_share"], "persistence no longer waits less"
    assert abs(data["profiles"]["10_persistent@8192"]["dram_read_bytes"] / p9["dram_read_bytes"] - 1) < 0.01


def test_chapter_10_ping_pong_would_cross_both_load_roofs(data):
    """Ping-pong's napkin: L2 bytes per k step from the rung's own constexprs, at cuBLAS's rate at 8192, against the
    roofs of the path rung 10 loads through. Both demands are above their roofs by less than a tenth, today's tile
    is under both, and the cap they set is below what the rung reaches."""
    from helpers.csource import apply_config, read_consts
    from helpers.models import l2_bytes_per_k_tile
    from helpers.registry import rung
    assert not says(_text(), "that chapter 00 measured for L2")  # the LDG probe is rungs 01-06's path, not this one's
    r = rung(FINAL)
    c = read_consts(apply_config(r.path.read_text(), r.config))
    now = l2_bytes_per_k_tile(c["BM"], c["BN"], c["BK"], c["CLUSTER"])
    pong = l2_bytes_per_k_tile(c["BM"] // 2, c["BN"], c["BK"], c["CLUSTER"])
    assert (pong["requested"] / (c["BM"] // 2)) / (now["requested"] / c["BM"]) == 1.5  # "half again as many bytes"
    rate = round(data["gemm"][results.gemm_key(FINAL, 8192, 8192, 8192)]["cublas_tflops"], -1)
    tbs = lambda nbytes, rows: rate * nbytes / (2 * rows * c["BN"] * c["BK"])  # noqa: E731
    supply, land = tbs(pong["requested"], c["BM"] // 2), tbs(pong["landed"], c["BM"] // 2)
    tma, mc = data["ceilings"]["tma_l2_gemm"], data["ceilings"]["tma_multicast"]
    assert 1 < supply / tma["value"] < 1.1 and 1 < land / mc["value"] < 1.1, "ping-pong's demand no longer just crosses both roofs"
    assert mc["detail"]["supplied by L2, TB/s"] < tma["value"]
    assert tbs(now["requested"], c["BM"]) < tma["value"] and tbs(now["landed"], c["BM"]) < mc["value"]
    cap = rate * min(tma["value"] / supply, mc["value"] / land)
    assert cap < data["gemm"][results.gemm_key(FINAL, 8192, 8192, 8192)]["tflops"], "the roofs' cap is no longer below the rung"
