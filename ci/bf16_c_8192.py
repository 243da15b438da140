"""Why 10_bf16_c ties rung 09 at N = 8192 in run 2026-11-26T18:01Z-h100 (issue "ladder"), an experiment outside the
book's run; results/bf16_c_8192.json keeps its output.

    python ci/bf16_c_8192.py profiles   three Nsight Compute profiles each of 09_setmaxnreg and 10_bf16_c at 8192:
                                        DRAM bytes read, L2 hit rate, duration and clock of each launch
    python ci/bf16_c_8192.py time       10_bf16_c beside 10_persistent (both bf16 C) in three sets of rounds

Why: in the run, 10_bf16_c's rounds spread over 690.8-706.3 TFLOP/s at 8192, and both of its profiled launches read
about half again as much from DRAM as rung 09 (3.20 and 3.51 GB against 2.31), where run 13:27Z had them level. If
the DRAM bytes move from launch to launch, the one-block-per-tile launch (the hardware picks the order tiles run in) is
the likely cause, and persistence (the kernel's own order) takes it away.
"""
import os
import sys

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/bf16_c_8192_scratch.json")  # nothing here belongs to the run

from helpers.launch import prepare  # noqa: E402
from helpers.profile import collect  # noqa: E402
from helpers.registry import ROOT, rung  # noqa: E402
from helpers.results import record_part  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

RECORD = ROOT / "results" / "bf16_c_8192.json"
N, REPEATS = 8192, 3
KEEP = ("duration_us", "sm_clock_mhz", "dram_read_bytes", "dram_write_bytes", "l2_hit_pct", "tensor_active_pct",
        "l2_tbps")


def profiles() -> dict:
    out = {}
    for rid in ("09_setmaxnreg", "10_bf16_c"):
        out[rid] = []
        for i in range(REPEATS):
            e = collect(rung(rid), N)
            out[rid].append({k: e.get(k) for k in KEEP})
            print(f"{rid} launch {i}: {e['dram_read_bytes'] / 1e9:.2f} GB read, L2 hit {e.get('l2_hit_pct')}, "
                  f"{e['duration_us']:.1f} us at {e['sm_clock_mhz']:.0f} MHz", flush=True)
    return out


def time_sets() -> list:
    sets = []
    for i in range(REPEATS):
        row = bench_launches({rid: prepare(rid, N, N, N) for rid in ("10_bf16_c", "10_persistent")})
        sets.append(row)
        print(f"set {i}: " + "  ".join(f"{rid} {row[rid]['tflops']:.1f} (IQR {row[rid]['iqr'][0]:.1f}-"
                                       f"{row[rid]['iqr'][1]:.1f})" for rid in ("10_bf16_c", "10_persistent")),
              flush=True)
    return sets


if __name__ == "__main__":
    what = sys.argv[1:] or ["profiles", "time"]
    if "profiles" in what:
        record_part(RECORD, "profiles", profiles())
    if "time" in what:
        record_part(RECORD, "time", time_sets())
