"""The strongest cuBLAS is chosen by the harness's own GPU-time rounds, not by nvmath-python's autotune: one contender
per candidate cuBLASLt algorithm (CPU, with a fake Matmul), the fastest same-output median wins (CPU, with fake
Timings), and the Nsight Compute cross-check compares like with like (CPU, with a fake ncu). One GPU test runs it."""
import json

import pytest

from helpers import rung
from helpers.registry import ROOT
from helpers.cublas import LT_AUTOTUNED, LT_CANDIDATES, LT_HEURISTIC, Contender, _planned
from helpers.timing import Timing, _choose


class FakeAlgo:
    def __init__(self, i):
        self.algorithm_id = 66
        self.tile = (128 + 16 * i, 128)
        self.cluster_shape = (1, 2, 1)


class FakeMatmul:
    """What _planned uses of nvmath-python's Matmul: plan() -> algorithms, heuristic order; autotune() reorders
    `algorithms` (the same objects) with `pick` first; reset_operands and execute record what ran."""

    def __init__(self, count, pick):
        self._algos = tuple(FakeAlgo(i) for i in range(count))
        self._pick = pick
        self.algorithms = None
        self.calls = []

    def plan(self):
        self.algorithms = self._algos
        return self._algos

    def autotune(self, iterations=10):
        rest = tuple(a for i, a in enumerate(self._algos) if i != self._pick)
        self.algorithms = (self._algos[self._pick],) + rest

    def reset_operands(self, a=None, b=None):
        self.calls.append(("operands", a, b))

    def execute(self, algorithm=None):
        self.calls.append(("execute", algorithm))


WHAT = "(bf16 in, bf16 out, TN, nvmath-python Matmul"


@pytest.mark.parametrize("count, pick, limit, timed", [(8, 7, LT_CANDIDATES, 8), (8, 2, LT_CANDIDATES, 8),
                                                        (1, 0, LT_CANDIDATES, 1), (3, 1, LT_CANDIDATES, 3),
                                                        (8, 7, 6, 7), (8, 2, 6, 6)])
def test_one_contender_per_candidate_algorithm_with_autotunes_pick_among_them(count, pick, limit, timed):
    """Every candidate by default (LT_CANDIDATES is None); with a limit, the first ones and autotune's pick."""
    assert LT_CANDIDATES is None  # the strongest cuBLAS times all the heuristic offers
    mm = FakeMatmul(count, pick)
    got = _planned(mm, [("a0", "b0"), ("a1", "b1")], WHAT, LT_HEURISTIC, LT_AUTOTUNED, limit=limit)
    assert len(got) == timed
    assert got[0].name == LT_HEURISTIC and "the heuristic's #1 of" in got[0].label  # the heuristic's first, as before
    assert len({x.name for x in got}) == timed and len({x.label for x in got}) == timed
    assert all(x.group == LT_AUTOTUNED and x.same_out for x in got)
    assert all(x.label.startswith("cuBLASLt (bf16 in, bf16 out, TN") and x.label.endswith(")") for x in got)
    picked = [x for x in got if "autotune's pick" in x.label]
    assert len(picked) == 1 and f"#{pick + 1} of {count}" in picked[0].label
    assert picked[0].name == (LT_HEURISTIC if pick == 0 else f"{LT_HEURISTIC} #{pick + 1}")
    assert f"tile {128 + 16 * pick}x128" in picked[0].label and "cluster 1x2x1" in picked[0].label
    # each contender runs its own algorithm on the rotated operands
    picked[0].run(3)
    assert mm.calls[-2:] == [("operands", "a1", "b1"), ("execute", mm.plan()[pick])]


def _timing(name, ms):
    return Timing(name, ms, ms * 0.99, ms * 1.01, 15, 8, 2.0 * 4096**3)


def _contenders(groups):
    """cupy.matmul (fp32 out: not the rung's dtype) and, per group, candidates named like _planned's."""
    out = [Contender("cupy.matmul", "cupy.matmul (...)", lambda i: "cupy", False)]
    for group, heuristic, n in groups:
        out += [Contender(heuristic if i == 0 else f"{heuristic} #{i + 1}", f"cuBLASLt ({group} #{i + 1})",
                          (lambda j: lambda i: j)(f"{group}{i}"), True, group) for i in range(n)]
    return out


def test_the_reference_is_the_fastest_same_output_contender_of_the_rounds():
    r = rung("09_setmaxnreg")  # fp32 C: cupy.matmul writes bf16, so it is shown but never the reference
    cublas = _contenders([(LT_AUTOTUNED, LT_HEURISTIC, 4)])
    ms = {"kernel": 1.0, "cupy.matmul": 0.5, LT_HEURISTIC: 1.10, f"{LT_HEURISTIC} #2": 1.20,
          f"{LT_HEURISTIC} #3": 1.02, f"{LT_HEURISTIC} #4": 1.05}
    got = {name: _timing(name, t) for name, t in ms.items()}
    runs = {"kernel": lambda i: "kernel", **{x.name: x.run for x in cublas}}
    b = _choose(r, (4096, 4096, 4096), cublas, got, 4, None, runs)
    assert b.reference == f"{LT_HEURISTIC} #3" and b.cublas is got[b.reference]
    assert b.cublas_ref == "cuBLASLt (cuBLASLt autotuned #3): the fastest of 4 cuBLASLt algorithms timed in the " \
                           "same rounds"
    assert abs(b.ratio - 1.02) < 1e-9
    # the stable names: the heuristic's first as before, and "autotuned" for the fastest candidate
    assert b.others[LT_HEURISTIC] is got[LT_HEURISTIC]
    assert b.others[LT_AUTOTUNED].ms == 1.02 and b.others[LT_AUTOTUNED].name == LT_AUTOTUNED
    assert b.runs[LT_AUTOTUNED](0) == b.runs[b.reference](0) == "cuBLASLt autotuned2"
    # who looks the reference up by identity (helpers.demos.sustained, tools.crosscheck's child) finds the real one
    assert next(name for name, t in b.others.items() if t is b.cublas) == b.reference
    assert list(b.others)[-1] == LT_AUTOTUNED and "kernel" not in b.others
    assert b.m == b.n == b.k == 4096 and b.input_sets == 4 and b.note is None


def test_fp8_has_two_groups_and_the_label_names_the_mode_that_won():
    r = rung("12_fp8")
    slow, fast = "cuBLASLt FP8 autotuned", "cuBLASLt FP8 fast autotuned"
    cublas = _contenders([(slow, "cuBLASLt FP8 heuristic", 3), (fast, "cuBLASLt FP8 fast heuristic", 2)])[1:]
    ms = {"kernel": 0.10, "cuBLASLt FP8 heuristic": 0.12, "cuBLASLt FP8 heuristic #2": 0.115,
          "cuBLASLt FP8 heuristic #3": 0.13, "cuBLASLt FP8 fast heuristic": 0.098, "cuBLASLt FP8 fast heuristic #2": 0.096}
    got = {name: _timing(name, t) for name, t in ms.items()}
    b = _choose(r, (4096,) * 3, cublas, got, 8, None, {x.name: x.run for x in cublas})
    assert b.reference == "cuBLASLt FP8 fast heuristic #2" and "fastest of 2 cuBLASLt" in b.cublas_ref
    assert b.others[slow].ms == 0.115 and b.others[fast].ms == 0.096
    assert b.others[fast].ms / b.others["cuBLASLt FP8 fast heuristic"].ms <= 1  # what chapter 12 quotes


def test_a_lone_candidate_says_nothing_about_being_fastest_and_no_same_output_is_noted():
    r = rung("09_setmaxnreg")
    cublas = _contenders([(LT_AUTOTUNED, LT_HEURISTIC, 1)])
    got = {name: _timing(name, t) for name, t in {"kernel": 1.0, "cupy.matmul": 0.9, LT_HEURISTIC: 1.0}.items()}
    b = _choose(r, (256,) * 3, cublas, got, 2, None, {x.name: x.run for x in cublas})
    assert b.reference == LT_HEURISTIC and b.cublas_ref == f"cuBLASLt ({LT_AUTOTUNED} #1)"
    only_cupy = _choose(r, (256,) * 3, cublas[:1], got, 2, "why", {})
    assert only_cupy.reference == "cupy.matmul" and "no cuBLAS contender wrote fp32 C" in only_cupy.note


def _ncu_table(kernel_ns, cublas_ns):
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",'
            '"Metric Name","Metric Unit","Metric Value"')
    lines = [head] + [f'"{i}","1","python","h","{k}","1","7","S","gpu__time_duration.sum","ns","{t:,}"'
                      for i, (k, t) in enumerate([("gemm_fp8_kernel", t) for t in kernel_ns]
                                                 + [("nvjet_sm90_qqtst_176x128", t) for t in cublas_ns])]
    return "\n".join(lines)


def test_the_crosscheck_runs_ncu_without_flushing_caches_and_records_that(monkeypatch):
    from helpers.ncu import parse_ncu_csv
    from tools import crosscheck
    seen = {}

    def fake_ncu_rows(args, script, *script_args, timeout=600):
        seen.update(args=args, script=script, script_args=script_args)
        harness = {"ratio": 0.97, "best": "cuBLASLt FP8 fast heuristic #2", "kernel_ms": 0.1, "cublas_ms": 0.097,
                   "kernel_iqr": [0.099, 0.101], "ref": "cuBLASLt (e4m3 in, ...): the fastest of 7", "launches": 9,
                   "batch": 9, "contenders": ["cuBLASLt FP8 fast heuristic", "cuBLASLt FP8 fast heuristic #2"]}
        stdout = "HARNESS " + json.dumps(harness) + "\n" + _ncu_table([100_000] * 9, [97_000] * 9)
        return parse_ncu_csv(stdout), stdout

    monkeypatch.setattr(crosscheck, "ncu_rows", fake_ncu_rows)
    got = crosscheck.crosscheck("12_fp8", 4096, "gemm_fp8")
    args = seen["args"]
    assert args[args.index("--cache-control") + 1] == "none" and "timed/" in args
    import inspect
    from helpers import ncu
    assert '"--clock-control", "none"' in inspect.getsource(ncu.ncu_rows)  # ncu would lock the clock otherwise
    assert seen["script_args"] == ("12_fp8", "4096")
    assert "b.reference" in seen["script"] and "max(7, b.kernel.batch)" in seen["script"]
    assert got["cache_control"] == "none" and got["clock_control"] == "none" and "--cache-control none" in got["ncu_args"] and got["ncu_launches"] == 9
    assert abs(got["ncu_ratio"] - 0.97) < 1e-9 and abs(got["gap_points"]) < 1e-6
    assert got["cublas_contender"] == "cuBLASLt FP8 fast heuristic #2" and got["cublas"].startswith("cuBLASLt (e4m3")
    assert got["cublas_kernels"] == ["nvjet_sm90_qqtst_176x128"]


def test_the_crosscheck_refuses_a_launch_count_it_did_not_queue(monkeypatch):
    from helpers.ncu import parse_ncu_csv
    from tools import crosscheck

    def fake_ncu_rows(args, script, *script_args, timeout=600):
        stdout = "HARNESS " + json.dumps({"ratio": 1.0, "best": "x", "kernel_ms": 1, "cublas_ms": 1, "kernel_iqr": [1, 1],
                                          "ref": "x", "launches": 7}) + "\n" + _ncu_table([1000] * 6, [1000] * 7)
        return parse_ncu_csv(stdout), stdout

    monkeypatch.setattr(crosscheck, "ncu_rows", fake_ncu_rows)
    with pytest.raises(RuntimeError, match="expected 7 launches"):
        crosscheck.crosscheck("10_chip", 4096, "gemm_")


def test_the_crosscheck_defaults_to_all_six_rows():
    from tools import crosscheck
    assert crosscheck.parse_args([]) == (["10_chip", "10_pdl", "10_overlap", "12_fp8"], [4096, 8192])
    assert crosscheck.parse_args(["12_fp8", "4096"]) == (["12_fp8"], [4096])
    assert crosscheck.parse_args(["8192"]) == (["10_chip", "10_pdl", "10_overlap", "12_fp8"], [8192])
    gpu_sh = (ROOT / "ci" / "gpu.sh").read_text()
    assert "python3 -m tools.crosscheck ${CROSSCHECK_ARGS:-} 2>&1" in gpu_sh


@pytest.mark.gpu
@pytest.mark.parametrize("rid", ["10_chip", "12_fp8"])
def test_bench_times_every_candidate_and_the_fastest_is_the_reference(rid):
    pytest.importorskip("nvmath", reason="cuBLASLt's candidates come through nvmath-python (ci/gpu.sh installs it "
                                         "from .whl); without it bench times cupy.matmul alone")
    from helpers import bench
    b = bench(rid, 2048)
    lt = {name: t for name, t in b.others.items() if "heuristic" in name}
    # every candidate of each Matmul (FP8 has two: promoted and fast accumulation): ranks 1 to N, none skipped, and N
    # is the "of N" the reference's label gives for its own Matmul
    import re
    ranks = {}
    for name in lt:
        rank = int(name.rsplit("#", 1)[1]) if "#" in name else 1
        ranks.setdefault("fast" in name, set()).add(rank)
    assert len(ranks) == (1 if rid.startswith("10") else 2), ranks
    assert all(got == set(range(1, max(got) + 1)) for got in ranks.values()), ranks
    m = re.search(r"the heuristic's #\d+ of (\d+)", b.cublas_ref)  # None where cupy.matmul was the fastest
    assert m is None or max(ranks["fast" in b.reference]) == int(m.group(1)), (b.cublas_ref, ranks)
    assert all(t.rounds >= 15 and t.batch == b.kernel.batch for t in b.others.values())
    assert b.cublas is b.others[b.reference] and b.reference in b.runs
    assert b.cublas.ms == min(t.ms for t in b.others.values())  # bf16 C or FP8's bf16 D: all write the rung's dtype
    tuned = "cuBLASLt FP8 fast autotuned" if rid == "12_fp8" else LT_AUTOTUNED
    assert b.others[tuned].ms <= b.others[tuned.replace("autotuned", "heuristic")].ms
