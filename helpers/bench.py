"""Time a rung against cuBLAS in the same process, and measure the machine's ceilings (chapter 00).

Habits: warm up first; time batches of launches with CUDA events and keep the median; rotate among several
input sets so the working set is larger than L2; alternate rung and cuBLAS batches so both see the same clocks.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from .build import build
from .check import (ShapeError, _cp_dtype, as_kn, faults_explained, function, geometry, kernel_args, random_inputs,
                    validate)
from .gpu import launch_arch, require_live
from .registry import Rung, probe, rung as _rung

TIME_BUDGET_S = 0.3  # per contender per measurement: enough launches for a stable median, few enough for a notebook


@dataclass(frozen=True)
class Timing:
    ms: float            # median milliseconds per launch
    launches: int
    tflops: float


@dataclass(frozen=True)
class BenchResult:
    rung: str
    m: int
    n: int
    k: int
    dtype: str
    kernel: Timing
    cublas: Timing
    input_sets: int

    @property
    def ratio(self) -> float:
        return self.kernel.tflops / self.cublas.tflops


def _event_ms(fn) -> float:
    import cupy as cp
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop)


def input_sets_for(m: int, n: int, k: int, itemsize: int, l2_bytes: int) -> int:
    """How many (A, B) pairs to rotate so that one sweep over them is at least twice the L2 size."""
    per_set = (m * k + k * n) * itemsize
    return max(2, min(64, math.ceil(2 * l2_bytes / per_set)))


def time_pair(kernel_fn, cublas_fn, sets: int, flops: float) -> tuple[Timing, Timing]:
    """Median per-launch time of two contenders, each sample a batch of back-to-back launches.

    A batch (at least ~2 ms of GPU work) sits between two CUDA events and rotates over the input sets, so
    the host's launch overhead (large for cupy.matmul next to a 0.2 ms GEMM) hides behind queued GPU work
    instead of being timed. Batches of the two contenders alternate, so both see the same clocks.
    """
    for i in range(sets):  # warm-up: module load, cuBLAS heuristics, clocks ramping up
        kernel_fn(i)
        cublas_fn(i)
    est_k, est_c = _event_ms(lambda: kernel_fn(0)), _event_ms(lambda: cublas_fn(0))
    # Each contender gets its own batch size (a slow naive kernel must not shrink cuBLAS's batches to 1).
    batch_k, batch_c = (max(1, min(50, int(2.0 / max(e, 1e-3)))) for e in (est_k, est_c))
    per_round = batch_k * est_k + batch_c * est_c
    # At least 5 rounds, except for kernels so slow (the naive rung at N=8192: 2 s each) that 3 do.
    rounds = int(min(25, max(3 if est_k > 200 else 5, 2 * TIME_BUDGET_S * 1e3 / per_round)))

    def sample(fn, batch, r):
        return _event_ms(lambda: [fn((r * batch + j) % sets) for j in range(batch)]) / batch

    tk, tc = [], []
    for r in range(rounds):
        tk.append(sample(kernel_fn, batch_k, r))
        tc.append(sample(cublas_fn, batch_c, r))
    mk, mc = statistics.median(tk), statistics.median(tc)
    return Timing(mk, rounds * batch_k, flops / mk / 1e9), Timing(mc, rounds * batch_c, flops / mc / 1e9)


def bench(r: Rung | str, m: int, n: int | None = None, k: int | None = None,
          source: str | None = None) -> BenchResult:
    """TFLOP/s of rung r (or its variant `source`) and of cuBLAS (cupy.matmul, same dtype) on the same
    inputs, in the same run."""
    import cupy as cp
    r = _rung(r) if isinstance(r, str) else r
    n, k = n or m, k or m
    validate(r, m, n, k, source)
    dev = require_live(r.needs_cc, r.arch)
    fn = function(r, source)
    grid, block, smem = geometry(r, m, n, source)
    sets = input_sets_for(m, n, k, np.dtype(_cp_dtype(r.dtype)).itemsize, dev.l2_bytes)
    inputs = [random_inputs(r.dtype, m, n, k, b_layout=r.b_layout) for _ in range(sets)]
    c = cp.empty((m, n), dtype=_cp_dtype(r.out_dtype))
    c_ref = cp.empty((m, n), dtype=inputs[0][0].dtype)
    args = [kernel_args(r, a, b, c, source) for a, b in inputs]  # tensor maps are encoded once, not per launch

    def run_kernel(i):
        fn(grid, block, args[i], shared_mem=smem)

    def run_cublas(i):  # same layouts as the rung: a K-major B goes in as a transposed view
        cp.matmul(inputs[i][0], as_kn(inputs[i][1], r.b_layout), out=c_ref)

    with faults_explained(r):
        kt, ct = time_pair(run_kernel, run_cublas, sets, 2.0 * m * n * k)
    return BenchResult(r.id, m, n, k, r.dtype, kt, ct, sets)


def cublas_tflops(dtype: str, n: int) -> Timing:
    """cuBLAS alone (cupy.matmul) on square N x N x N in `dtype`: the reference ceiling of chapter 00."""
    import cupy as cp
    dev = require_live()
    sets = input_sets_for(n, n, n, np.dtype(_cp_dtype(dtype)).itemsize, dev.l2_bytes)
    inputs = [random_inputs(dtype, n, n, n) for _ in range(sets)]
    out = cp.empty((n, n), dtype=inputs[0][0].dtype)
    run = lambda i: cp.matmul(inputs[i][0], inputs[i][1], out=out)  # noqa: E731
    timing, _ = time_pair(run, run, sets, 2.0 * n**3)
    return timing


def sm_clock_under_load(dtype: str = "bf16", n: int = 8192, seconds: float = 1.5) -> float:
    """The SM clock (MHz, from nvidia-smi) while cuBLAS runs back to back: why peaks on paper are not met."""
    import time
    import cupy as cp
    from .gpu import _smi
    require_live()
    a, b = random_inputs(dtype, n, n, n)
    out = cp.empty((n, n), dtype=a.dtype)
    per_call = _event_ms(lambda: cp.matmul(a, b, out=out))
    for _ in range(int(seconds * 1e3 / per_call)):  # queue ~`seconds` of work (the host may block on a
        cp.matmul(a, b, out=out)                     # full launch queue), then sample while it still runs
    time.sleep(0.2)
    clock = _smi("clocks.sm")
    cp.cuda.runtime.deviceSynchronize()
    if not clock or not clock.strip().isdigit():
        raise RuntimeError("nvidia-smi did not report the SM clock")
    return float(clock)


# ---- chapter 00 probes -------------------------------------------------------------------------------

def _probe_fn(probe_id: str):
    import cupy as cp
    p = probe(probe_id)
    require_live(p.needs_cc, p.arch)
    return cp.RawModule(path=str(build(p, arch=launch_arch(p.arch)).cubin)).get_function(p.entry), build(p).consts["THREADS"]


def _median_ms(run, repeats: int = 20) -> float:
    run()
    run()
    return statistics.median(_event_ms(run) for _ in range(repeats))


def measure_hbm_copy(gib: float = 2.0) -> float:
    """Device-to-device copy bandwidth in TB/s, counting bytes read plus bytes written."""
    import cupy as cp
    fn, threads = _probe_fn("hbm_copy")
    n4 = int(gib * 2**30) // 16
    src, dst = cp.ones(n4 * 4, cp.float32), cp.empty(n4 * 4, cp.float32)
    blocks = require_live().sms * 8
    ms = _median_ms(lambda: fn((blocks,), (threads,), (src, dst, np.int64(n4))))
    if not bool((dst[:: 4096] == 1).all()):
        raise RuntimeError("the copy probe did not copy: its bandwidth number would be meaningless")
    return 2 * n4 * 16 / ms / 1e9


def measure_l2_read(fraction_of_l2: float = 0.4, passes: int = 40) -> float:
    """Read bandwidth from L2 in TB/s: a buffer that fits in L2 (0.4 of it), read `passes` times with .cg."""
    import cupy as cp
    fn, threads = _probe_fn("l2_read")
    dev = require_live()
    n4 = int(dev.l2_bytes * fraction_of_l2) // 16
    src = cp.ones(n4 * 4, cp.float32)
    blocks = dev.sms * 8
    sink = cp.empty(blocks * threads, cp.float32)
    ms = _median_ms(lambda: fn((blocks,), (threads,), (src, np.int64(n4), np.int32(passes), sink)))
    return passes * n4 * 16 / ms / 1e9


def measure_ffma_peak(iters: int = 1 << 14) -> float:
    """FP32 FFMA throughput in TFLOP/s from independent FMA chains (2 FLOP each), no memory traffic."""
    import cupy as cp
    fn, threads = _probe_fn("ffma_peak")
    chains = build("ffma_peak").consts["CHAINS"]
    blocks = require_live().sms * 8  # 2048 threads per SM: every scheduler has warps to pick from
    sink = cp.empty(blocks * threads, cp.float32)
    ms = _median_ms(lambda: fn((blocks,), (threads,), (sink, np.int32(iters), np.float32(0.999), np.float32(1e-3))))
    return 2.0 * chains * iters * blocks * threads / ms / 1e9


def measure_hmma_peak(iters: int = 1 << 12) -> float:
    """mma.sync m16n8k16 BF16 throughput in TFLOP/s: independent MMAs on register operands, no memory."""
    import cupy as cp
    fn, threads = _probe_fn("hmma_peak")
    chains = build("hmma_peak").consts["MMA_CHAINS"]
    blocks = require_live().sms * 4  # 32 warps per SM
    sink = cp.empty(blocks * threads, cp.float32)
    ms = _median_ms(lambda: fn((blocks,), (threads,), (sink, np.int32(iters), np.uint32(0x3F803F80))))
    warps = blocks * threads // 32
    return 4096.0 * chains * iters * warps / ms / 1e9


def measure_hgmma_peak(iters: int = 1 << 11) -> float:
    """wgmma m64n256k16 BF16 throughput in TFLOP/s: two warpgroups per SM on one resident shared tile."""
    import cupy as cp
    fn, threads = _probe_fn("hgmma_peak")
    group = build("hgmma_peak").consts["HGMMA_GROUP"]
    blocks = require_live(probe("hgmma_peak").needs_cc).sms  # 256 threads, ~150 registers: one block per SM
    sink = cp.empty(blocks * threads, cp.float32)
    ms = _median_ms(lambda: fn((blocks,), (threads,), (sink, np.int32(iters))))
    warpgroups = blocks * threads // 128
    return 2.0 * 64 * 256 * 16 * group * iters * warpgroups / ms / 1e9


__all__ = ["BenchResult", "Timing", "bench", "cublas_tflops", "measure_hbm_copy", "measure_l2_read",
           "measure_ffma_peak", "measure_hmma_peak", "measure_hgmma_peak", "ShapeError"]
