"""Every measured number goes through one function, `obtain`: replayed from results/ when this machine cannot
run it, reused when this run already measured it, else measured now and recorded with the run id and environment.

On top of it: a row of the ladder table (`measure`), a ceiling of the machine (`ceiling`), and the chapters'
smaller measurements (grids, demos, timelines, the numba twins).
"""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, fields

from . import results
from .timing import (METHOD, Reading, back_to_back, bench, layout_name, measure_cublas, measure_ffma_peak, measure_hbm_copy,
                    measure_hgmma_peak, measure_hmma_peak, measure_l2_read, measure_tma_l2_curve, measure_tma_l2_read,
                    measure_tma_multicast,
                    sm_clock_under_load)
from .correctness import check
from .formats import FP8
from .gpu import device, why_not_live
from .kernel import kernel, variant
from .launch import prepare, square, validate
from .registry import PROBES, RUNGS, Rung, rung as _rung


class NotRecorded(LookupError):
    """Replay was asked for a measurement that was never recorded."""


_MEMORY: dict = {}  # (section, key) -> entry measured in this process but not written (save=False, or a write failed)


def obtain(section: str, key: str, how, needs_cc: tuple = (8, 0), arch: str = "", save: bool = True,
             blocked: str | None = None) -> tuple[dict, str]:
    """(entry, source). source is "recorded" (replayed: this machine cannot run it, or `blocked` says why it cannot
    be measured here), "this run" (measured earlier in the same run, maybe by another chapter: the same number
    everywhere), or "live" (measured now by `how()`, which returns a dict, then recorded). The results file is
    checked before anything is measured."""
    if blocked and not why_not_live(needs_cc, arch):
        print(f"note: {blocked}; the recorded {section} entry {key} is shown instead.", file=sys.stderr)
    if blocked or why_not_live(needs_cc, arch):
        e = results.load().get(section, {}).get(key)
        if e is None:
            raise NotRecorded(f"{section} {key} was never recorded in {results.path_for()}; measure it on a GPU that "
                              f"can run it.")
        return {k: v for k, v in e.items() if k != "env"}, "recorded"
    dev = device()
    path = results.path_for(dev.slug)
    run = results.run_id()
    kept = _MEMORY.get((section, key))
    if kept and kept.get("run") == run:
        return kept, "this run"
    e = results.load(path).get(section, {}).get(key) if path.exists() else None
    if e and e.get("run") == run:
        return {k: v for k, v in e.items() if k != "env"}, "this run"
    if save:
        results.writable(path)  # refuse now, in one sentence, rather than lose a measurement later
    env = dev.env()
    entry = {**how(), "run": run, "gpu": dev.name, "date": env["date"]}
    _MEMORY[(section, key)] = entry
    if save:
        try:
            results.record(section, key, {**entry, "env": env}, path)
        except (OSError, results.ResultsError) as err:
            print(f"warning: {section} {key} was measured but could not be written to {path} ({err}); it is kept "
                  f"in memory for this session only.", file=sys.stderr)
    return entry, "live"


def recorded_entry(section: str, key: str) -> dict:
    """A recorded measurement (e.g. the ncu counters of ci/bank_conflicts.py), labelled source='recorded'."""
    e = results.load().get(section, {}).get(key)
    if e is None:
        raise NotRecorded(f"{section}/{key} was never recorded in {results.path_for()}; measure it on a GPU that "
                          f"has the feature (ci/gpu.sh).")
    return {**{k: v for k, v in e.items() if k != "env"}, "source": "recorded"}


# ---- a row of the ladder ---------------------------------------------------------------------------------------

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


# ---- the machine's ceilings (chapter 00) -----------------------------------------------------------------------

CEILINGS = {
    # id: (what it is, unit, how to measure it live)
    "hbm_copy": ("HBM copy bandwidth (read + write)", "TB/s", measure_hbm_copy),
    "l2_read": ("L2 read bandwidth through LDG (.cg): the load path of rungs 01-06", "TB/s", measure_l2_read),
    "tma_l2_read": ("L2 -> shared memory through TMA, a 20 MB working set (as l2_read's)", "TB/s", measure_tma_l2_read),
    "tma_l2_gemm": ("L2 -> shared memory through TMA at a GEMM's working set (2.6 MB): the load path of rungs 07 on",
                    "TB/s", measure_tma_l2_curve),
    # The same path multicast to 2-CTA clusters (rung 10's B tile): bytes landed in shared memory, both CTAs counted;
    # L2 supplies half of them (the detail).
    "tma_multicast": ("L2 -> shared memory through TMA multicast to 2-CTA clusters at a GEMM's working set (2.6 MB), "
                      "bytes landed in both CTAs", "TB/s", measure_tma_multicast),
    "ffma_peak": ("FP32 FFMA peak (probe)", "TFLOP/s", measure_ffma_peak),
    "hmma_peak": ("BF16 mma.sync (HMMA) peak (probe)", "TFLOP/s", measure_hmma_peak),
    "hgmma_peak": ("BF16 wgmma (HGMMA) peak, zero operands (probe)", "TFLOP/s", measure_hgmma_peak),
    "hgmma_peak_random": ("BF16 wgmma (HGMMA) peak, random operands, sustained: the power-limited ceiling",
                          "TFLOP/s", lambda: measure_hgmma_peak(random_operands=True)),
    # The shared-memory operand path: the same A bytes per wgmma for a half and a quarter of the FLOP.
    "hgmma_n128_random": ("BF16 wgmma m64n128k16 from shared memory, random operands, sustained", "TFLOP/s",
                          lambda: measure_hgmma_peak(random_operands=True, n=128)),
    "hgmma_n64_random": ("BF16 wgmma m64n64k16 from shared memory, random operands, sustained", "TFLOP/s",
                         lambda: measure_hgmma_peak(random_operands=True, n=64)),
    "qgmma_peak": ("FP8 e4m3 wgmma (QGMMA) peak, zero operands (probe)", "TFLOP/s",
                   lambda: measure_hgmma_peak(dtype="e4m3")),
    "qgmma_peak_random": ("FP8 e4m3 wgmma (QGMMA) peak, random operands, sustained: chapter 12's ceiling", "TFLOP/s",
                          lambda: measure_hgmma_peak(random_operands=True, dtype="e4m3")),
    **{f"cublas_{dt}_{n}": (f"strongest cuBLAS {dt.upper()} at N={n}", "TFLOP/s",
                            (lambda dt=dt, n=n: measure_cublas(dt, n)))
       for dt in ("fp32", "fp16", "bf16") for n in (4096, 8192)},
    "cublas_bf16_8192_back_to_back": ("cupy.matmul BF16 at N=8192, back to back for 1.5 s (power-limited)",
                                      "TFLOP/s", lambda: back_to_back("bf16", 8192)),
    # The clock of that same back-to-back run, not a second 1.5 s of load.
    "sm_clock_bf16_load": ("SM clock under cuBLAS BF16 load", "MHz", lambda: _clock_of("cublas_bf16_8192_back_to_back")),
    "sm_clock_fp32_load": ("SM clock under cuBLAS FP32 load", "MHz", lambda: sm_clock_under_load("fp32")),
}
# Which probe a ceiling needs (for the GPU it can run on); cuBLAS runs anywhere.
_PROBE_OF = {"tma_l2_gemm": "tma_l2_read", "hgmma_peak_random": "hgmma_peak", "qgmma_peak_random": "qgmma_peak", "hgmma_n128_random": "hgmma_n128",
             "hgmma_n64_random": "hgmma_n64"}


@dataclass(frozen=True)
class Ceiling:
    id: str
    label: str
    value: float
    unit: str
    source: str
    gpu: str
    date: str
    sm_clock_mhz: float | None = None
    power_w: float | None = None

    def __str__(self) -> str:
        held = (f", SM clock {self.sm_clock_mhz:,.0f} MHz" if self.sm_clock_mhz and self.unit != "MHz" else "") + \
               (f", {self.power_w:,.0f} W" if self.power_w else "")
        return f"{self.label}: {self.value:,.2f} {self.unit}  [{self.gpu}, {self.date}{held}]"


def _clock_of(cid: str) -> Reading:
    """A clock ceiling read off another ceiling's run (measured once in the run, or reused)."""
    c = ceiling(cid)
    if not c.sm_clock_mhz:
        raise RuntimeError(f"{cid} carries no SM clock (is nvidia-ml-py installed?)")
    return Reading(c.sm_clock_mhz, c.sm_clock_mhz, c.power_w)


def ceiling(cid: str, save: bool = True) -> Ceiling:
    """One of the machine's ceilings, measured once per run (the median of interleaved rounds) and reused by every
    chapter of that run; the recorded value where this machine cannot measure it."""
    label, unit, how = CEILINGS[cid]
    pid = _PROBE_OF.get(cid, cid)
    needs = next((p.needs_cc for p in PROBES if p.id == pid), (8, 0))

    def measure_it() -> dict:
        got = how()
        got = got if isinstance(got, Reading) else Reading(float(got))
        return {"label": label, "value": got.value, "unit": unit, "sm_clock_mhz": got.sm_clock_mhz,
                "power_w": got.power_w, "iqr": list(got.iqr) if got.iqr else None,
                **({"detail": got.detail} if got.detail else {})}

    e, source = obtain("ceilings", cid, measure_it, needs, "sm_90a" if needs >= (9, 0) else "", save)
    return Ceiling(cid, label, e["value"], unit, source, e["gpu"], e["date"], e.get("sm_clock_mhz"), e.get("power_w"))


def recorded_ceilings() -> dict[str, Ceiling]:
    """All ceilings from the results file, labelled as recorded."""
    data = results.load()["ceilings"]
    return {cid: Ceiling(cid, CEILINGS[cid][0] if cid in CEILINGS else e.get("label", cid), e["value"],
                         e["unit"], "recorded", e["gpu"], e["date"], e.get("sm_clock_mhz"), e.get("power_w"))
            for cid, e in data.items()}


# ---- smaller measurements the chapters show --------------------------------------------------------------------

def _labelled(entry: dict, source: str) -> dict:
    return {**entry, "source": source}


def persistent_grid(rung_id: str, save: bool = True) -> dict:
    """How many clusters (and blocks) a persistent rung launches: the driver's count of clusters that fit on the
    chip at once."""
    r = _rung(rung_id)

    def how() -> dict:
        kern = kernel(r)
        cluster = kern.consts.get("CLUSTER", 1)
        clusters = kern.resident_clusters()
        return {"rung": r.id, "cluster": cluster, "clusters": clusters, "blocks": clusters * cluster,
                "sms": device().sms}
    return _labelled(*obtain("grids", r.id, how, r.needs_cc, r.arch, save))


def demo_check(rung_id: str, label: str, config: dict, m: int, n: int, k: int, save: bool = True) -> dict:
    """check() of a deliberately changed variant (e.g. a wrong swizzle mode)."""
    r = _rung(rung_id)

    def how() -> dict:
        res = check(r, m, n, k, source=variant(r, config).source)
        return {"rung": r.id, "change": config, "shape": [m, n, k], "rel_err": res.rel_err,
                "all_finite": res.all_finite, "passed": res.ok, "verdict": str(res)}
    return _labelled(*obtain("demos", f"{r.id}:{label}", how, r.needs_cc, r.arch, save))


def demo_fault(rung_id: str, label: str, config: dict, m: int, n: int, k: int, save: bool = True) -> dict:
    """Run a variant that is expected to trap in a child process (a trap ends that process's CUDA context) and
    keep the one-sentence explanation check() gives."""
    import json
    import subprocess
    r = _rung(rung_id)
    script = ("import json, sys, time\nfrom helpers import check, rung\nfrom helpers.compiler import apply_config\n"
              "from helpers.kernel import KernelFault\nr = rung(sys.argv[1])\n"
              "src = apply_config(r.path.read_text(), json.loads(sys.argv[2]))\nt0 = time.time()\n"
              "try:\n    out = str(check(r, *map(int, sys.argv[3:6]), source=src))\n"
              "except KernelFault as e:\n    out = str(e)\n"
              "print(json.dumps({'message': out, 'seconds': round(time.time() - t0, 1)}))\n")

    def how() -> dict:
        proc = subprocess.run([sys.executable, "-c", script, r.id, json.dumps(config), str(m), str(n), str(k)],
                              capture_output=True, text=True, timeout=120)
        got = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {
            "message": f"the child process ended with {proc.returncode}: {proc.stderr[-500:]}", "seconds": None}
        return {"rung": r.id, "change": config, "shape": [m, n, k], **got}
    return _labelled(*obtain("demos", f"{r.id}:{label}", how, r.needs_cc, r.arch, save))


def timing_demo(n: int = 2048, save: bool = True) -> dict:
    """What the method takes out of a number: cupy.matmul at N x N x N (bf16) timed three ways. With CUDA events
    around one call on an idle GPU (the host's queueing lands between the events); with the method (GPU time
    only); and against itself (the A/A ratio, which must be 1). Plus the host's own time to queue one call."""
    def how() -> dict:
        import statistics as st

        import cupy as cp

        from .timing import time_gpu
        from .launch import random_inputs
        a, b = random_inputs("bf16", n, n, n)
        out = cp.empty((n, n), a.dtype)
        mm = lambda i: cp.matmul(a, b, out=out)  # noqa: E731
        got = time_gpu({"A": mm, "B": mm}, 2.0 * n**3)
        idle = []
        for _ in range(15):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            cp.cuda.runtime.deviceSynchronize()
            start.record()
            mm(0)
            stop.record()
            stop.synchronize()
            idle.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
        t = got["A"]
        return {"n": n, "gpu_us": t.ms * 1e3, "iqr_us": [t.q1_ms * 1e3, t.q3_ms * 1e3], "host_us": t.host_us,
                "idle_start_us": st.median(idle), "aa_ratio": got["A"].ms / got["B"].ms, "batch": t.batch,
                "rounds": t.rounds}
    return _labelled(*obtain("demos", f"timing@{n}", how, save=save))


def accumulator(r: Rung | str, save: bool = True) -> dict:
    """How many binades below the largest term the rung's tensor-core sum keeps (helpers.fp8.probe_accumulator),
    measured once per run on the rung's own kernel."""
    r = _rung(r) if isinstance(r, str) else r

    def how() -> dict:
        from .fp8 import probe_accumulator
        return {"rung": r.id, "placements": probe_accumulator(r.id)}
    from .fp8 import PROBE_PLACEMENTS
    got = _labelled(*obtain("accumulator", r.id, how, r.needs_cc, r.arch, save))
    # the results file is written with sorted keys: put the placements back in the probe's own order
    got["placements"] = {k: got["placements"][k] for k in PROBE_PLACEMENTS if k in got["placements"]}
    return got


def sustained(r: Rung | str, n: int, save: bool = True) -> dict:
    """The rung and the strongest cuBLAS (the winner of the interleaved rounds) each held back to back, the
    power-limited regime of a long run: TFLOP/s, SM clock, board power and picojoules per FLOP of both.

    Back to back there is no spin kernel to hide the host: a contender whose host time to queue one call is not
    well below its GPU time per call starves the GPU, and its rate is then the host's, not the GPU's. `host_bound`
    names such contenders (their host time is at least 80% of their GPU time); a ratio with one of them in it is
    no GPU-time comparison."""
    r = _rung(r) if isinstance(r, str) else r

    def how() -> dict:
        from .timing import time_sustained
        lau = prepare(r, n)
        b = bench(lau)
        best = next(name for name, t in b.others.items() if t is b.cublas)
        got = time_sustained({"kernel": b.runs["kernel"], best: b.runs[best]}, lau.flops)
        k, c = got["kernel"], got[best]
        pj = lambda t: t.power_w / t.tflops if t.power_w else None  # noqa: E731 - W per TFLOP/s is pJ per FLOP
        return {"rung": r.id, "n": n, "tflops": k.tflops, "cublas_tflops": c.tflops, "ratio": k.tflops / c.tflops,
                "cublas_ref": b.cublas_ref, "burst_ratio": b.ratio, "sm_clock_mhz": k.sm_clock_mhz,
                "power_w": k.power_w, "pj_per_flop": pj(k), "cublas_sm_clock_mhz": c.sm_clock_mhz,
                "cublas_power_w": c.power_w, "cublas_pj_per_flop": pj(c), "rounds": k.rounds,
                "tflops_iqr": list(k.tflops_iqr), "cublas_iqr": list(c.tflops_iqr),
                "host_us": b.kernel.host_us, "cublas_host_us": b.cublas.host_us,
                "gpu_us": b.kernel.ms * 1e3, "cublas_gpu_us": b.cublas.ms * 1e3}
    e = _labelled(*obtain("sustained", f"{r.id}@{n}", how, r.needs_cc, r.arch, save, untimable(r)))
    if e.get("cublas_gpu_us") is None:  # recorded before these were kept: the same run's ladder row has them
        row = measure(r, n)
        e.update(host_us=row.host_us, cublas_host_us=row.cublas_host_us, gpu_us=2e6 * n**3 / (row.tflops * 1e12),
                 cublas_gpu_us=2e6 * n**3 / (row.cublas_tflops * 1e12), host_from=f"gemm row of run {row.run}")
    # GPU time per call in bursts (behind a spin: the GPU's own time) against the host's time to queue one call
    e["host_bound"] = [who for who, host, gpu in (("rung", e["host_us"], e["gpu_us"]),
                                                  ("cuBLAS", e["cublas_host_us"], e["cublas_gpu_us"]))
                       if host is not None and host >= 0.8 * gpu]
    return e
