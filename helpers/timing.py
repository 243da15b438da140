"""Time GPU work only, against the strongest cuBLAS in the same rounds, and measure the machine's ceilings.

The method (the same for every number in the book):
- Before each timed batch, a spin kernel (probe_spin) keeps the GPU busy while the host queues the batch, so the
  start event fires only once the whole batch is queued: host launch time (about 10 us per raw launch, 30 us per
  cupy.matmul) never lands between the events. If the queue ran dry anyway, the sample is taken again with a
  longer spin.
- Every contender gets the same batch size; contenders alternate (ABC, CBA, ...) over at least 15 rounds, and
  each reports the median and the interquartile range of its per-launch time.
- Inputs rotate over enough sets that one sweep is twice the L2, so nobody is timed on a warm cache.
- The SM clock and the board power are sampled (NVML) while each contender's batches run. Clocks and power
  limits are never changed.
"""
from __future__ import annotations

import functools
import math
import statistics
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .formats import FP8, FP8_INPUT_SCALE, cp_dtype
from .gpu import require_live, sample_clock_power
from .kernel import faults_explained, kernel
from .launch import Launch, as_kn, prepare, random_inputs
from .registry import Rung, probe

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
    power_w: float | None = None        # (bursts of ~2 ms behind an idle spin: the clock rarely sags there)
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
    return {name: _timing(name, per_launch[name], samples[name], flops, batch, statistics.median(host[name]))
            for name in names}


def _timing(name: str, per_launch: list, samples: list, flops: float, batch: int, host_us: float | None = None
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


# ---- the strongest cuBLAS -------------------------------------------------------------------------------------

CUPY = "cupy.matmul"
LT_HEURISTIC = "cuBLASLt heuristic"
LT_AUTOTUNED = "cuBLASLt autotuned"


@dataclass(frozen=True)
class Contender:
    name: str
    label: str        # what was timed, in words (the `cublas_ref` of a row)
    run: object       # fn(i): queue one launch on input set i
    same_out: bool    # writes C in the rung's output dtype: only those may be the reference
    group: str | None = None  # cuBLASLt candidates of one Matmul share it: the stable name of the fastest of them


def layout_name(b_layout: str) -> str:
    """Row-major C = A @ B with B stored [K, N] ("NN"), or stored K-major [N, K] ("TN", as cuBLAS users say)."""
    return "TN" if b_layout == "nk" else "NN"


LT_CANDIDATES = 6  # cuBLASLt algorithms timed per Matmul: the heuristic's first ones (autotune's pick added if not)


def _algo_words(algo) -> str:
    """An nvmath-python Algorithm in words: its id, tile and cluster shape (whichever this version reports)."""
    words = [f"algorithm {algo.algorithm_id}"]
    for what, attr in (("tile", "tile"), ("cluster", "cluster_shape")):
        try:
            v = getattr(algo, attr)
        except Exception:  # noqa: BLE001 - an attribute this cuBLASLt does not report for this algorithm
            continue
        if isinstance(v, (tuple, list)) and v and all(isinstance(x, int) for x in v):
            words.append(f"{what} {'x'.join(str(x) for x in v)}")
    return ", ".join(words)


def _planned(mm, operands: list, what: str, heuristic_name: str, tuned_name: str,
             limit: int = LT_CANDIDATES) -> list:
    """Plan an nvmath-python Matmul and return one contender per candidate algorithm over `operands` (the (a, b)
    pairs it takes, rotated per launch): the heuristic's first `limit` algorithms, plus autotune's pick when it is
    not among them. The harness times them all in its own interleaved GPU-time rounds and the fastest median wins
    (bench): autotune's pick alone moved between runs (a 128x128 tile one run, 256x128 the next) and with it the
    ratio. The heuristic's first is named `heuristic_name` as before; the others `heuristic_name #i` (i: the
    heuristic's rank); all carry `tuned_name` as their group, the name bench gives the fastest of them. Each extra
    contender costs about ROUNDS x BATCH_MS (15 x 2 ms) of GPU time per shape, plus its warm-up. `what` opens the
    label, e.g. "(bf16 in, bf16 out, TN, nvmath-python Matmul"."""
    algos = list(mm.plan())
    mm.autotune(iterations=5)  # reorders mm.algorithms (the same objects) by nvmath's own timing
    pick = mm.algorithms[0]
    chosen = list(range(min(limit, len(algos))))
    chosen += [i for i, a in enumerate(algos) if a is pick and i not in chosen]

    def lt(algo):
        def run(i):
            a, b = operands[i % len(operands)]
            mm.reset_operands(a=a, b=b)
            mm.execute(algorithm=algo)
        return run
    out = []
    for i in chosen:
        algo = algos[i]
        why = f"the heuristic's #{i + 1} of {len(algos)}" + (", autotune's pick" if algo is pick else "")
        out.append(Contender(heuristic_name if i == 0 else f"{heuristic_name} #{i + 1}",
                             f"cuBLASLt {what}, {_algo_words(algo)}; {why})", lt(algo), True, tuned_name))
    return out


def cublas_set(r: Rung, m: int, n: int, k: int, inputs: list) -> tuple[list, str | None]:
    """(contenders, why cuBLASLt is missing or None): cupy.matmul (what a CuPy user gets) and cuBLASLt through
    nvmath-python (the heuristic's candidate algorithms, see _planned), on the rung's layout, input dtype and
    output dtype, over `inputs`.
    The closures hold their output arrays and the planned Matmul. FP8 rungs get cuBLASLt's FP8 path instead."""
    import cupy as cp
    if r.dtype in FP8:
        return fp8_cublaslt_set(r, m, n, k, inputs)
    in_dt, out_dt = cp_dtype(r.dtype), cp_dtype(r.out_dtype)
    c_cupy = cp.empty((m, n), dtype=in_dt)  # cupy.matmul writes the inputs' dtype
    same = np.dtype(in_dt) == np.dtype(out_dt)
    lay = layout_name(r.b_layout)
    contenders = [Contender(CUPY, f"cupy.matmul ({r.dtype} in, {r.dtype} out, {lay}; cuBLAS's default heuristic)",
                            lambda i: cp.matmul(inputs[i % len(inputs)][0], as_kn(inputs[i % len(inputs)][1], r.b_layout),
                                                out=c_cupy), same)]
    why = None
    try:
        from nvmath.linalg.advanced import Matmul
        c_lt = cp.empty((m, n), dtype=out_dt)
        operands = [(a, as_kn(b, r.b_layout)) for a, b in inputs]
        mm = Matmul(*operands[0], c=c_lt, beta=0.0, options={"inplace": True})
        contenders += _planned(mm, operands, f"({r.dtype} in, {r.out_dtype} out, {lay}, nvmath-python Matmul",
                               LT_HEURISTIC, LT_AUTOTUNED)
    except Exception as e:  # noqa: BLE001 - not installed, or this dtype combination unsupported: say which
        why = f"cuBLASLt through nvmath-python was not timed ({type(e).__name__}: {str(e)[:160]})"
    return contenders, why


LT_FP8 = "cuBLASLt FP8"


def fp8_cublaslt_set(r: Rung, m: int, n: int, k: int, inputs: list) -> tuple[list, str | None]:
    """cuBLASLt's FP8 GEMM (e4m3 A and B, K-major both: "TN"; per-tensor scales; bf16 D) through nvmath-python,
    the heuristic's candidate algorithms (see _planned), each with FP8 fast accumulation off (cuBLASLt's default: it promotes partial sums
    into fp32 registers every few k-blocks) and on (partial sums stay in the tensor core's accumulator, as in
    rung 12). CuPy has no FP8 dtype, so the operands reach cuBLASLt as PyTorch FP8 views of the same memory
    (DLPack, no copy); without PyTorch there is no contender, and the reason says so."""
    try:
        import torch
        from nvmath import CudaDataType
        from nvmath.linalg.advanced import Matmul
    except ImportError as e:
        return [], (f"cuBLASLt FP8 was not timed: it is reached through PyTorch's FP8 tensors (CuPy has none) and "
                    f"nvmath-python ({e}); install both to compare")
    fp8 = {"e4m3": torch.float8_e4m3fn}[r.dtype]
    views = [(torch.from_dlpack(a).view(fp8), torch.from_dlpack(b).view(fp8).t()) for a, b in inputs]  # B = Bt^T
    contenders, why = [], None
    for fast in (False, True):
        acc, tag = ("fast accumulation", " fast") if fast else ("promoted accumulation", "")
        try:
            mm = Matmul(*views[0], quantization_scales={"a": FP8_INPUT_SCALE, "b": FP8_INPUT_SCALE},
                        options={"result_type": CudaDataType.CUDA_R_16BF, "fast_accumulation": fast})
            contenders += _planned(mm, views, f"(e4m3 in, bf16 out, TN, per-tensor scales, {acc}, nvmath-python Matmul",
                                   f"{LT_FP8}{tag} heuristic", f"{LT_FP8}{tag} autotuned")
        except Exception as e:  # noqa: BLE001 - this combination unsupported here: say which
            why = f"cuBLASLt FP8 (fast_accumulation={fast}) was not timed ({type(e).__name__}: {str(e)[:160]})"
    return contenders, why


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
    cupy.matmul and up to LT_CANDIDATES + 1 cuBLASLt algorithms; FP8 up to twice that (promoted and fast
    accumulation), no cupy.matmul."""
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


# ---- chapter 00: the machine's ceilings ------------------------------------------------------------------------

@dataclass(frozen=True)
class Reading:
    """A ceiling's value and what the card held while it was measured."""
    value: float
    sm_clock_mhz: float | None = None
    power_w: float | None = None
    iqr: tuple | None = None
    detail: dict | None = None  # what else the probe found (e.g. every configuration a roof probe tried)


def _probe_fn(probe_id: str):
    kern = kernel(probe_id)
    return kern.function(), kern.threads


def _rate(run, amount: float, batch_ms: float = BATCH_MS) -> Reading:
    """`amount` (bytes or FLOP, in units of 1e12 per second per ms) per launch of `run`, timed with the method."""
    t = time_gpu({"probe": lambda i: run()}, amount, batch_ms=batch_ms)["probe"]
    return Reading(t.tflops, t.sm_clock_mhz, t.power_w, t.tflops_iqr)


def measure_hbm_copy(gib: float = 2.0) -> Reading:
    """Device-to-device copy bandwidth in TB/s, counting bytes read plus bytes written."""
    import cupy as cp
    from .hardware import MAX_THREADS_PER_SM  # here: hardware reads the results file, which import helpers need not
    fn, threads = _probe_fn("hbm_copy")
    n4 = int(gib * 2**30) // 16
    src, dst = cp.ones(n4 * 4, cp.float32), cp.empty(n4 * 4, cp.float32)
    blocks = require_live().sms * (MAX_THREADS_PER_SM // threads)  # a full SM of threads: loads in flight everywhere
    got = _rate(lambda: fn((blocks,), (threads,), (src, dst, np.int64(n4))), 2 * n4 * 16)
    if not bool((dst[:: 4096] == 1).all()):
        raise RuntimeError("the copy probe did not copy: its bandwidth number would be meaningless")
    return got


def measure_l2_read(fraction_of_l2: float = 0.4, passes: int = 40) -> Reading:
    """Read bandwidth from L2 in TB/s: a buffer that fits in L2 (0.4 of it), read `passes` times with .cg."""
    import cupy as cp
    from .hardware import MAX_THREADS_PER_SM
    fn, threads = _probe_fn("l2_read")
    dev = require_live()
    n4 = int(dev.l2_bytes * fraction_of_l2) // 16
    src = cp.ones(n4 * 4, cp.float32)
    blocks = dev.sms * (MAX_THREADS_PER_SM // threads)
    sink = cp.empty(blocks * threads, cp.float32)
    return _rate(lambda: fn((blocks,), (threads,), (src, np.int64(n4), np.int32(passes), sink)), passes * n4 * 16)


def measure_ffma_peak(iters: int = 1 << 14) -> Reading:
    """FP32 FFMA throughput in TFLOP/s from independent FMA chains (2 FLOP each), no memory traffic."""
    import cupy as cp
    from .hardware import MAX_THREADS_PER_SM
    fn, threads = _probe_fn("ffma_peak")
    chains = kernel("ffma_peak").consts["CHAINS"]
    blocks = require_live().sms * (MAX_THREADS_PER_SM // threads)  # every scheduler has warps to pick from
    sink = cp.empty(blocks * threads, cp.float32)
    return _rate(lambda: fn((blocks,), (threads,), (sink, np.int32(iters), np.float32(0.999), np.float32(1e-3))),
                 2.0 * chains * iters * blocks * threads)


def measure_hmma_peak(iters: int = 1 << 12) -> Reading:
    """mma.sync m16n8k16 BF16 throughput in TFLOP/s: independent MMAs on register operands, no memory."""
    import cupy as cp
    from .hardware import MAX_THREADS_PER_SM, WARP
    fn, threads = _probe_fn("hmma_peak")
    chains = kernel("hmma_peak").consts["MMA_CHAINS"]
    blocks = require_live().sms * (MAX_THREADS_PER_SM // 2 // threads)  # half an SM of warps: 32 per SM
    sink = cp.empty(blocks * threads, cp.float32)
    warps = blocks * threads // WARP
    return _rate(lambda: fn((blocks,), (threads,), (sink, np.int32(iters), np.uint32(0x3F803F80))),
                 4096.0 * chains * iters * warps)


def measure_hgmma_peak(random_operands: bool = False, iters: int = 1 << 13, seconds: float = 1.5,
                       dtype: str = "bf16", n: int = 256) -> Reading:
    """wgmma m64n256 throughput in TFLOP/s (k16 BF16, or k32 e4m3 with dtype="e4m3"), two warpgroups per SM on one
    resident shared tile, held for about `seconds` so the clock settles where the 700 W cap puts it. Zero operands
    draw less power than random ones, so they run at a higher clock: `random_operands=True` is the ceiling a real
    GEMM can reach."""
    import cupy as cp
    pid, k_step = {("bf16", 256): ("hgmma_peak", 16), ("bf16", 128): ("hgmma_n128", 16),
                   ("bf16", 64): ("hgmma_n64", 16), ("e4m3", 256): ("qgmma_peak", 32)}[dtype, n]
    fn, threads = _probe_fn(pid)
    group = kernel(pid).consts["HGMMA_GROUP"]
    blocks = require_live(probe(pid).needs_cc).sms  # 256 threads, ~150 registers: one block per SM
    sink = cp.empty(blocks * threads, cp.float32)
    words = (64 + n) * 128 // 4  # the A and B tiles, 128 bytes per row, as 32-bit words
    values = 4 * words // np.dtype(cp_dtype(dtype)).itemsize  # random values, as a GEMM's operands hold
    operands = (random_inputs(dtype, 1, values, 1)[1].view(cp.uint32).reshape(-1)[:words].copy()
                if random_operands else None)
    ptr = operands if operands is not None else np.uint64(0)
    run = lambda: fn((blocks,), (threads,), (sink, np.int32(iters), ptr))  # noqa: E731
    flop = 2.0 * 64 * n * k_step * group * iters * blocks * threads // 128
    end = time.perf_counter() + seconds / 3
    while time.perf_counter() < end:  # a third of the time under load first: the clock sags, then settles
        run()
        cp.cuda.runtime.deviceSynchronize()
    return _rate(run, flop, batch_ms=1e3 * seconds / 1.5 / ROUNDS)


# (box rows, ring slots, CTAs per SM): rung 10's 32 KiB boxes six deep, rung 08's 16 KiB boxes twelve deep, and both
# split over two CTAs per SM, so the roof is the most the path delivered, not one schedule's share of it.
TMA_SCHEDULES = ((256, 6, 1), (128, 12, 1), (256, 3, 2), (128, 6, 2))


def measure_tma_l2_read(fraction_of_l2: float = 0.4, batch_ms: float = BATCH_MS) -> Reading:
    """L2 -> shared memory through TMA in TB/s (bytes landed in shared memory): every SM keeps boxes in flight from a
    buffer of `fraction_of_l2` of the L2, as the TMA rungs' producers do, minus the math. The best of TMA_SCHEDULES;
    `detail` holds each one's rate."""
    import cupy as cp
    from .compiler import apply_config
    from .tma import tensor_map_2d
    probe_ = probe("tma_l2_read")
    dev = require_live(probe_.needs_cc)
    rates = {}
    for rows, stages, per_sm in TMA_SCHEDULES:
        kern = kernel(probe_, apply_config(probe_.path.read_text(), {"TMA_BOX_ROWS": rows, "TMA_STAGES": stages}))
        fn, box = kern.function(), kern.consts["TMA_BOX_BYTES"]
        boxes = int(dev.l2_bytes * fraction_of_l2) // box
        src = cp.ones((boxes * rows, 64), cp.uint16)  # 64 bf16 a row, 128 bytes: one swizzle atom wide
        tmap = tensor_map_2d(src, rows, 64, dtype="bf16")
        fn.max_dynamic_shared_size_bytes = smem = stages * box
        ctas = dev.sms * per_sm
        loads = max(4 * stages, int(batch_ms * 1e-3 * 8e12 / (ctas * box)))  # about batch_ms at 8 TB/s
        sink = cp.zeros(ctas, cp.uint32)
        got = _rate(lambda: fn((ctas,), (32,), (tmap, np.int32(boxes), np.int32(loads), sink), shared_mem=smem),
                    float(ctas) * loads * box)
        if not bool((sink == 0x00010001).all()):  # two uint16 ones read as one 32-bit word: a box landed
            raise RuntimeError("the TMA probe's boxes did not land in shared memory: its bandwidth would be meaningless")
        rates[f"{rows}x64 bf16 boxes, {stages} slots, {per_sm} CTA(s)/SM"] = got
    best = max(rates.values(), key=lambda g: g.value)
    return Reading(best.value, best.sm_clock_mhz, best.power_w, best.iqr,
                   {name: round(g.value, 3) for name, g in rates.items()})


# Working sets for the TMA path's curve, as fractions of L2. Rung 10 at N = 4096 keeps about 2.6 MB of distinct
# operand tiles in flight across the chip (about 9 A slabs of 16 KiB and 16 B slabs of 32 KiB per k step, four k
# steps deep): 0.05 of the 50 MiB L2. The TMA rate falls as the set grows, so the roof a rung meets is at its set.
TMA_WORKING_SETS = (0.02, 0.05, 0.1, 0.2, 0.4)
GEMM_WORKING_SET = 0.05


def measure_tma_l2_curve() -> Reading:
    """The TMA path's rate (the best of TMA_SCHEDULES) at each working set of TMA_WORKING_SETS; the value is the rate
    at a GEMM's own working set (GEMM_WORKING_SET), `detail` the whole curve in TB/s by MB."""
    dev = require_live(probe("tma_l2_read").needs_cc)
    curve = {f: measure_tma_l2_read(fraction_of_l2=f) for f in TMA_WORKING_SETS}
    at = curve[GEMM_WORKING_SET]
    return Reading(at.value, at.sm_clock_mhz, at.power_w, at.iqr,
                   {f"{f * dev.l2_bytes / 1e6:.1f} MB": round(g.value, 3) for f, g in curve.items()})


def measure_tma_multicast(fraction_of_l2: float = GEMM_WORKING_SET, batch_ms: float = BATCH_MS) -> Reading:
    """L2 -> shared memory through TMA in 2-CTA clusters, each CTA fetching half of every box and multicasting it to
    both, as rung 10 fetches its B tile. The value is TB/s landed in shared memory, both CTAs counted; L2 supplies
    half of that. The best of TMA_SCHEDULES at a GEMM's working set, so it compares with tma_l2_gemm; `detail` holds
    the rate L2 supplied, the bytes of one launch both ways, the working set and each schedule's rate."""
    import cupy as cp
    from .compiler import apply_config
    from .gpu import max_active_clusters
    from .tma import tensor_map_2d
    probe_ = probe("tma_multicast")
    dev = require_live(probe_.needs_cc)
    rates, landed = {}, {}
    for rows, stages, per_sm in TMA_SCHEDULES:
        kern = kernel(probe_, apply_config(probe_.path.read_text(), {"TMA_BOX_ROWS": rows, "TMA_STAGES": stages}))
        fn, box, half = kern.function(), kern.consts["TMA_BOX_BYTES"], kern.consts["MC_HALF_ROWS"]
        boxes = int(dev.l2_bytes * fraction_of_l2) // box
        # Every element of row r holds r % 65535 + 1: the first word of a half names the row it came from, and is
        # never the zero the kernel writes there before its copies.
        tag = (cp.arange(boxes * rows, dtype=cp.uint32) % 65535 + 1).astype(cp.uint16)
        src = cp.ascontiguousarray(cp.broadcast_to(tag[:, None], (boxes * rows, 64)))  # 128-byte rows
        tmap = tensor_map_2d(src, half, 64, dtype="bf16")  # one copy moves half a box: each CTA of the pair issues one
        fn.max_dynamic_shared_size_bytes = smem = stages * box
        # As many pairs as the driver places at once (a GPC with an odd SM leaves it idle): no pair waits for a wave.
        clusters = max_active_clusters(fn.kernel.ptr, dev.sms * per_sm // 2 * 2, 32, smem)
        ctas = 2 * clusters
        loads = max(4 * stages, int(batch_ms * 1e-3 * 8e12 / (ctas * box)))  # about batch_ms at 8 TB/s
        sink = cp.zeros(2 * ctas, cp.uint32)
        got = _rate(lambda: fn((ctas,), (32,), (tmap, np.int32(boxes), np.int32(loads), sink), shared_mem=smem),
                    float(ctas) * loads * box)
        # Each CTA holds its pair's last box whole: the first row of its own half and of the half its peer multicast.
        last = (np.arange(ctas) // 2 + (loads - 1) * clusters) % boxes
        first = ((last[:, None] * rows + np.arange(2) * half) % 65535 + 1).reshape(-1).astype(np.uint32)
        if not np.array_equal(sink.get(), first | first << 16):
            raise RuntimeError("the multicast probe's CTAs did not each receive both halves of their last box: its "
                               "bandwidth would be meaningless")
        name = f"{rows}x64 bf16 boxes, {stages} slots, {per_sm} CTA(s)/SM, {clusters} pairs"
        rates[name], landed[name] = got, ctas * loads * box
    name = max(rates, key=lambda k: rates[k].value)
    best, value = rates[name], round(rates[name].value, 3)
    return Reading(best.value, best.sm_clock_mhz, best.power_w, best.iqr,
                   {"landed in shared memory, TB/s": value, "supplied by L2, TB/s": value / 2,
                    "landed per launch, bytes": landed[name], "supplied by L2 per launch, bytes": landed[name] // 2,
                    "working set, MB": round(fraction_of_l2 * dev.l2_bytes / 1e6, 1), "schedule": name,
                    **{f"{k} (TB/s landed)": round(g.value, 3) for k, g in rates.items()}})


def measure_cublas(dtype: str, n: int) -> Reading:
    """The strongest cuBLAS on square N x N x N in `dtype` (C in `dtype`, B stored [K, N]): chapter 00's reference."""
    r = Rung("cublas", "cuBLAS", "", dtype=dtype, out_dtype=dtype)
    sets = input_sets_for(n, n, n, np.dtype(cp_dtype(dtype)).itemsize, require_live().l2_bytes)
    inputs = [random_inputs(dtype, n, n, n) for _ in range(sets)]
    cublas, _ = cublas_set(r, n, n, n, inputs)
    got = time_gpu({x.name: x.run for x in cublas}, 2.0 * n**3)
    best = min(got.values(), key=lambda t: t.ms)
    return Reading(best.tflops, best.sm_clock_mhz, best.power_w, best.tflops_iqr)


def _hold(run, seconds: float, settle: float) -> tuple[float, int, list]:
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
            ms, calls, got = _hold(contenders[name], seconds, seconds / 2)
            per_launch[name].append(ms / calls)
            samples[name] += got
    return {name: _timing(name, per_launch[name], samples[name], flops, 0) for name in names}


def back_to_back(dtype: str = "bf16", n: int = 8192, seconds: float = 1.5) -> Reading:
    """cupy.matmul (N x N x N, `dtype`) queued back to back, with no gaps: the power-limited regime of a long
    training step. TFLOP/s over the second half of `seconds`, and the SM clock and power NVML read meanwhile."""
    import cupy as cp
    require_live()
    a, b = random_inputs(dtype, n, n, n)
    out = cp.empty((n, n), dtype=a.dtype)
    ms, calls, samples = _hold(lambda i: cp.matmul(a, b, out=out), seconds / 2, seconds / 2)
    if not samples:
        raise RuntimeError("NVML did not report the SM clock (is nvidia-ml-py installed?)")
    t = _timing("cupy.matmul", [ms / calls], samples, 2.0 * n**3, 0)
    return Reading(t.tflops, t.sm_clock_mhz, t.power_w)


def sm_clock_under_load(dtype: str = "bf16", n: int = 8192, seconds: float = 1.5) -> Reading:
    """The SM clock (MHz, NVML) while cuBLAS runs back to back: why peaks on paper are not met."""
    got = back_to_back(dtype, n, seconds)
    return Reading(got.sm_clock_mhz, got.sm_clock_mhz, got.power_w)


__all__ = ["BenchResult", "Reading", "Timing", "bench", "time_gpu", "measure_hbm_copy", "measure_l2_read", "measure_tma_l2_read", "measure_tma_l2_curve",
           "measure_tma_multicast",
           "measure_ffma_peak", "measure_hmma_peak", "measure_hgmma_peak", "measure_cublas", "back_to_back", "time_sustained",
           "sm_clock_under_load"]
