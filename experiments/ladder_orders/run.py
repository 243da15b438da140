"""Chapter 10's steps as a lattice (issue "ladder"): every combination of its five switches, timed in the same
interleaved rounds at N = 4096 and 8192, so that any order of the steps can be read off one measurement. An
experiment outside the book's run; its output goes to
experiments/ladder_orders/record.json.

    python3 -m experiments.ladder_orders.run check    the 32 builds at two small shapes
    python3 -m experiments.ladder_orders.run time
        the 32 builds and cuBLAS at N = 4096 and 8192, then every order of the steps

The switches, from 10_bf16_c_per_tile (rung 09's kernel writing bf16 C, one block per tile) to 10_grouped_order (rung 10
with its 128 x 256 tile, which is what rung 10 launches at these two sizes):
  P  persistent: one CTA per SM walks the tiles (the launch's grid; off: one block per tile, grid "tile_list")
  C  CLUSTER = 2: pairs along M share B by multicast
  S  SCHEDULE = 1: the grouped tile order
  E  EPILOGUE = 2: the TMA store, written with stmatrix (off: 8-byte paired stores from registers)
  F  STAGES = 4 (off: 3, as rungs 07 to 09)
The book's main path took P, then C and S together, then E, then F, when this ran; it now takes P, bf16 C
(every build here writes bf16 C), then C and F together, then E, then S. An order rises at a size when each step's
lower quartile lies above the upper quartile of the build before it, the rule of chapter 11's step table.
"""
import itertools
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GEMM_LADDER_RESULTS", "/tmp/ladder_orders_scratch.json")  # nothing here belongs to the run

from helpers import check, device  # noqa: E402
from helpers.launch import prepare  # noqa: E402
from helpers.timing import bench_launches  # noqa: E402

from .build import BUILDS, FLAGS, build, name  # noqa: E402

RECORD = Path(__file__).with_name("record.json")
SIZES = (4096, 8192)


def run_checks() -> bool:
    ok = True
    for on in BUILDS:
        r, src = build(on)
        for shape in ((512, 512, 256), (2304, 2048, 128)):
            got = check(r, *shape, source=src)
            ok &= bool(got.ok)
            if not got.ok:
                print(name(on), got, flush=True)
    print(f"{len(BUILDS)} builds x 2 shapes: {'all correct' if ok else 'WRONG'}", flush=True)
    return ok


def time_size(n: int) -> dict:
    launches = {}
    for on in BUILDS:
        r, src = build(on)
        launches[name(on)] = prepare(r, n, n, n, source=src)
    row = bench_launches(launches)
    print(f"N = {n}: " + ", ".join(f"{x} {row[x]['tflops']:.1f}" for x in launches)
          + f"; cuBLAS {row['cublas_best']['tflops']:.1f}", flush=True)
    return row


def orders(rows: dict) -> list[dict]:
    """Every order of the five switches: the factor and whether each step rises at each size."""
    out = []
    for perm in itertools.permutations(FLAGS):
        steps, on = [], ""
        for flag in perm:
            a, b = name(on), name(on + flag)
            on += flag
            steps.append({"flag": flag, **{str(n): {"factor": rows[n][b]["tflops"] / rows[n][a]["tflops"],
                                                   "rises": rows[n][b]["iqr"][0] > rows[n][a]["iqr"][1]}
                                          for n in rows}})
        out.append({"order": "".join(perm), "steps": steps,
                    "rises": all(s[str(n)]["rises"] for s in steps for n in rows)})
    return out


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    what = sys.argv[1:] or ["check", "time"]
    if "check" in what and not run_checks():
        sys.exit("a lattice build computed a wrong C")
    if "time" in what:
        rows = {n: time_size(n) for n in SIZES}
        found = orders(rows)
        good = [o["order"] for o in found if o["rises"]]
        print(f"orders that rise at every step at both sizes: {good or 'none'}")
        RECORD.write_text(json.dumps({"time": {str(n): r for n, r in rows.items()}, "orders": found,
                                      "env": device().env()}, indent=1) + "\n")
