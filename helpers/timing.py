"""Time GPU work only: the method every number in the book is measured with.

- Before each timed batch, a spin kernel (probe_spin) keeps the GPU busy while the host queues the batch, so the
  start event fires only once the whole batch is queued: host launch time (about 10 us per raw launch, 30 us per
  cupy.matmul) never lands between the events. If the queue ran dry anyway, the sample is taken again with a
  longer spin.
- Every contender gets the same batch size; contenders alternate (ABC, CBA, ...) over at least 15 rounds, and
  each reports the median and the interquartile range of its per-launch time.
- Inputs rotate over enough sets that one sweep is twice the L2, so nobody is timed on a warm cache.
- The SM clock and the board power are sampled (NVML) while each contender's batches run. Clocks and power
  limits are never changed.

`bench` times a rung against the cuBLAS contenders of helpers.cublas in those rounds; helpers.probes times the
machine's ceilings with the same method.
"""
from __future__ import annotations

import functools
import math
import statistics
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .cublas import cublas_set
from .formats import FP8, FP8_INPUT_SCALE, cp_dtype
from .gpu import require_live, sample_clock_power
from .kernel import faults_explained, kernel
from .launch import Launch, prepare
from .registry import Rung

ROUNDS = 15          # interleaved rounds per measurement (median and IQR over these)
BATCH_MS = 2.0       # GPU time of one batch of the slowest contender; every contender gets that many launches
MAX_BATCH = 64
METHOD = "gpu-time"  # what the JSON rows say: spin-prefilled queue, equal batches, interleaved rounds


@dataclass(frozen=True)
class Timing:
    """Per-launch GPU time of one contender over the rounds: median and quartiles, and what the card held."""
    name: str
    ms: float                 # median per launch
    q1_ms: float
    q3_ms: float
    rounds: int
    batch: int
    flops: float = 0.0
    sm_clock_mhz: float | None = None   # median of NVML samples taken while this contender's batches ran
    power_w: float | None = None        # (bursts of ~2 ms: a stale sample, often the boost clock; Nsight Compute's
                                        # elapsed-cycle rate is the clock a kernel ran at)
    host_us: float | None = None        # host time to queue one launch: stated apart, never inside `ms`

    @property
    def tflops(self) -> float:
        return self.flops / self.ms / 1e9

    @property
    def tflops_iqr(self) -> tuple[float, float]:
        """[q1, q3] in TFLOP/s (the slow quartile of times is the low quartile of rates)."""
        return (self.flops / self.q3_ms / 1e9, self.flops / self.q1_ms / 1e9)

    @property
    def spread(self) -> float:
        """IQR as a fraction of the median."""
        return (self.q3_ms - self.q1_ms) / self.ms


@functools.lru_cache(maxsize=1)
def _spin():
    # every probe lives in kernels/00_probes.cu; the spin kernel is there too
    return kernel("hbm_copy").module().get_function("probe_spin")


def _quartiles(xs: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else (xs[0],) * 3
    return q1, statistics.median(xs), q3


class _Sampler:
    """Runs one batch between two events behind a spin kernel; grows the spin whenever the queue ran dry."""

    def __init__(self):
        import cupy as cp
        self.cp = cp
        self.spin_ns = 200_000

    def batch_ms(self, enqueue, batch: int, samples: list | None = None, host: list | None = None) -> float:
        cp = self.cp
        for _ in range(6):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            _spin()((1,), (32,), (np.uint64(self.spin_ns),))
            start.record()
            t0 = time.perf_counter()
            for _ in range(batch):
                enqueue()
            stop.record()
            host_ns = (time.perf_counter() - t0) * 1e9
            dry = start.done  # the spin ended before the host finished queueing: host time may be inside
            while not stop.done:
                if samples is not None and start.done:
                    s = sample_clock_power()
                    if s:
                        samples.append(s)
                time.sleep(0.0003)
            stop.synchronize()
            # Keep the spin at least twice the host's queueing time, so the next batch is covered too.
            self.spin_ns = int(max(self.spin_ns, 2 * host_ns + 100_000))
            if not dry:
                if host is not None:
                    host.append(host_ns / batch / 1e3)
                return cp.cuda.get_elapsed_time(start, stop)
        raise RuntimeError("the host could not queue a batch faster than the GPU ran it, even behind a "
                           f"{self.spin_ns / 1e6:.1f} ms spin; the timing would include host time.")


def time_gpu(contenders: dict, flops: float = 0.0, rounds: int = ROUNDS, batch: int | None = None,
             batch_ms: float = BATCH_MS) -> dict[str, Timing]:
    """Median per-launch GPU time of each contender, `contenders` mapping a name to fn(i) that queues one launch
    on input set i. Same batch size for all, order alternating every round, NVML sampled during each batch."""
    require_live()
    names = list(contenders)
    counters = {name: 0 for name in names}

    def enqueue(name):
        def one():
            contenders[name](counters[name])
            counters[name] += 1
        return one

    sampler = _Sampler()
    for name in names:  # warm-up: module load, cuBLAS heuristics, autotuned plans, clocks ramping up
        sampler.batch_ms(enqueue(name), 3)
    est = {name: sampler.batch_ms(enqueue(name), 2) / 2 for name in names}
    if batch is None:
        batch = max(1, min(MAX_BATCH, round(batch_ms / max(est.values()))))
    per_launch = {name: [] for name in names}
    samples = {name: [] for name in names}
    host = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            per_launch[name].append(sampler.batch_ms(enqueue(name), batch, samples[name], host[name]) / batch)
    return {name: summarize(name, per_launch[name], samples[name], flops, batch, statistics.median(host[name]))
            for name in names}


def summarize(name: str, per_launch: list, samples: list, flops: float, batch: int, host_us: float | None = None
            ) -> Timing:
    """Median and quartiles of per-launch times, with the median NVML clock and power sampled meanwhile."""
    q1, med, q3 = _quartiles(per_launch)
    clocks = [x[0] for x in samples if x[0]]
    powers = [x[1] for x in samples if x[1]]
    return Timing(name, med, q1, q3, len(per_launch), batch, flops, statistics.median(clocks) if clocks else None,
                  statistics.median(powers) if powers else None, host_us)


def input_sets_for(m: int, n: int, k: int, itemsize: int, l2_bytes: int) -> int:
    """How many (A, B) pairs to rotate so that one sweep over them is at least twice the L2 size."""
    per_set = (m * k + k * n) * itemsize
    return max(2, min(64, math.ceil(2 * l2_bytes / per_set)))


@dataclass(frozen=True)
class BenchResult:
    rung: str
    m: int
    n: int
    k: int
    dtype: str
    kernel: Timing
    cublas: Timing                 # the strongest same-output cuBLAS contender of these rounds
    cublas_ref: str                # what that was, in words
    others: dict                   # every cuBLAS contender's Timing, by name (cupy.matmul shown beside); after
    #                                them, each cuBLASLt group's stable name (LT_AUTOTUNED, "cuBLASLt FP8 fast
    #                                autotuned") with its fastest candidate's Timing, renamed
    input_sets: int
    note: str | None = None        # e.g. why cuBLASLt was not timed
    runs: dict = field(default_factory=dict, compare=False, repr=False)  # name -> fn(i), "kernel" and groups included
    reference: str = ""            # the name (in `others` and `runs`) of the contender that is `cublas`

    @property
    def ratio(self) -> float:
        return self.kernel.tflops / self.cublas.tflops


def bench(r: Rung | str | Launch, m: int | None = None, n: int | None = None, k: int | None = None,
          source: str | None = None) -> BenchResult:
    """TFLOP/s of rung r (or its variant `source`, or a prepared Launch) and of every cuBLAS contender, on the
    same inputs, in the same interleaved rounds; the reference is the fastest contender that writes the rung's
    output dtype. cuBLASLt is several contenders, one per candidate algorithm (_planned): BF16 times the kernel,
    cupy.matmul and every cuBLASLt algorithm the heuristic offers (helpers.cublas.LT_CANDIDATES); FP8 twice that
    (promoted and fast accumulation), no cupy.matmul."""
    import cupy as cp
    lau = r if isinstance(r, Launch) else prepare(r, m, n, k, source)
    r, (m, n, k) = lau.rung, (lau.m, lau.n, lau.k)
    sets = input_sets_for(m, n, k, np.dtype(cp_dtype(r.dtype)).itemsize, require_live().l2_bytes)
    inputs = [lau.inputs() for _ in range(sets)]
    c = cp.empty((m, n), dtype=cp_dtype(r.out_dtype))
    scale = FP8_INPUT_SCALE**2 if r.dtype in FP8 else 1.0  # what cuBLASLt FP8 gets too: scale_a = scale_b = 1/16
    args = [lau.args(a, b, c, scale) for a, b in inputs]  # tensor maps are encoded once, not per launch
    cublas, note = cublas_set(r, m, n, k, inputs)
    if not cublas:
        raise RuntimeError(f"{r.id} has no cuBLAS contender here, so no ratio can be measured: {note}.")
    contenders = {"kernel": lambda i: lau.enqueue(args[i % sets])}
    contenders.update({x.name: x.run for x in cublas})
    with faults_explained(r):
        got = time_gpu(contenders, lau.flops)
    return _choose(r, (m, n, k), cublas, got, sets, note, contenders)


def bench_launches(launches: dict) -> dict:
    """Several prepared launches of one shape and dtype (name -> Launch: builds an experiment compares) and every
    cuBLAS contender, on the same inputs, in the same interleaved rounds. Returns a row: per name, and for the fastest
    cuBLAS ("cublas_best"), TFLOP/s, its IQR, the time per launch in µs, the ratio to that cuBLAS and what the card
    held; per launch also its tile, cluster, ring depth and grid; under "cublas_groups", each cuBLASLt group's
    fastest candidate (e.g. FP8 with promoted and with fast accumulation, apart), with the same fields."""
    first = next(iter(launches.values()))
    m, n, k = first.m, first.n, first.k
    sets = input_sets_for(m, n, k, np.dtype(cp_dtype(first.rung.dtype)).itemsize, require_live().l2_bytes)
    inputs = [first.inputs() for _ in range(sets)]
    c = first.output()
    contenders = {}
    for name, lau in launches.items():
        args = [lau.args(a, b, c) for a, b in inputs]
        contenders[name] = (lambda lau, args: lambda i: lau.enqueue(args[i % len(args)]))(lau, args)
    cublas, note = cublas_set(first.rung, m, n, k, inputs)
    contenders.update({x.name: x.run for x in cublas})
    got = time_gpu(contenders, first.flops)
    best = min((x for x in cublas if x.same_out), key=lambda x: got[x.name].ms)
    row = {"shape": [m, n, k], "cublas": best.label, "note": note, "cublas_groups": {}}
    fields = lambda t: {"tflops": t.tflops, "iqr": list(t.tflops_iqr), "us": t.ms * 1e3,  # noqa: E731
                        "ratio": got[best.name].ms / t.ms, "sm_clock_mhz": t.sm_clock_mhz, "power_w": t.power_w,
                        "rounds": t.rounds, "batch": t.batch}
    for name in (*launches, best.name):
        row[name if name in launches else "cublas_best"] = fields(got[name])
    for group in sorted({x.group for x in cublas if x.group}):
        fastest = min((x for x in cublas if x.group == group), key=lambda x: got[x.name].ms)
        row["cublas_groups"][group] = {**fields(got[fastest.name]), "label": fastest.label}
    for name, lau in launches.items():
        row[name].update({"tile": list(lau.kernel.tile), "cluster": lau.kernel.consts.get("CLUSTER", 1),
                          "stages": lau.kernel.consts.get("STAGES"), "grid": lau.grid[0]})
    return row


def _choose(r: Rung, shape: tuple, cublas: list, got: dict, sets: int, note: str | None, runs: dict
            ) -> BenchResult:
    """bench's verdict from the rounds' Timings (`got`, by name, "kernel" included): the reference is the fastest
    median among the contenders that write the rung's output dtype, and a cuBLASLt candidate's label says it was
    the fastest of its group in these rounds. Each group's stable name maps to its fastest candidate."""
    same = [x for x in cublas if x.same_out]
    best = min(same or cublas, key=lambda x: got[x.name].ms)
    if not same:
        note = (note + "; " if note else "") + f"no cuBLAS contender wrote {r.out_dtype} C, so the reference differs"
    others, runs = {x.name: got[x.name] for x in cublas}, dict(runs)
    groups: dict = {}
    for x in cublas:
        if x.group:
            groups.setdefault(x.group, []).append(x)
    for group, members in groups.items():
        fastest = min(members, key=lambda x: got[x.name].ms)
        others[group] = replace(got[fastest.name], name=group)
        runs[group] = runs[fastest.name]
    label = best.label
    if best.group and len(groups[best.group]) > 1:
        label += f": the fastest of {len(groups[best.group])} cuBLASLt algorithms timed in the same rounds"
    return BenchResult(r.id, *shape, r.dtype, got["kernel"], got[best.name], label, others, sets, note, runs,
                       best.name)


# ---- the power-limited regime: launches queued back to back, no gaps -----------------------------------------

def hold(run, seconds: float, settle: float) -> tuple[float, int, list]:
    """Queue run(i) back to back, with no gaps, for `settle` seconds and then `seconds` more; return the GPU time
    of the second part (events around it), how many launches it held, and NVML's samples meanwhile. A few groups
    of launches stay queued, no more: the GPU never starves and the host never runs far ahead."""
    import cupy as cp
    samples, calls, i, start, stop, inflight = [], 0, 0, None, cp.cuda.Event(), []
    t0 = time.perf_counter()
    while time.perf_counter() < t0 + settle + seconds or start is None:
        if start is None and time.perf_counter() > t0 + settle:
            start = cp.cuda.Event()
            start.record()
        for _ in range(4):
            run(i)
            i += 1
            calls += start is not None
        inflight.append(cp.cuda.Event())
        inflight[-1].record()
        if len(inflight) > 8:
            inflight.pop(0).synchronize()
        if start is not None:
            s = sample_clock_power()
            if s:
                samples.append(s)
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop), calls, samples


def time_sustained(contenders: dict, flops: float, seconds: float = 0.6, rounds: int = 4) -> dict[str, Timing]:
    """The power-limited regime of a long run: each contender queued back to back for `seconds` (after half as
    long again to let the clock settle), contenders alternating ABBA over `rounds`. Timing.ms is the mean GPU time
    per launch of a window (median over rounds); the clock and power are NVML's medians while it ran."""
    require_live()
    names = list(contenders)
    per_launch = {name: [] for name in names}
    samples = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            ms, calls, got = hold(contenders[name], seconds, seconds / 2)
            per_launch[name].append(ms / calls)
            samples[name] += got
    return {name: summarize(name, per_launch[name], samples[name], flops, 0) for name in names}
