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



def measure_hbm_read(gib: float = 2.0) -> Reading:
    """HBM read bandwidth in TB/s: about `gib` GiB, far more than L2 holds, read once per launch and summed in
    registers, one store per thread at the end. The best of probe_l2_read's grid-stride walk and probe_read_ldg's
    slices (a contiguous run per CTA), both 8 CTAs of 256 threads per SM; `detail` holds the bytes and both rates."""
    import cupy as cp
    dev = require_live()
    c = kernel("read_ldg").consts
    threads, unroll, per_sm = c["THREADS"], c["READ_UNROLL"], MAX_THREADS_PER_SM // c["THREADS"]
    ctas = dev.sms * per_sm
    steps = int(gib * 2**30) // (ctas * threads * unroll * 16)  # every thread reads steps * unroll float4s, both walks
    n4 = ctas * threads * unroll * steps
    src = cp.ones(n4 * 4, cp.float32)
    sink = cp.empty(ctas * threads, cp.float32)
    walks = {"grid-stride, probe_l2_read": (kernel("l2_read").function(), (src, np.int64(n4), np.int32(1), sink)),
             "a slice per CTA, probe_read_ldg": (kernel("read_ldg").function(),
                                                 (src, np.int32(n4 // ctas), np.int32(steps), sink))}
    rates = {}
    for name, (fn, args) in walks.items():
        sink.fill(0)
        rates[name] = _rate(lambda: fn((ctas,), (threads,), args), n4 * 16)
        if not bool((sink == 4 * unroll * steps).all()):  # ones summed: every thread read every float4 it owns
            raise RuntimeError(f"the HBM read probe ({name}) did not read every byte: its bandwidth would be "
                               "meaningless")
    name = max(rates, key=lambda k: rates[k].value)
    best = rates[name]
    return Reading(best.value, best.sm_clock_mhz, best.power_w, best.iqr,
                   {"working set, MB": round(n4 * 16 / 1e6, 1), "read per launch, bytes": n4 * 16, "schedule": name,
                    **{f"{k} (TB/s)": round(g.value, 3) for k, g in rates.items()}})


# The like-for-like read roofs: LDG, cp.async and TMA over the same working sets, cut the same way, each CTA reading
# only its own slice (no two CTAs on one line), and TMA once more at the small set in probe_tma_l2's walk, where CTAs
# outnumbering the boxes fetch one box at once: size and sharing, one at a time. A set is a share per SM, so that
# every path's slices and TMA's boxes divide it; the name is the set on 132 SMs (H100 SXM, H200), the detail this
# GPU's. 20 KiB: the distinct operand bytes rung 10 keeps in flight at N = 4096 ((9 x 16 + 16 x 32) KiB x 4 k steps,
# 2.69 MB), the set tma_l2_gemm stands for; 160 KiB: about the set l2_read and tma_l2_read read on the H100 (0.4 of its
# 50 MiB L2, 21.0 MB); 64 KiB between them.
READ_SETS = {"2.7MB": 20 * 1024, "8.7MB": 64 * 1024, "21.6MB": 160 * 1024}
READ_PATHS = ("ldg", "cp_async", "tma")
# Each path's schedules, from shallow to deep: (CTAs per SM,) for LDG, (16-byte copies per thread a fill, CTAs per SM)
# for cp.async, (most box rows, KiB in flight per CTA, CTAs per SM) for TMA: from 16-20 KiB in flight per SM up to
# 128 KiB (LDG: 2,048 threads at 32 registers, four loads each) or 180-192 KiB (cp.async; TMA, as TMA_SCHEDULES and the
# shared walk keep). The shallowest keeps no more in flight than a 20 KiB share holds, so at every set one schedule of
# each path requests no line twice at once; the roof is the best of them.
READ_LDG_SCHEDULES = ((1,), (2,), (4,), (8,))
READ_CP_ASYNC_SCHEDULES = ((1, 1), (4, 1), (4, 2), (3, 4))
READ_TMA_SCHEDULES = ((40, 20, 1), (128, 64, 1), (128, 96, 1), (256, 192, 1), (128, 192, 1), (256, 96, 2), (128, 96, 2))


@dataclass(frozen=True)
class ReadSchedule:
    """One way a path reads a working set: CTAs per SM, the bytes each CTA reads and keeps in flight, its arguments."""
    name: str
    per_sm: int
    set_bytes: int    # the working set; the same for every schedule but the shared walk's (whole boxes)
    slice_bytes: int  # the CTA's own slice; in the shared walk, the set over the CTAs
    in_flight: int    # bytes one CTA keeps requested and not yet landed: its loads or copies issued before it waits
    args: tuple = ()  # (copies,) for cp.async; (box rows, slots, boxes in the set) for TMA


def read_plan(path: str, share: int, sms: int, shared: bool = False) -> list[ReadSchedule]:
    """The schedules of `path` ("ldg", "cp_async" or "tma") over a working set of `share` bytes per SM on `sms` SMs;
    `shared` (TMA only): probe_tma_l2's walk over probe_tma_l2's boxes, the set rounded down to whole boxes. A schedule
    whose slice is smaller than a CTA's THREADS-wide step is left out."""
    from .csource import read_consts
    c = read_consts(probe("read_ldg").path.read_text())  # THREADS, READ_UNROLL, CP_SLOTS, READ_TMA_SLOTS
    step = c["THREADS"] * 16  # one 16-byte load or copy per thread
    plan = []
    if shared:
        if path != "tma":
            raise ValueError(f"only TMA has a shared walk (probe_tma_l2's); got {path!r}")
        for rows, slots, per_sm in TMA_SCHEDULES:
            box = rows * 128
            boxes = sms * share // box
            plan.append(ReadSchedule(f"{rows}x64 bf16 boxes, {slots} slots, {per_sm} CTA(s)/SM", per_sm, boxes * box,
                                     boxes * box // (sms * per_sm), slots * box, (rows, slots, boxes)))
        return plan
    if path == "ldg":
        for (per_sm,) in READ_LDG_SCHEDULES:
            plan.append(ReadSchedule(f"{per_sm} CTA(s)/SM, {c['READ_UNROLL']} loads in flight per thread", per_sm,
                                     sms * share, share // per_sm, step * c["READ_UNROLL"]))
    elif path == "cp_async":
        for copies, per_sm in READ_CP_ASYNC_SCHEDULES:
            plan.append(ReadSchedule(f"{per_sm} CTA(s)/SM, {copies} copies per thread a fill, {c['CP_SLOTS']} fills in "
                                     "flight", per_sm, sms * share, share // per_sm, step * copies * c["CP_SLOTS"],
                                     (copies,)))
    elif path == "tma":
        for rows, kib, per_sm in READ_TMA_SCHEDULES:
            mine = share // per_sm // 128  # the slice's 128-byte rows
            # The largest box of at most `rows` rows that tiles the slice, a multiple of 8 rows (1 KiB: the slots stay
            # on the 128-byte swizzle's 1024-byte atoms), and as many slots of it as `kib` holds.
            fit = max((r for r in range(8, min(rows, mine) + 1, 8) if mine % r == 0), default=0)
            slots = min(c["READ_TMA_SLOTS"], kib * 1024 // (fit * 128)) if fit else 0
            if slots:
                plan.append(ReadSchedule(f"{fit}x64 bf16 boxes, {slots} slots, {per_sm} CTA(s)/SM", per_sm, sms * share,
                                         mine * 128, slots * fit * 128, (fit, slots, sms * per_sm * (mine // fit))))
    else:
        raise ValueError(f"no read path named {path!r}; there are {', '.join(READ_PATHS)}")
    kept: dict = {}
    for s in plan:
        if s.slice_bytes >= step:
            kept.setdefault(s.name, s)  # two schedules that fit the set alike are one
    return list(kept.values())


def read_roof(plan: list[ReadSchedule], rates: dict, sms: int, shared: bool = False) -> Reading:
    """The roof of one path at one working set: the best schedule's Reading, with a `detail` that states the set, how
    the CTAs share it, and each schedule's rate and requests in flight per line of the set (at most 1: no line is
    requested twice at once)."""
    per_line = {s.name: sms * s.per_sm * s.in_flight / s.set_bytes for s in plan}
    best = max(plan, key=lambda s: rates[s.name].value)
    working_set = best.set_bytes
    alone = [rates[s.name].value for s in plan if per_line[s.name] <= 1]
    sharing = ("probe_tma_l2's walk: CTA b's load i takes box (b + i x CTAs) mod boxes, so where the CTAs outnumber "
               "the boxes several fetch one box at once" if shared else
               "none: each CTA reads only its own slice of the set, round and round, so no two CTAs load one line")
    it = rates[best.name]
    return Reading(it.value, it.sm_clock_mhz, it.power_w, it.iqr, {
        "working set, MB": round(working_set / 1e6, 2), "working set, bytes": working_set,
        "per SM, KiB": round(working_set / sms / 1024, 2), "sharing": sharing, "schedule": best.name,
        "requests in flight per line": round(per_line[best.name], 2),
        "best with at most one request in flight per line, TB/s": round(max(alone), 3) if alone else None,
        "schedules": {s.name: {"TB/s": round(rates[s.name].value, 3), "CTAs": sms * s.per_sm,
                               "working set, MB": round(s.set_bytes / 1e6, 2),
                               "slice per CTA, KiB": round(s.slice_bytes / 1024, 2),
                               "in flight per SM, KiB": s.per_sm * s.in_flight / 1024,
                               "requests in flight per line": round(per_line[s.name], 2)} for s in plan}})


def measure_read(path: str, set_name: str, shared: bool = False, batch_ms: float = BATCH_MS) -> Reading:
    """One like-for-like read roof in TB/s (bytes read from L2, landed in registers or shared memory): `path` over the
    working set READ_SETS[set_name], each CTA its own slice, or (TMA, shared=True) in probe_tma_l2's walk. The best of
    the path's schedules; read_roof's `detail`. Each probe's sink proves its bytes arrived from the right place."""
    import cupy as cp
    dev = require_live(probe(f"read_{path}").needs_cc)
    plan = read_plan(path, READ_SETS[set_name], dev.sms, shared)
    working_set = max(s.set_bytes for s in plan)  # the buffer; the shared walk's schedules read whole boxes of it
    kern = kernel(f"read_{path}")
    fn, c = kern.function(), kern.consts
    threads = c["THREADS"]
    rates = {}
    if path == "tma":
        from .tma import tensor_map_2d
        rows = working_set // 128
        # Every element of row r holds r % 65535 + 1: the first word of a box names the row it came from.
        tag = (cp.arange(rows, dtype=cp.uint32) % 65535 + 1).astype(cp.uint16)
        src = cp.ascontiguousarray(cp.broadcast_to(tag[:, None], (rows, 64)))  # [rows, 64] bf16: 128-byte rows
    elif path == "ldg":
        src = cp.ones((working_set // 16, 4), cp.float32)  # ones: each thread's sum counts its loads
    else:
        n4 = working_set // 16
        if n4 >= 2**24:
            raise ValueError(f"a {working_set / 1e6:.1f} MB set has float4 indices that a float32 cannot name exactly")
        src = cp.zeros((n4, 4), cp.float32)
        src[:, 0] = cp.arange(n4, dtype=cp.float32)  # the first word of each float4 names it
    for s in plan:
        ctas = dev.sms * s.per_sm
        b = np.arange(ctas)
        if path == "ldg":
            slice4, unroll = s.slice_bytes // 16, c["READ_UNROLL"]
            steps = max(1, int(batch_ms * 1e-3 * 8e12 / (ctas * threads * unroll * 16)))  # about batch_ms at 8 TB/s
            sink = cp.zeros(ctas * threads, cp.float32)
            rates[s.name] = _rate(lambda: fn((ctas,), (threads,), (src, np.int32(slice4), np.int32(steps), sink)),
                                  float(ctas) * threads * steps * unroll * 16, batch_ms)
            if not bool((sink == 4 * unroll * steps).all()):  # below 2**24: exact in float32
                raise RuntimeError("the LDG read probe did not make every load: its bandwidth would be meaningless")
        elif path == "cp_async":
            (copies,), slice4, slots = s.args, s.slice_bytes // 16, c["CP_SLOTS"]
            fills = max(slots, int(batch_ms * 1e-3 * 8e12 / (ctas * threads * copies * 16)))
            fn.max_dynamic_shared_size_bytes = smem = slots * copies * threads * 16
            sink = cp.zeros(ctas * threads, cp.uint32)
            rates[s.name] = _rate(lambda: fn((ctas,), (threads,), (src, np.int32(slice4), np.int32(copies),
                                                                     np.int32(fills), sink), shared_mem=smem),
                                  float(ctas) * threads * fills * copies * 16, batch_ms)
            # Thread t's last copy took position t + (fills * copies - 1) * THREADS of its CTA's slice, wrapped.
            t = np.arange(threads)
            pos = (t[None, :] + (fills * copies - 1) * threads) % slice4
            want = (b[:, None] * slice4 + pos).astype(np.float32).view(np.uint32).reshape(-1)
            if not np.array_equal(sink.get(), want):
                raise RuntimeError("the cp.async read probe's copies did not land from each CTA's own slice: its "
                                   "bandwidth would be meaningless")
        else:
            box_rows, slots, boxes = s.args
            box = box_rows * 128
            tmap = tensor_map_2d(src[: boxes * box_rows], box_rows, 64, dtype="bf16")
            fn.max_dynamic_shared_size_bytes = smem = slots * box
            loads = max(4 * slots, int(batch_ms * 1e-3 * 8e12 / (ctas * box)))
            sink = cp.zeros(ctas, cp.uint32)
            args = (tmap, np.int32(box_rows), np.int32(boxes), np.int32(slots), np.int32(loads), np.int32(shared), sink)
            rates[s.name] = _rate(lambda: fn((ctas,), (32,), args, shared_mem=smem), float(ctas) * loads * box,
                                  batch_ms)
            per_cta = boxes // ctas
            last = (b + (loads - 1) * ctas) % boxes if shared else b * per_cta + (loads - 1) % per_cta
            first = (last * box_rows % 65535 + 1).astype(np.uint32)
            if not np.array_equal(sink.get(), first | first << 16):
                raise RuntimeError("the TMA read probe's boxes did not land from the rows its walk names: its "
                                   "bandwidth would be meaningless")
    return read_roof(plan, rates, dev.sms, shared)


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
