"""Chapter 00's ceilings of the machine: bandwidths (HBM, L2, TMA, multicast), tensor-core and FMA peaks, the
strongest cuBLAS and the clock under sustained load, each measured by a probe kernel of kernels/00_probes.cu with
the timing method of helpers.timing. Each returns a Reading: the value and what the card held meanwhile."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .csource import apply_config
from .cublas import cublas_set
from .formats import cp_dtype
from .gpu import require_live
from .hardware import MAX_THREADS_PER_SM, WARP
from .kernel import kernel
from .launch import random_inputs
from .registry import Rung, probe
from .timing import BATCH_MS, ROUNDS, hold, input_sets_for, summarize, time_gpu

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
    fn, threads = _probe_fn("ffma_peak")
    chains = kernel("ffma_peak").consts["CHAINS"]
    blocks = require_live().sms * (MAX_THREADS_PER_SM // threads)  # every scheduler has warps to pick from
    sink = cp.empty(blocks * threads, cp.float32)
    return _rate(lambda: fn((blocks,), (threads,), (sink, np.int32(iters), np.float32(0.999), np.float32(1e-3))),
                 2.0 * chains * iters * blocks * threads)


def measure_hmma_peak(iters: int = 1 << 12) -> Reading:
    """mma.sync m16n8k16 BF16 throughput in TFLOP/s: independent MMAs on register operands, no memory."""
    import cupy as cp
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


def back_to_back(dtype: str = "bf16", n: int = 8192, seconds: float = 1.5) -> Reading:
    """cupy.matmul (N x N x N, `dtype`) queued back to back, with no gaps: the power-limited regime of a long
    training step. TFLOP/s over the second half of `seconds`, and the SM clock and power NVML read meanwhile."""
    import cupy as cp
    require_live()
    a, b = random_inputs(dtype, n, n, n)
    out = cp.empty((n, n), dtype=a.dtype)
    ms, calls, samples = hold(lambda i: cp.matmul(a, b, out=out), seconds / 2, seconds / 2)
    if not samples:
        raise RuntimeError("NVML did not report the SM clock (is nvidia-ml-py installed?)")
    t = summarize("cupy.matmul", [ms / calls], samples, 2.0 * n**3, 0)
    return Reading(t.tflops, t.sm_clock_mhz, t.power_w)


def sm_clock_under_load(dtype: str = "bf16", n: int = 8192, seconds: float = 1.5) -> Reading:
    """The SM clock (MHz, NVML) while cuBLAS runs back to back: why peaks on paper are not met."""
    got = back_to_back(dtype, n, seconds)
    return Reading(got.sm_clock_mhz, got.sm_clock_mhz, got.power_w)
