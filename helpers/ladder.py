"""The ladder's rows: `measure` checks and times a rung at a shape against the strongest cuBLAS, through the run
store (helpers.store.obtain), and returns a `Row`, the one row schema; `replay` reads the recorded row; a rung and
shape never recorded is a `NotMeasured` line.
"""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, fields

from . import results
from .correctness import check
from .cublas import layout_name
from .formats import FP8
from .launch import prepare, square, validate
from .registry import Rung, rung as _rung
from .store import NotRecorded, obtain
from .timing import METHOD, bench


def recorded_entry(section: str, key: str) -> dict:
    """A recorded measurement (e.g. the ncu counters of tools/bank_conflicts.py), labelled source='recorded'."""
    e = results.load().get(section, {}).get(key)
    if e is None:
        raise NotRecorded(f"{section}/{key} was never recorded in {results.path_for()}; measure it on a GPU that "
                          f"has the feature (ci/gpu.sh).")
    return {**{k: v for k, v in e.items() if k != "env"}, "source": "recorded"}




@dataclass(frozen=True)
class Row:
    rung: str
    m: int
    n: int
    k: int
    dtype: str
    tflops: float            # median of the interleaved rounds
    cublas_tflops: float     # this run's baseline for (shape, dtype, layout, out dtype): the strongest cuBLAS
    ratio: float             # tflops / cublas_tflops: 0.87 means 87% of cuBLAS
    correct: bool
    rel_err: float
    source: str              # "live" (measured now), "this run" (measured earlier in this run), or "recorded"
    gpu: str
    date: str
    run: str | None = None
    method: str | None = None
    tflops_iqr: list | None = None      # [q1, q3] in TFLOP/s
    cublas_iqr: list | None = None
    cublas_ref: str | None = None       # what the baseline timed
    sm_clock_mhz: float | None = None   # NVML, while the rung's batches ran
    power_w: float | None = None
    cublas_sm_clock_mhz: float | None = None
    cublas_power_w: float | None = None
    cublas_row_tflops: float | None = None  # the same cuBLAS, timed in this row's own rounds: drift witness
    cupy_tflops: float | None = None        # what cupy.matmul gives, shown beside (its C is in the input dtype)
    host_us: float | None = None            # host time to queue one launch of the rung: apart from the GPU time
    cublas_host_us: float | None = None
    tile: list | None = None                # [BM, BN] the launch used (rung 10 picks it per shape)
    cluster: int | None = None              # CTAs per cluster the launch used (rungs 10 and 12 pick 1 or 2)
    ms: float | None = None                 # median GPU time per launch
    batch: int | None = None                # launches per timed batch, the same for every contender
    rounds: int | None = None               # interleaved rounds
    input_sets: int | None = None           # input sets rotated so one sweep is twice the L2
    worst_element: float | None = None      # the largest |C - ref| / element bound of the check (<= 1 passes)

    has_number = True  # live or recorded (NotMeasured: none)

    def json(self) -> dict:
        """The row as the results file and the CLI's --json write it: the one place a row is serialised."""
        return asdict(self)

    @classmethod
    def entry(cls, **values) -> dict:
        """What measure() records for a row: every field but those obtain() adds (source, gpu, date, run)."""
        unknown = set(values) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"Row has no field(s) {sorted(unknown)}")
        return values

    @classmethod
    def from_entry(cls, e: dict, source: str) -> "Row":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in e.items() if k in names and k != "source"}, source=source)


@dataclass(frozen=True)
class NotMeasured:
    """A table line with no number: replay asked for a rung and shape the results file does not hold (a rung added
    after the recorded run). `table` prints it as "not measured"; the plots and the factors between rungs skip it."""
    rung: str
    m: int
    n: int
    k: int
    dtype: str
    why: str
    source: str = "not measured"
    has_number = False

    def json(self) -> dict:
        return asdict(self)


def untimable(r: Rung) -> str | None:
    """Why rung r cannot be timed against its cuBLAS here although the GPU could run it, or None. FP8: cuBLASLt's
    FP8 GEMM is reached through PyTorch FP8 tensors (CuPy has none)."""
    import importlib.util
    if r.dtype in FP8 and importlib.util.find_spec("torch") is None:
        return (f"{r.id} is timed against cuBLASLt FP8, which this course reaches through PyTorch's FP8 tensors, and "
                f"PyTorch is not installed")
    return None


# How far a row's own cuBLAS may sit from its run's baseline for the shape before the row warns. In one lease the
# two agree within about 1% beside kernels of similar speed; beside a much slower kernel (02_wmma_naive) cuBLAS read
# 2-3% lower, and rows added to a run from another lease were 2-5% off (H200, 2026-11-29).
DRIFT = 0.02


def baseline_key(r: Rung, m: int, n: int, k: int) -> str:
    return f"{r.dtype}-{layout_name(r.b_layout)}-{r.out_dtype}@{m}x{n}x{k}"


def measure(r: Rung | str, m: int, n: int | None = None, k: int | None = None, save: bool = True,
            missing_ok: bool = False) -> Row | NotMeasured:
    """Live: check on fresh data, time against every cuBLAS contender in interleaved rounds, record. The ratio
    divides by this run's baseline for the shape, dtype, layout and output dtype, so every row of a run shares
    one cuBLAS number. Replay: the recorded row, labelled so; one never recorded raises NotRecorded, or with
    missing_ok comes back as a NotMeasured line."""
    r = _rung(r) if isinstance(r, str) else r
    m, n, k = square(m, n, k)
    validate(r, m, n, k)  # a shape the rung cannot take is refused here, live or replayed

    def how() -> dict:
        lau = prepare(r, m, n, k)
        ok = check(lau)
        b = bench(lau)
        cub = b.cublas
        base, _ = obtain("baselines", baseline_key(r, m, n, k), lambda: {
            "tflops": cub.tflops, "iqr": list(cub.tflops_iqr), "ref": b.cublas_ref, "ms": cub.ms,
            "sm_clock_mhz": cub.sm_clock_mhz, "power_w": cub.power_w, "timed_beside": r.id, "note": b.note,
            "contenders": {name: {"tflops": t.tflops, "iqr": list(t.tflops_iqr)} for name, t in b.others.items()}},
            save=save)
        kt = b.kernel
        if abs(cub.tflops / base["tflops"] - 1) > DRIFT:
            print(f"warning: {r.id} at {m}x{n}x{k}: cuBLAS ran at {cub.tflops:.1f} TFLOP/s in this row's rounds and at "
                  f"{base['tflops']:.1f} when this run's baseline was timed (beside {base.get('timed_beside')}); "
                  f"the ratio divides by that baseline, so it carries the difference: beside a much slower kernel "
                  f"cuBLAS reads a few points lower, and across leases the card's clocks differ (re-time a shape's "
                  f"rows together, in a new run).",
                  file=sys.stderr, flush=True)
        return Row.entry(
            rung=r.id, tile=list(lau.kernel.tile), cluster=lau.kernel.consts.get("CLUSTER"), m=m, n=n, k=k, dtype=r.dtype, tflops=kt.tflops,
            cublas_tflops=base["tflops"], ratio=kt.tflops / base["tflops"], correct=ok.ok, rel_err=ok.rel_err,
            method=METHOD, tflops_iqr=list(kt.tflops_iqr), cublas_iqr=base["iqr"], cublas_ref=base["ref"],
            sm_clock_mhz=kt.sm_clock_mhz, power_w=kt.power_w, cublas_sm_clock_mhz=base["sm_clock_mhz"],
            cublas_power_w=base["power_w"], cublas_row_tflops=cub.tflops,
            cupy_tflops=b.others["cupy.matmul"].tflops if "cupy.matmul" in b.others else None,
            host_us=kt.host_us, cublas_host_us=cub.host_us, ms=kt.ms, batch=kt.batch, rounds=kt.rounds,
            input_sets=b.input_sets, worst_element=ok.worst_excess)

    try:
        entry, source = obtain("gemm", results.gemm_key(r.id, m, n, k), how, r.needs_cc, r.arch, save,
                                 untimable(r))
    except NotRecorded as e:
        if not missing_ok:
            raise
        return NotMeasured(r.id, m, n, k, r.dtype, str(e))
    return Row.from_entry(entry, source)


def replay(r: Rung | str, m: int, n: int | None = None, k: int | None = None,
           missing_ok: bool = False) -> Row | NotMeasured:
    """The recorded row, even on a GPU (never recorded: NotRecorded, or with missing_ok a NotMeasured line)."""
    r = _rung(r) if isinstance(r, str) else r
    m, n, k = square(m, n, k)
    validate(r, m, n, k)
    e = results.recorded_gemm(r.id, m, n, k)
    if e is None:
        why = f"{r.id} at {m}x{n}x{k} was never recorded in {results.path_for()}; run it on a GPU to measure it."
        if missing_ok:
            return NotMeasured(r.id, m, n, k, r.dtype, why)
        raise NotRecorded(why)
    return Row.from_entry(e, "recorded")
