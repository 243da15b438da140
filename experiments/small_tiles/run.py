"""One consumer warpgroup and 64-row tiles at small N (issue "ahead", item 4), an experiment outside the book's run;
its output goes to experiments/small_tiles/record.json.

    python3 -m experiments.small_tiles.run check     correctness of the builds below at three shapes
    python3 -m experiments.small_tiles.run time      the builds, rung 10 as it launches and cuBLAS, in the same rounds

Why: at N = 1024 rung 10 launches 64 CTAs of 128 x 128 (clusters of one), so 68 SMs idle, and cuBLAS's winner there
is a 64 x 128 tile in 2 x 1 clusters (the label of the book's run). Chapter 10's file makes 64-row tiles with one
consumer warpgroup (CONSUMERS = 1, BM = 64), no patch needed: 128 CTAs of 64 x 128 at N = 1024.
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/small_tiles_scratch.json")  # nothing here belongs to the run

from helpers import check, device  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from .build import BASE, BUILDS, build_source  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
SHAPES = ((1024,) * 3, (1024, 1024, 4096), (2048,) * 3, (6144,) * 3)
CHECKS = ((1024, 1024, 1024), (256, 512, 192), (2304, 2048, 128))


def run_checks() -> bool:
    ok = True
    for name in BUILDS:
        for shape in CHECKS:
            got = check(BASE, *shape, source=build_source(name))
            print(f"{name}: {got}", flush=True)
            ok &= bool(got.ok)
    return ok


def time_shape(m: int, n: int, k: int) -> dict:
    launches = {"rung 10": prepare("10_chip", m, n, k)}
    launches.update({x: prepare(BASE, m, n, k, source=build_source(x)) for x in BUILDS})
    row = bench_launches(launches)
    print(f"{m}x{n}x{k}: " + "  ".join(f"{x} {row[x]['us']:.2f} us ({row[x]['ratio']:.3f}, grid {row[x]['grid']})"
                                       for x in launches) + f"  cuBLAS {row['cublas_best']['us']:.2f} us", flush=True)
    return row


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "time"]
    if "check" in what and not run_checks():
        sys.exit("a 64-row build computed a wrong C")
    if "time" in what:
        RECORD.write_text(json.dumps({"time": [time_shape(*s) for s in SHAPES], "env": device().env()}, indent=1)
                          + "\n")
