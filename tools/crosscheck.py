"""The harness proves itself against Nsight Compute. For the final rungs (10_chip, 10_pdl, 10_overlap, 12_fp8) and the strongest
cuBLAS at N=4096 and 8192, the ratio helpers.timing reports (GPU time, interleaved rounds) must match the ratio of
Nsight Compute's gpu__time_duration for the same two contenders within 3 points. Both are taken in one process
under ncu, so both time the same cuBLASLt algorithm (the fastest candidate of the harness's own rounds): the
harness's rounds run unprofiled, then a batch of each contender inside the NVTX range "timed" is profiled.

Like with like: the harness never flushes a cache between launches, and it queues a contender's launches back to
back over rotating input sets; so ncu runs with `--cache-control none` (by default it flushes every cache before
each profiled kernel, which moved its ratio by about 2 points on the H100) and `--clock-control none` (ncu_rows
passes it: by default ncu locks the SM clock to base), and the profiled launches are the
harness's own batch (as many as it timed per batch, at least 7), queued back to back, inputs rotated as in the
rounds. Every entry records the cache setting and ncu's arguments.

    python3 -m tools.crosscheck [RUNG ...] [N ...]  (GPU host, ncu on PATH; default: the rungs at 4096 and 8192;
                                                     exits 1 on a gap over 3 points or a crosscheck that failed)
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

from helpers import device, results, store
from helpers.ncu import ncu_rows

GAP = 0.03
RUNGS = ("10_chip", "10_pdl", "10_overlap", "12_fp8")
SIZES = (4096, 8192)
CACHE_CONTROL = "none"  # the harness does not flush between launches; ncu's default ("all") flushes before each
TIME, CLOCK = "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second"
# the SM clock each profiled kernel ran at: ncu serialises kernels, so each may run at another clock than in the
# harness's back-to-back rounds, and a ratio of durations then mixes two clocks (recorded as ncu_*_mhz)
# By default ncu locks the SM clock to its base for every profiled kernel, while the harness runs the card as it
# finds it (boost, sagging under the power cap); ncu_rows (helpers.ncu) always passes --clock-control none.
CLOCK_CONTROL = "none"
NCU_ARGS = ["--metrics", f"{TIME},{CLOCK}", "--cache-control", CACHE_CONTROL, "--nvtx", "--nvtx-include", "timed/"]
CHILD = r"""
import json, sys
import cupy as cp
from helpers.timing import bench
from helpers.launch import prepare
lau = prepare(sys.argv[1], int(sys.argv[2]))
b = bench(lau)
best = b.reference or next(name for name, t in b.others.items() if t is b.cublas)
run = b.runs  # the very contenders the harness timed, the same cuBLASLt algorithm included
launches = max(7, b.kernel.batch)  # the harness's batch: launches queued back to back, inputs rotating
for who in ("kernel", best):
    for i in range(3):  # unprofiled warm-up, as the harness warms each contender up
        run[who](i)
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.nvtx.RangePush("timed")
    for i in range(3, 3 + launches):  # no synchronisation between them
        run[who](i)
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.nvtx.RangePop()
print("HARNESS " + json.dumps({"ratio": b.ratio, "best": best, "kernel_ms": b.kernel.ms, "cublas_ms": b.cublas.ms,
                               "kernel_iqr": [b.kernel.q1_ms, b.kernel.q3_ms], "ref": b.cublas_ref,
                               "launches": launches, "batch": b.kernel.batch,
                               "contenders": list(b.others)}))
"""


def crosscheck(rung_id: str, n: int, entry: str) -> dict:
    rows, stdout = ncu_rows(NCU_ARGS, CHILD, rung_id, str(n), timeout=900)
    line = next((x for x in stdout.splitlines() if x.startswith("HARNESS ")), None)
    if line is None:
        raise RuntimeError(f"the child under ncu printed no result:\n{stdout[-3000:]}")
    harness = json.loads(line[len("HARNESS "):])
    launches = harness["launches"]
    ns = [(r["Kernel Name"], float(r["Metric Value"].replace(",", ""))) for r in rows
          if r.get("Metric Name", TIME) == TIME]
    hz = [(r["Kernel Name"], float(r["Metric Value"].replace(",", ""))) for r in rows if r.get("Metric Name") == CLOCK]
    mhz = lambda mine: statistics.median([v / 1e6 for k, v in hz if k.startswith(entry) == mine]) if hz else None  # noqa: E731
    ours = [t for k, t in ns if k.startswith(entry)]
    theirs = [t for k, t in ns if not k.startswith(entry)]
    if len(ours) != launches or not theirs:
        raise RuntimeError(f"expected {launches} launches of {entry} and some cuBLAS kernels in the range, got "
                           f"{len(ours)} and {len(theirs)}: {sorted({k for k, _ in ns})}")
    # cuBLAS may split one call into several kernels: its time per call is the sum over the range / launches.
    ncu_ratio = (sum(theirs) / launches) / statistics.median(ours)
    return {"rung": rung_id, "n": n, "harness_ratio": harness["ratio"], "ncu_ratio": ncu_ratio,
            "gap_points": 100 * (harness["ratio"] - ncu_ratio), "ncu_kernel_ms": statistics.median(ours) / 1e6,
            "ncu_cublas_ms": sum(theirs) / launches / 1e6, "harness_kernel_ms": harness["kernel_ms"],
            "harness_cublas_ms": harness["cublas_ms"], "cublas": harness["ref"], "cublas_contender": harness["best"],
            "cublas_candidates": harness.get("contenders"), "cache_control": CACHE_CONTROL,
            "clock_control": CLOCK_CONTROL,
            "ncu_launches": launches, "ncu_args": " ".join(NCU_ARGS), "ncu_kernel_mhz": mhz(True),
            "ncu_cublas_mhz": mhz(False),
            "cublas_kernels": sorted({k[:60] for k, _ in ns if not k.startswith(entry)})}


def parse_args(argv: list) -> tuple[list, list]:
    """(rungs, sizes) from the command line: numbers are sizes, anything else a rung; each defaults to all."""
    sizes = [int(x) for x in argv if x.isdigit()]
    rungs = [x for x in argv if not x.isdigit()]
    return rungs or list(RUNGS), sizes or list(SIZES)


def main(argv=None) -> int:
    from helpers import rung
    ap = argparse.ArgumentParser(prog="python3 -m tools.crosscheck", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="*", metavar="RUNG or N", help="rungs and sizes (default: every rung of RUNGS, both sizes)")
    rids, sizes = parse_args(ap.parse_args(argv).what)
    dev = device()
    env = dev.env()
    failed = False
    for rid in rids:
        for n in sizes:
            try:
                got = crosscheck(rid, n, rung(rid).entry)
            except Exception as e:  # noqa: BLE001 - one failed crosscheck must not hide the others: say it, go on
                failed = True
                print(f"{rid} N={n}: crosscheck failed: {type(e).__name__}: {e}", flush=True)
                continue
            ok = abs(got["gap_points"]) <= 100 * GAP
            failed |= not ok
            results.record("crosscheck", f"{rid}@{n}", {**got, "ok": ok, "run": store.run_id(), "gpu": dev.name,
                                                        "date": env["date"], "env": env}, results.path_for(dev.slug))
            print(f"{rid} N={n}: harness {got['harness_ratio']:.3f}, ncu {got['ncu_ratio']:.3f} (cache control "
                  f"{CACHE_CONTROL}, {got['ncu_launches']} launches back to back, SM clock {got['ncu_kernel_mhz']} "
                  f"and {got['ncu_cublas_mhz']} MHz), gap {got['gap_points']:+.1f} "
                  f"points -> {'ok' if ok else 'HARNESS BUG'}  ({got['cublas']})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
