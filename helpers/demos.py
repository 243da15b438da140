"""The chapters' one-off measurements, each measured once per run through the run store and recorded (or
replayed): how many clusters a persistent rung launches, a deliberately broken variant checked (and one that
traps), what the timing method takes out of a number, the FP8 accumulator's width, and rungs held back to back.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

from .correctness import check
from .csource import apply_config
from .gpu import device
from .kernel import KernelFault, kernel, variant
from .ladder import measure, untimable
from .launch import prepare, random_inputs
from .registry import Rung, rung as _rung
from .store import labelled, obtain
from .timing import bench, time_gpu, time_sustained


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
    return labelled(*obtain("grids", r.id, how, r.needs_cc, r.arch, save))


def demo_check(rung_id: str, label: str, config: dict, m: int, n: int, k: int, save: bool = True) -> dict:
    """check() of a deliberately changed variant (e.g. a wrong swizzle mode)."""
    r = _rung(rung_id)

    def how() -> dict:
        res = check(r, m, n, k, source=variant(r, config).source)
        return {"rung": r.id, "change": config, "shape": [m, n, k], "rel_err": res.rel_err,
                "all_finite": res.all_finite, "passed": res.ok, "verdict": str(res)}
    return labelled(*obtain("demos", f"{r.id}:{label}", how, r.needs_cc, r.arch, save))


# What a reader is told wherever a variant ran in a child process (demo_fault here, the playground's runs): the
# fault, hang or crash ended that process, not the notebook's. One wording, so the chapters and the playground agree.
IN_CHILD = ("The variant ran in a child process: this notebook's Python kernel and its GPU context are unaffected, so "
            "nothing needs restarting.")
_IN_PROCESS = " This process's CUDA context is now unusable"  # how helpers.kernel.faults_explained's advice begins


def in_child(message: str) -> str:
    """A KernelFault's sentence as the notebook should read it when the variant ran in a child process: the advice
    to restart the Python kernel (right in the process that faulted, wrong in the notebook) becomes IN_CHILD. A
    message without that advice (a check verdict: nothing trapped) is returned as it is."""
    head, advice, _ = message.partition(_IN_PROCESS)
    return f"{head} {IN_CHILD}" if advice else message


def demo_fault(rung_id: str, label: str, config: dict, m: int, n: int, k: int, save: bool = True) -> dict:
    """Run a variant that is expected to trap in a child process (a trap ends that process's CUDA context) and
    keep the one-sentence explanation check() gives, told as the notebook sees it (in_child): recorded entries
    kept the child's own advice to restart, so the sentence is retold when read, live or replayed."""
    r = _rung(rung_id)

    def how() -> dict:
        proc = subprocess.run([sys.executable, "-c", "from helpers.demos import fault_child; fault_child()", r.id,
                               json.dumps(config), str(m), str(n), str(k)], capture_output=True, text=True, timeout=120)
        got = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {
            "message": f"the child process ended with {proc.returncode}: {proc.stderr[-500:]} {IN_CHILD}",
            "seconds": None}
        return {"rung": r.id, "change": config, "shape": [m, n, k], **got}
    got = labelled(*obtain("demos", f"{r.id}:{label}", how, r.needs_cc, r.arch, save))
    return {**got, "message": in_child(got["message"])}


def fault_child() -> None:
    """demo_fault's child process: check the variant (argv: rung id, constexpr overrides as JSON, M, N, K) and print
    what check() said, or the KernelFault's sentence, as one line of JSON."""
    rung_id, config, *shape = sys.argv[1:6]
    r = _rung(rung_id)
    src = apply_config(r.path.read_text(), json.loads(config))
    t0 = time.time()
    try:
        out = str(check(r, *map(int, shape), source=src))
    except KernelFault as e:
        out = str(e)
    print(json.dumps({"message": out, "seconds": round(time.time() - t0, 1)}))


def timing_demo(n: int = 2048, save: bool = True) -> dict:
    """What the method takes out of a number: cupy.matmul at N x N x N (bf16) timed three ways. With CUDA events
    around one call on an idle GPU (the host's queueing lands between the events); with the method (GPU time
    only); and against itself (the A/A ratio, which must be 1). Plus the host's own time to queue one call."""
    def how() -> dict:
        import statistics as st

        import cupy as cp

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
    return labelled(*obtain("demos", f"timing@{n}", how, save=save))


def accumulator(r: Rung | str, save: bool = True) -> dict:
    """How many binades below the largest term the rung's tensor-core sum keeps (helpers.fp8.probe_accumulator),
    measured once per run on the rung's own kernel."""
    r = _rung(r) if isinstance(r, str) else r

    def how() -> dict:
        from .fp8 import probe_accumulator
        return {"rung": r.id, "placements": probe_accumulator(r.id)}
    from .fp8 import PROBE_PLACEMENTS
    got = labelled(*obtain("accumulator", r.id, how, r.needs_cc, r.arch, save))
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
    e = labelled(*obtain("sustained", f"{r.id}@{n}", how, r.needs_cc, r.arch, save, untimable(r)))
    if e.get("cublas_gpu_us") is None:  # recorded before these were kept: the same run's ladder row has them
        row = measure(r, n)
        e.update(host_us=row.host_us, cublas_host_us=row.cublas_host_us, gpu_us=2e6 * n**3 / (row.tflops * 1e12),
                 cublas_gpu_us=2e6 * n**3 / (row.cublas_tflops * 1e12), host_from=f"gemm row of run {row.run}")
    # GPU time per call in bursts (behind a spin: the GPU's own time) against the host's time to queue one call
    e["host_bound"] = [who for who, host, gpu in (("rung", e["host_us"], e["gpu_us"]),
                                                  ("cuBLAS", e["cublas_host_us"], e["cublas_gpu_us"]))
                       if host is not None and host >= 0.8 * gpu]
    return e
