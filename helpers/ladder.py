"""One row of the ladder table: check + bench + record when live, the recorded row when replaying."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from . import results
from .bench import (bench, cublas_tflops, measure_ffma_peak, measure_hbm_copy, measure_hgmma_peak, measure_hmma_peak,
                    measure_l2_read, sm_clock_under_load)
from .check import check
from .gpu import device, why_not_live
from .registry import PROBES, RUNGS, Rung, rung as _rung


class NotRecorded(LookupError):
    """Replay was asked for a measurement that was never recorded."""


@dataclass(frozen=True)
class Row:
    rung: str
    m: int
    n: int
    k: int
    dtype: str
    tflops: float
    cublas_tflops: float
    ratio: float          # a fraction: 0.87 means 87% of cuBLAS
    correct: bool
    rel_err: float
    source: str           # "live" (measured in this process) or "recorded"
    gpu: str
    date: str

    def json(self) -> dict:
        return asdict(self)


def measure(r: Rung | str, m: int, n: int | None = None, k: int | None = None, save: bool = True,
            section: str = "gemm") -> Row:
    """Live: check on fresh data, time against cuBLAS, record. Replay: the recorded row, labelled so.
    `section` keeps a study's rows (chapter 11's sweep) apart from the rows the rung's own chapter recorded."""
    r = _rung(r) if isinstance(r, str) else r
    n, k = n or m, k or m
    if why_not_live(r.needs_cc, r.arch):
        return replay(r, m, n, k, section)
    dev = device()
    ok = check(r, m, n, k)
    b = bench(r, m, n, k)
    env = dev.env()
    row = Row(r.id, m, n, k, r.dtype, b.kernel.tflops, b.cublas.tflops, b.ratio, ok.ok, ok.rel_err,
              "live", dev.name, env["date"])
    if save:
        entry = {**row.json(), "ms": b.kernel.ms, "cublas_ms": b.cublas.ms, "launches": b.kernel.launches,
                 "input_sets": b.input_sets, "env": env}
        entry.pop("source")
        results.record(section, results.gemm_key(r.id, m, n, k), entry, results.path_for(dev.slug))
    return row


def replay(r: Rung | str, m: int, n: int | None = None, k: int | None = None, section: str = "gemm") -> Row:
    r = _rung(r) if isinstance(r, str) else r
    n, k = n or m, k or m
    e = results.recorded_gemm(r.id, m, n, k, section=section)
    if e is None:
        where = "" if section == "gemm" else f" (section {section})"
        raise NotRecorded(f"{r.id} at {m}x{n}x{k} was never recorded in {results.path_for()}{where}; "
                          f"run it on a GPU to measure it.")
    return Row(r.id, m, n, k, e["dtype"], e["tflops"], e["cublas_tflops"], e["ratio"], e["correct"],
               e["rel_err"], "recorded", e["gpu"], e["date"])


CEILINGS = {
    # id: (what it is, unit, how to measure it live)
    "hbm_copy": ("HBM copy bandwidth (read + write)", "TB/s", measure_hbm_copy),
    "l2_read": ("L2 read bandwidth", "TB/s", measure_l2_read),
    "ffma_peak": ("FP32 FFMA peak (probe)", "TFLOP/s", measure_ffma_peak),
    "hmma_peak": ("BF16 mma.sync (HMMA) peak (probe)", "TFLOP/s", measure_hmma_peak),
    "hgmma_peak": ("BF16 wgmma (HGMMA) peak (probe)", "TFLOP/s", measure_hgmma_peak),
    **{f"cublas_{dt}_{n}": (f"cuBLAS {dt.upper()} at N={n}", "TFLOP/s",
                            (lambda dt=dt, n=n: cublas_tflops(dt, n).tflops))
       for dt in ("fp32", "fp16", "bf16") for n in (4096, 8192)},
    "sm_clock_bf16_load": ("SM clock under cuBLAS BF16 load", "MHz", lambda: sm_clock_under_load("bf16")),
    "sm_clock_fp32_load": ("SM clock under cuBLAS FP32 load", "MHz", lambda: sm_clock_under_load("fp32")),
}


@dataclass(frozen=True)
class Ceiling:
    id: str
    label: str
    value: float
    unit: str
    source: str
    gpu: str
    date: str

    def __str__(self) -> str:
        how = "measured live" if self.source == "live" else "recorded"
        where = f"{how} on {self.gpu}, {self.date}"
        return f"{self.label}: {self.value:,.2f} {self.unit}  [{where}]"


def ceiling(cid: str, save: bool = True) -> Ceiling:
    """One of the machine's ceilings: measured now when live (and recorded), else the recorded value."""
    label, unit, how = CEILINGS[cid]
    needs = next((p.needs_cc for p in PROBES if p.id == cid), (8, 0))  # a probe knows what it needs; cuBLAS runs anywhere
    if why_not_live(needs, "sm_90a" if needs >= (9, 0) else "") is None:
        dev = device()
        env = dev.env()
        c = Ceiling(cid, label, float(how()), unit, "live", dev.name, env["date"])
        if save:
            results.record("ceilings", cid, {"label": label, "value": c.value, "unit": unit, "gpu": dev.name,
                                             "date": c.date, "env": env}, results.path_for(dev.slug))
        return c
    e = results.recorded_ceiling(cid)
    if e is None:
        raise NotRecorded(f"ceiling {cid} was never recorded in {results.path_for()}; measure it on a GPU.")
    return Ceiling(cid, label, e["value"], unit, "recorded", e["gpu"], e["date"])


def recorded_entry(section: str, key: str) -> dict:
    """A recorded measurement (e.g. the ncu counters of ci/bank_conflicts.py), labelled source='recorded'."""
    e = results.load().get(section, {}).get(key)
    if e is None:
        raise NotRecorded(f"{section}/{key} was never recorded in {results.path_for()}; measure it on a GPU that "
                          f"has the feature (ci/gpu.sh).")
    return {**{k: v for k, v in e.items() if k != "env"}, "source": "recorded"}


def record_live(section: str, key: str, entry: dict, save: bool = True) -> dict:
    """Stamp a live measurement with the GPU and date, record it (with the environment), label it live."""
    dev = device()
    env = dev.env()
    entry = {**entry, "gpu": dev.name, "date": env["date"]}
    if save:
        results.record(section, key, {**entry, "env": env}, results.path_for(dev.slug))
    return {**entry, "source": "live"}


def recorded_ceilings() -> dict[str, Ceiling]:
    """All ceilings from the results file, labelled as recorded."""
    data = results.load()["ceilings"]
    return {cid: Ceiling(cid, CEILINGS[cid][0] if cid in CEILINGS else e.get("label", cid), e["value"],
                         e["unit"], "recorded", e["gpu"], e["date"]) for cid, e in data.items()}


def rows(rung_ids=None, sizes=(4096,), progress=None) -> list[Row]:
    """measure() over rungs x sizes, calling progress(i, total, label) before each one."""
    chosen = [_rung(x) for x in rung_ids] if rung_ids else list(RUNGS)
    todo = [(r, n) for n in sizes for r in chosen]
    out = []
    for i, (r, n) in enumerate(todo):
        if progress:
            progress(i, len(todo), f"{r.id} N={n}")
        out.append(measure(r, n))
    if progress:
        progress(len(todo), len(todo), "done")
    return out


def persistent_grid(rung_id: str, save: bool = True) -> dict:
    """How many clusters (and blocks) a persistent rung launches: the driver's count of clusters that fit on the
    chip at once, live (and recorded), or as recorded."""
    from .check import resident_clusters
    from .build import build
    r = _rung(rung_id)
    if why_not_live(r.needs_cc, r.arch):
        return recorded_entry("grids", r.id)
    dev = device()
    cluster = build(r).consts.get("CLUSTER", 1)
    clusters = resident_clusters(r)
    return record_live("grids", r.id, {"rung": r.id, "cluster": cluster, "clusters": clusters,
                                       "blocks": clusters * cluster, "sms": dev.sms}, save)


def demo_check(rung_id: str, label: str, config: dict, m: int, n: int, k: int, save: bool = True) -> dict:
    """check() of a deliberately changed variant (e.g. a wrong swizzle mode), live and recorded, or replayed."""
    from .build import apply_config
    from .check import check as _check
    r = _rung(rung_id)
    key = f"{r.id}:{label}"
    if why_not_live(r.needs_cc, r.arch):
        return recorded_entry("demos", key)
    res = _check(r, m, n, k, source=apply_config(r.path.read_text(), config))
    return record_live("demos", key, {"rung": r.id, "change": config, "shape": [m, n, k], "rel_err": res.rel_err,
                                      "all_finite": res.all_finite, "passed": res.ok, "verdict": str(res)}, save)


def demo_fault(rung_id: str, label: str, config: dict, m: int, n: int, k: int, save: bool = True) -> dict:
    """Run a variant that is expected to trap in a child process (a trap ends that process's CUDA context) and
    keep the one-sentence explanation check() gives; recorded, or replayed."""
    import json
    import subprocess
    import sys
    r = _rung(rung_id)
    key = f"{r.id}:{label}"
    if why_not_live(r.needs_cc, r.arch):
        return recorded_entry("demos", key)
    script = ("import json, sys, time\nfrom helpers import check, rung\nfrom helpers.build import apply_config\n"
              "from helpers.check import KernelFault\nr = rung(sys.argv[1])\n"
              "src = apply_config(r.path.read_text(), json.loads(sys.argv[2]))\nt0 = time.time()\n"
              "try:\n    out = str(check(r, *map(int, sys.argv[3:6]), source=src))\n"
              "except KernelFault as e:\n    out = str(e)\n"
              "print(json.dumps({'message': out, 'seconds': round(time.time() - t0, 1)}))\n")
    proc = subprocess.run([sys.executable, "-c", script, r.id, json.dumps(config), str(m), str(n), str(k)],
                          capture_output=True, text=True, timeout=120)
    got = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {
        "message": f"the child process ended with {proc.returncode}: {proc.stderr[-500:]}", "seconds": None}
    return record_live("demos", key, {"rung": r.id, "change": config, "shape": [m, n, k], **got}, save)
