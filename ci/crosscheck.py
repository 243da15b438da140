"""The harness proves itself against Nsight Compute. For the final rung and the strongest cuBLAS at N=4096 and
8192, the ratio helpers.timing reports (GPU time, interleaved rounds) must match the ratio of Nsight Compute's
gpu__time_duration for the same two contenders within 3 points. Both are taken in one process under ncu, so both
time the same autotuned cuBLASLt algorithm: the harness's rounds run unprofiled, then seven launches of each
contender inside the NVTX range "timed" are profiled.

    python ci/crosscheck.py [RUNG] [N ...]     (GPU host, ncu on PATH; exits 1 on a gap over 3 points)
"""
import json
import statistics
import sys

from bank_conflicts import ncu_rows  # ci/ is on sys.path when this runs as `python ci/crosscheck.py`
from helpers import device, results

GAP = 0.03
CHILD = r"""
import json, sys
import cupy as cp
from helpers.timing import bench
from helpers.launch import prepare
lau = prepare(sys.argv[1], int(sys.argv[2]))
b = bench(lau)
best = next(name for name, t in b.others.items() if t is b.cublas)
run = b.runs  # the very contenders the harness timed, the same autotuned algorithm included
for who in ("kernel", best):
    for i in range(3):
        run[who](i)
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.nvtx.RangePush("timed")
    for i in range(7):
        run[who](i)
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.nvtx.RangePop()
print("HARNESS " + json.dumps({"ratio": b.ratio, "best": best, "kernel_ms": b.kernel.ms, "cublas_ms": b.cublas.ms,
                               "kernel_iqr": [b.kernel.q1_ms, b.kernel.q3_ms], "ref": b.cublas_ref}))
"""


def crosscheck(rung_id: str, n: int, entry: str) -> dict:
    rows, stdout = ncu_rows(["--metrics", "gpu__time_duration.sum", "--nvtx", "--nvtx-include", "timed/"], CHILD,
                            rung_id, str(n), timeout=900)
    line = next((x for x in stdout.splitlines() if x.startswith("HARNESS ")), None)
    if line is None:
        raise RuntimeError(f"the child under ncu printed no result:\n{stdout[-3000:]}")
    harness = json.loads(line[len("HARNESS "):])
    ns = [(r["Kernel Name"], float(r["Metric Value"].replace(",", ""))) for r in rows]
    ours = [t for k, t in ns if k.startswith(entry)]
    theirs = [t for k, t in ns if not k.startswith(entry)]
    if len(ours) != 7 or not theirs:
        raise RuntimeError(f"expected 7 launches of {entry} and some cuBLAS kernels in the range, got "
                           f"{len(ours)} and {len(theirs)}: {sorted({k for k, _ in ns})}")
    # cuBLAS may split one call into several kernels: its time per call is the sum over the range / 7.
    ncu_ratio = (sum(theirs) / 7) / statistics.median(ours)
    return {"rung": rung_id, "n": n, "harness_ratio": harness["ratio"], "ncu_ratio": ncu_ratio,
            "gap_points": 100 * (harness["ratio"] - ncu_ratio), "ncu_kernel_ms": statistics.median(ours) / 1e6,
            "ncu_cublas_ms": sum(theirs) / 7 / 1e6, "harness_kernel_ms": harness["kernel_ms"],
            "harness_cublas_ms": harness["cublas_ms"], "cublas": harness["ref"],
            "cublas_kernels": sorted({k[:60] for k, _ in ns if not k.startswith(entry)})}


if __name__ == "__main__":
    from helpers import rung
    rid = sys.argv[1] if len(sys.argv) > 1 else "10_beyond_cublas"
    sizes = [int(x) for x in sys.argv[2:]] or [4096, 8192]
    dev = device()
    env = dev.env()
    failed = False
    for n in sizes:
        got = crosscheck(rid, n, rung(rid).entry)
        ok = abs(got["gap_points"]) <= 100 * GAP
        failed |= not ok
        results.record("crosscheck", f"{rid}@{n}", {**got, "ok": ok, "run": results.run_id(), "gpu": dev.name,
                                                    "date": env["date"], "env": env}, results.path_for(dev.slug))
        print(f"{rid} N={n}: harness {got['harness_ratio']:.3f}, ncu {got['ncu_ratio']:.3f}, gap "
              f"{got['gap_points']:+.1f} points -> {'ok' if ok else 'HARNESS BUG'}  ({got['cublas']})", flush=True)
    sys.exit(1 if failed else 0)
