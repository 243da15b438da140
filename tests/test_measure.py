"""The measurement layer: refusals before launch, the element-wise verdict, results-file safety (CPU), and the
harness timing a contender against itself (GPU: A/A tests)."""
import json

import numpy as np
import pytest

from helpers import ShapeError, rung
from helpers import results
from helpers.correctness import verdict
from helpers.launch import square, validate


def test_a_zero_size_is_refused_not_replaced_by_m():
    assert square(256, 0, None) == (256, 0, 256) and square(256, None, None) == (256, 256, 256)
    for shape in ((256, 0, 256), (256, 256, 0), (0, 256, 256)):
        with pytest.raises(ShapeError, match="positive"):
            validate(rung("01_naive"), *shape)


def test_measure_and_replay_refuse_a_zero_size_before_looking_anything_up(monkeypatch):
    from helpers import measure, replay
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    with pytest.raises(ShapeError, match="positive"):
        measure("10_chip", 4096, 0)
    with pytest.raises(ShapeError, match="positive"):
        replay("10_chip", 4096, 4096, 0)


def test_a_grid_taller_than_65535_block_rows_is_refused():
    # 01_naive puts 32 rows of C in a block row: M = 32 * 65536 needs one block row too many.
    with pytest.raises(ShapeError, match="65535"):
        validate(rung("01_naive"), 32 * 65536, 1, 1)
    validate(rung("01_naive"), 32 * 65535, 1, 1)


def _fp32_case(m=64, n=64, k=256, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return a, b, (a @ b).astype(np.float32)


def test_the_element_wise_bound_passes_fp32_summation_and_fails_three_wrong_elements():
    r = rung("01_naive")
    a, b, c = _fp32_case()
    assert verdict(r, 64, 64, 256, a, b, c).ok
    # Three elements off by 0.01: far below the Frobenius tolerance (about 2e-5 of ||C||), far above the bound.
    c[3, 5] += 0.01
    c[40, 1] -= 0.01
    c[63, 63] += 0.01
    res = verdict(r, 64, 64, 256, a, b, c)
    assert res.rel_err < res.tolerance, "the relative error alone would have passed this"
    assert not res.ok and res.bad_elements == 3, str(res)


def test_the_bound_allows_bf16_rounding_of_c_and_catches_a_missed_k_slice():
    import ml_dtypes
    r = rung("10_chip")  # bf16 in, bf16 out, B stored K-major
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 512)).astype(ml_dtypes.bfloat16)
    bt = rng.standard_normal((256, 512)).astype(ml_dtypes.bfloat16)
    a32, bt32 = a.astype(np.float32), bt.astype(np.float32)
    c = (a32 @ bt32.T).astype(ml_dtypes.bfloat16)
    assert verdict(r, 128, 256, 512, a, bt, c).ok
    c_missing = (a32[:, :448] @ bt32[:, :448].T).astype(ml_dtypes.bfloat16)  # the last 64-deep k tile forgotten
    assert not verdict(r, 128, 256, 512, a, bt, c_missing).ok


def test_nan_never_passes_the_verdict():
    a, b, c = _fp32_case()
    c[0, 0] = np.nan
    res = verdict(rung("01_naive"), 64, 64, 256, a, b, c)
    assert not res.ok and "NaN" in str(res)


def test_a_broken_results_file_is_refused_before_measuring_and_left_alone(tmp_results):
    tmp_results.write_text(json.dumps({"gemm": {"x": 3}}))  # a row that is not an entry
    with pytest.raises(results.ResultsError, match="does not look like a results file"):
        results.writable()
    assert json.loads(tmp_results.read_text()) == {"gemm": {"x": 3}}
    tmp_results.write_text("{}")
    assert results.writable() == tmp_results


def test_an_old_row_without_the_new_keys_still_replays():
    from helpers.ladder import Row
    row = Row.from_entry({"rung": "x", "m": 1, "n": 1, "k": 1, "dtype": "bf16", "tflops": 2.0, "cublas_tflops": 4.0,
                          "ratio": 0.5, "correct": True, "rel_err": 0.0, "gpu": "g", "date": "d", "ms": 1.0},
                         "recorded")
    assert row.ratio == 0.5 and row.run is None and row.tflops_iqr is None and row.source == "recorded"


def test_a_timing_reports_the_median_and_the_middle_half_of_its_rounds():
    # timing.summarize turns per-launch times and NVML samples into the Timing every row records. Expected values by
    # hand: of 5 sorted times the quartiles are the 2nd, 3rd and 4th; of 4, a quarter of the way between the 1st and
    # 2nd (1 + 0.75 x 1) and between the 3rd and 4th; rates invert times, so the slow quartile is the low rate.
    from helpers.timing import _quartiles, summarize
    assert _quartiles([16.0, 1.0, 4.0, 2.0, 8.0]) == (2.0, 4.0, 8.0)
    assert _quartiles([4.0, 1.0, 3.0, 2.0]) == (1.75, 2.5, 3.25)
    assert _quartiles([3.0]) == (3.0, 3.0, 3.0)  # one round: no spread, not an error
    samples = [(1980.0, 700.0), (1755.0, None), (0.0, 650.0), (1500.0, 600.0)]  # a 0 MHz or missing reading is dropped
    t = summarize("k", [16.0, 1.0, 4.0, 2.0, 8.0], samples, flops=8e9, batch=12, host_us=3.5)
    assert (t.ms, t.q1_ms, t.q3_ms, t.rounds, t.batch, t.host_us) == (4.0, 2.0, 8.0, 5, 12, 3.5)
    assert t.tflops == 2.0 and t.tflops_iqr == (1.0, 4.0) and t.spread == 1.5  # 8e9 FLOP in 4, 8 and 2 ms
    assert (t.sm_clock_mhz, t.power_w) == (1755.0, 650.0)
    none = summarize("k", [1.0, 1.0], [], flops=1e9, batch=1)
    assert none.sm_clock_mhz is None and none.power_w is None and none.spread == 0.0


# ---- GPU: the harness against itself ---------------------------------------------------------------------------

@pytest.mark.gpu
def test_cublas_against_itself_reads_one():
    import cupy as cp
    from helpers.timing import time_gpu
    from helpers.launch import random_inputs
    a, b = random_inputs("bf16", 4096, 4096, 4096)
    out = cp.empty((4096, 4096), a.dtype)
    mm = lambda i: cp.matmul(a, b, out=out)  # noqa: E731
    got = time_gpu({"A": mm, "B": mm}, 2.0 * 4096**3)
    ratio = got["A"].tflops / got["B"].tflops
    assert 0.98 <= ratio <= 1.02, (ratio, got)
    assert got["A"].spread < 0.05, got["A"]


@pytest.mark.gpu
@pytest.mark.parametrize("rid", ["05_cp_async", "10_chip"])
def test_a_rung_against_itself_reads_one(rid):
    from helpers import prepare
    from helpers.timing import time_gpu
    lau = prepare(rid, 4096)
    a, b = lau.inputs()
    args = lau.args(a, b, lau.output())
    got = time_gpu({"A": lambda i: lau.enqueue(args), "B": lambda i: lau.enqueue(args)}, lau.flops)
    ratio = got["A"].tflops / got["B"].tflops
    assert 0.98 <= ratio <= 1.02, (ratio, got)


@pytest.mark.gpu
def test_bench_times_the_strongest_cublas_with_the_rungs_output_dtype():
    from helpers import bench
    b = bench("09_setmaxnreg", 2048)  # fp32 C: cupy.matmul (bf16 C) may be shown, never the reference
    assert b.others and "fp32 out" in b.cublas_ref, b.cublas_ref
    assert all(t.rounds >= 15 and t.batch == b.kernel.batch for t in b.others.values())
    assert b.cublas.ms <= min(t.ms for name, t in b.others.items() if name != "cupy.matmul") * 1.0001


@pytest.mark.gpu
def test_a_misaligned_view_is_refused_in_one_sentence():
    import cupy as cp
    from helpers import gemm
    from helpers.launch import random_inputs
    a, b = random_inputs("bf16", 256, 256, 64, b_layout="nk")
    buf = cp.empty(256 * 256 + 2, dtype=a.dtype)
    c_bad = buf[2:].view().reshape(256, 256)  # contiguous, 4 bytes past a 16-byte boundary
    with pytest.raises(ShapeError, match="16-byte boundary"):
        gemm("10_chip", a, b, c_bad)


@pytest.mark.gpu
def test_a_few_wrong_elements_fail_the_check_on_a_real_launch():
    import cupy as cp
    from helpers import prepare
    lau = prepare("05_cp_async", 512)
    a, b = lau.inputs()
    c = lau.output()
    lau(a, b, c)
    cp.cuda.runtime.deviceSynchronize()
    assert verdict(lau.rung, 512, 512, 512, a, b, c).ok
    c[7, 9] += 0.05
    c[100, 3] -= 0.05
    assert verdict(lau.rung, 512, 512, 512, a, b, c).bad_elements == 2


def test_the_banner_names_a_broken_results_file_in_one_sentence(tmp_results, monkeypatch):
    from helpers import status
    monkeypatch.setenv("GEMM_LADDER_REPLAY", "1")
    tmp_results.write_text("[1, 2")
    text = status.banner_text("10")
    assert text.startswith("REPLAY:") and "not valid JSON" in text and "\n" not in text


def test_ncu_csv_is_read_from_its_header_on():
    # tools.crosscheck, tools.bank_conflicts and tools.l2_schedule read ncu through this parser (helpers.profile's
    # ncu_rows); the profiled program prints before ncu's table.
    from helpers.ncu import parse_ncu_csv
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",'
            '"Metric Name","Metric Unit","Metric Value"')
    text = "\n".join(["HARNESS {\"ratio\": 0.98}", "==PROF== Disconnected", head,
                      '"0","1","python","h","gemm_x","1","7","S","gpu__time_duration.sum","ns","1,234"',
                      '"1","1","python","h","nvjet_y","1","7","S","gpu__time_duration.sum","ns","1,200"'])
    rows = parse_ncu_csv(text)
    assert [(r["Kernel Name"], r["Metric Value"]) for r in rows] == [("gemm_x", "1,234"), ("nvjet_y", "1,200")]
    assert parse_ncu_csv("no table here\n") == []


def test_a_named_run_refuses_to_time_without_cuBLASLt(monkeypatch):
    """Without nvmath-python only cuBLAS's default is timed: fine for a reader (the label says so), refused in one
    sentence for a named run, whose rows share one baseline per shape (a session once recorded such rows by running
    the ladder outside ci/gpu.sh, which installs nvmath)."""
    from helpers.cublas import _refuse_in_a_run
    from helpers.store import RUN_ENV
    monkeypatch.delenv(RUN_ENV, raising=False)
    assert _refuse_in_a_run(ImportError("No module named 'nvmath'")) is None
    monkeypatch.setenv(RUN_ENV, "2026-11-29T01:10Z-h200")
    with pytest.raises(RuntimeError, match=r"nvmath-python cannot be imported .* run 2026-11-29T01:10Z-h200 "):
        _refuse_in_a_run(ImportError("No module named 'nvmath'"))
